package simtest

import (
	"strings"
	"sync"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
)

// CTBackup is a container backup on local storage, and CTBackupConf the
// pct.conf inside it, as the restore tests put it (through the
// StorageContent and BackupArchive hooks, built with vzdump.CTArchive).
const (
	CTBackup     = "local:backup/vzdump-lxc-300-2026_12_01-03_00_00.tar.zst"
	CTBackupConf = "#gitlab runner\narch: amd64\ncores: 2\nfeatures: nesting=1\nhostname: runner\nmemory: 2048\n" +
		"mp0: tank:subvol-300-disk-1,backup=0,mp=/srv/builds,size=4G\n" +
		"net0: name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp,type=veth\nostype: debian\n" +
		"rootfs: tank:subvol-300-disk-0,size=8G\nswap: 256\nunprivileged: 1\n" +
		"\n[snap1]\narch: amd64\nhostname: old\n"
)

// FakeFiles stands in for the nodes' file volumes (ISOs, templates,
// snippets) that labctl lists from the real node: what a test puts here is
// what StorageContent lists, and StorageRemove removes from it.
type FakeFiles struct {
	mu    sync.Mutex
	files map[string]int64 // "node/volid" → size
}

// NewFakeFiles holds volids on pve01, 4 KiB each.
func NewFakeFiles(volids ...string) *FakeFiles {
	f := &FakeFiles{files: map[string]int64{}}
	for _, v := range volids {
		f.files["pve01/"+v] = 4096
	}
	return f
}

// Install sets c's StorageContent and StorageRemove hooks to f.
func (f *FakeFiles) Install(c *core.Config) {
	c.StorageContent = func(node string, st core.StorageInfo) ([]core.Volume, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		var out []core.Volume
		for k, size := range f.files {
			n, volid, _ := strings.Cut(k, "/")
			if n != node || !strings.HasPrefix(volid, st.ID+":") {
				continue
			}
			vtype, _, _ := strings.Cut(strings.TrimPrefix(volid, st.ID+":"), "/")
			out = append(out, core.Volume{VolID: volid, Content: vtype, Format: map[string]string{"iso": "iso", "snippets": "snippet", "vztmpl": "tzst"}[vtype], Size: size})
		}
		return out, nil
	}
	c.StorageRemove = func(node string, st core.StorageInfo, volname string) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.files, node+"/"+st.ID+":"+volname)
		return nil
	}
}

// Has tells whether f still holds volid on node.
func (f *FakeFiles) Has(node, volid string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.files[node+"/"+volid]
	return ok
}

package core

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// A guest's configuration is its file in /etc/pve, nodes/<node>/qemu-server/
// <vmid>.conf (or lxc/), in PVE's format (package guestconf). The file is
// the truth: the API parses it on every read, so a config edited on a lab
// node (or being cloned) is what the API shows.

// ---- Where config files live: the node's /etc/pve (ConfigDB) ----

// GuestConfPath is the /etc/pve-relative path of a guest's config.
func GuestConfPath(node, kind string, vmid int) string {
	return fmt.Sprintf("nodes/%s/%s/%d.conf", node, kind, vmid)
}

// ReadEtcPve, writeEtcPve and removeEtcPve are the one place guest code
// touches /etc/pve files: the DB's directory, which the lab mounts as every
// member's /etc/pve (etcpve.go), so a config edited on a node is what the
// API reads next.
func (s *Sim) ReadEtcPve(db *ConfigDB, rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(s.etcPveDir(db.ID), filepath.FromSlash(rel)))
	if err != nil {
		return "", false
	}
	return string(b), true
}

func (s *Sim) WriteEtcPve(db *ConfigDB, rel, content string) {
	if err := writeEtcPveFile(s.etcPveDir(db.ID), rel, []byte(content)); err != nil {
		s.log.AddError(err)
	}
	db.Serial++
}

func (s *Sim) RemoveEtcPve(db *ConfigDB, rel string) {
	if err := os.Remove(filepath.Join(s.etcPveDir(db.ID), filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.AddError(err)
	}
	db.Serial++
}

// VMEntry is one line of pmxcfs's .vmlist: which node holds which guest.
type VMEntry struct {
	VMID int
	Node string
	Kind string // qemu-server or lxc
}

// VMListLocked is the cluster's .vmlist, sorted by VMID (pmxcfs's scan of
// nodes/<node>/{qemu-server,lxc}).
func (s *Sim) VMListLocked(db *ConfigDB) []VMEntry {
	var out []VMEntry
	for _, c := range pmxcfs.ScanVMConfigs(s.etcPveDir(db.ID)) {
		kind := "qemu-server"
		switch c.Type {
		case "lxc":
			kind = "lxc"
		case "openvz":
			continue
		}
		out = append(out, VMEntry{VMID: int(c.VMID), Node: c.Node, Kind: kind})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].VMID < out[j].VMID })
	return out
}

// FindVMLocked returns where vmid lives in db's cluster.
func (s *Sim) FindVMLocked(db *ConfigDB, vmid int) (VMEntry, bool) {
	for _, e := range s.VMListLocked(db) {
		if e.VMID == vmid {
			return e, true
		}
	}
	return VMEntry{}, false
}

// EtcPveWritableLocked is what writing rel into a read-only /etc/pve (no
// quorum, C10) fails with: file_set_contents cannot open its temp file
// (pve-common PVE/File.pm).
func (s *Sim) EtcPveWritableLocked(db *ConfigDB, rel string) error {
	if s.QuorateLocked(db) {
		return nil
	}
	return pvecommon.Die("unable to open file '/etc/pve/%s.tmp.%d' - Permission denied", rel, s.State.NextPID+1)
}

// ---- volumes a config names ----

package labctl

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/vzdump"
)

// Container backups on a lab node: the file behind a backup volume, read
// for the simulator's extractconfig and restore (pvesim.Config
// BackupArchive), and PutCTBackup, which writes one as vzdump would leave
// it in a dir storage's dump/ directory.

// backupArchive reads <path>/dump/<name> of a dir storage on node.
func (l *Lab) backupArchive(node string, st pvesim.StorageInfo, volname string) ([]byte, error) {
	name, ok := strings.CutPrefix(volname, "backup/")
	if !ok || strings.Contains(name, "/") || st.Type != "dir" || underEtcPve(st.Options["path"]) {
		return nil, fmt.Errorf("no backup file for '%s:%s'", st.ID, volname)
	}
	out, err := l.onNode(node, "cat -- "+shq(st.Options["path"]+"/dump/"+name))
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// PutCTBackup puts on node's storage local (/var/lib/vz/dump) a container
// backup of vmid taken at when, holding pctConf as its
// ./etc/vzdump/pct.conf (compressed as a .tar.zst of stored blocks, see
// vzdump.CTArchive), and returns its volume ID:
// local:backup/vzdump-lxc-<vmid>-<YYYY_MM_DD-HH_MM_SS>.tar.zst.
func (l *Lab) PutCTBackup(node string, vmid int, when time.Time, pctConf string) (string, error) {
	n := l.node(node)
	if n == nil {
		return "", fmt.Errorf("the lab has no node %q", node)
	}
	data, err := vzdump.CTArchive(pctConf, "zst")
	if err != nil {
		return "", err
	}
	name := fmt.Sprintf("vzdump-lxc-%d-%s.tar.zst", vmid, when.UTC().Format("2006_01_02-15_04_05"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := n.node.ExecInput(ctx, "umask 022 && mkdir -p /var/lib/vz/dump && cat > "+shq("/var/lib/vz/dump/"+name), bytes.NewReader(data)); err != nil {
		return "", fmt.Errorf("writing %s on %s: %s %v", name, node, strings.TrimSpace(out), err)
	}
	return "local:backup/" + name, nil
}

package labctl

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/aptrepo"
	"github.com/gopve/proxmox/modules-src/lab/node"
	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
	"github.com/gopve/proxmox/modules-src/lab/sshkey"
)

// A node's set-up: its keys, files, disks and the installer's state.

// newNode configures node i: its keys, files and disks.
func (l *Lab) newNode(i int, root string) (*labNode, error) {
	name, addr := NodeName(i), NodeAddr(l.slot, i)
	hostKey, err := sshkey.New("root@" + name)
	if err != nil {
		return nil, err
	}
	files, err := l.nodeFiles(i, name, addr)
	if err != nil {
		return nil, err
	}
	if err := l.seedEtcPve(name, addr, hostKey.Public); err != nil {
		return nil, err
	}
	hide := []string{BaseDir, l.dir}
	n, err := node.New(node.Config{
		Name: name, Domain: l.opts.Domain, Addr: addr, PVE: l.opts.PVE,
		Lower: root, Dir: filepath.Join(l.dir, "nodes", name), Hide: hide,
		HostKey: hostKey.PrivatePEM, HostKeyPub: hostKey.Public,
		EtcPve: l.etcPveMount(name), DropFSTypes: []string{pmxcfs.FSType},
		Files: files,
		Binds: []node.Bind{{Source: l.controlSocket(), Target: "/run/gopve-lab/control.sock"}},
		Disks: node.DefaultDisks(i),
	})
	if err != nil {
		return nil, err
	}
	return &labNode{info: NodeInfo{Name: name, Addr: addr}, hostKey: hostKey, node: n}, nil
}

// installDir is where a node finds the packages it has "from the installer".
const installDir = "/var/cache/gopve-lab/install"

// Tools the CLI stand-ins binary answers as, and where each is installed.
var standIns = map[string]string{
	"pvecm": "/usr/bin/pvecm", "pvesm": "/usr/sbin/pvesm", "pvesh": "/usr/bin/pvesh",
	"zpool": "/usr/sbin/zpool", "zfs": "/usr/sbin/zfs",
	"update-initramfs": "/usr/sbin/update-initramfs", "systemctl": "/usr/local/sbin/systemctl",
	"qm": "/usr/sbin/qm", "pct": "/usr/sbin/pct", "pvesr": "/usr/bin/pvesr", "ha-manager": "/usr/sbin/ha-manager",
}

func (l *Lab) nodeFiles(i int, name, addr string) (map[string]node.File, error) {
	files := map[string]node.File{}
	for p, data := range aptrepo.FreshFiles(l.repo.Release, l.repo.Keyring) {
		files[p] = node.File{Data: data}
	}
	const caPath = "/etc/gopve-lab/apt-ca.pem"
	files[caPath] = node.File{Data: l.apt.CAPEM()}
	files[aptrepo.AptConfPath] = node.File{Data: aptrepo.AptConf("http://"+SlotAddr(l.slot)+":80/", caPath)}
	for _, deb := range l.repo.Installed {
		files[installDir+"/"+filepath.Base(deb)] = node.File{Source: deb}
	}
	nodeJSON, err := l.nodeJSON(name, addr)
	if err != nil {
		return nil, err
	}
	files["/etc/gopve-lab/node.json"] = node.File{Data: nodeJSON, Mode: 0o600}
	if l.opts.Labtools != "" {
		const bin = "/usr/lib/gopve-lab/labtools"
		files[bin] = node.File{Source: l.opts.Labtools, Mode: 0o755}
		for _, p := range standIns {
			files[p] = node.File{Link: bin}
		}
	}
	return files, nil
}

// install finishes a node the way the PVE installer leaves it: the PVE
// packages installed, root's password set, the apt cache refreshed against
// the fresh repository files (the enterprise ones fail with 401, as on a
// node without subscription) and no reboot pending.
func (l *Lab) install(ctx context.Context, n *labNode) error {
	script := fmt.Sprintf(`set -e
export DEBIAN_FRONTEND=noninteractive
dpkg -i %[1]s/*.deb >/dev/null
rm -rf %[1]s
# The kernel the installer booted into is the one it installed.
ls /boot | sed -n 's/^vmlinuz-\(.*-pve\)$/\1/p' | sort -V | tail -n 1 > /var/lib/gopve-lab/running-kernel
apt-get update -q >/var/log/gopve-lab-install-apt.log 2>&1 || true
# The default 'local' storage, as the installer leaves /var/lib/vz.
mkdir -p /var/lib/vz/dump /var/lib/vz/images /var/lib/vz/template/cache /var/lib/vz/template/iso %[2]s
rm -f /run/reboot-required /run/reboot-required.pkgs
`, installDir, map[int]string{9: "/var/lib/vz/import", 8: ""}[l.opts.PVE])
	if res, err := l.Run(ctx, n.info.Name, script, nil); err != nil {
		return fmt.Errorf("node %s: installing PVE packages: %w", n.info.Name, err)
	} else if res.ExitCode != 0 {
		return fmt.Errorf("node %s: installing PVE packages failed (exit %d): %s", n.info.Name, res.ExitCode, res.Stderr)
	}
	// The password goes through stdin: never on a command line or in a log.
	res, err := l.Run(ctx, n.info.Name, "chpasswd", strings.NewReader("root:"+l.creds.Password+"\n"))
	if err != nil {
		return fmt.Errorf("node %s: setting root's password: %w", n.info.Name, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("node %s: setting root's password failed: %s", n.info.Name, res.Stderr)
	}
	return nil
}

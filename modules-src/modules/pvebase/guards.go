package pvebase

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/host/apt"
	"github.com/gopve/proxmox/modules-src/host/modprobe"
	"github.com/gopve/proxmox/modules-src/host/size"
)

// guardTarget refuses, before the first write and in check mode too, a host
// pve_base must not configure: one that is not a Proxmox VE node (a plain
// Debian host, a Proxmox Backup Server sharing the inventory) would get PVE
// repositories and a dist-upgrade from them; a suite other than the node's
// own release points APT at another Debian release, and the dist-upgrade
// that follows leaves the node half upgraded.
func (m *base) guardTarget(ctx context.Context) error {
	have, err := apt.Installed(ctx, m.env.Runner, append([]string{"pve-manager", "proxmox-backup-server"}, m.p.ExtraPackages...))
	if err != nil {
		return fmt.Errorf("checking that this host is a Proxmox VE node: %w", err)
	}
	m.extraInstalled = have
	_, pve := have["pve-manager"]
	_, pbs := have["proxmox-backup-server"]
	switch {
	case pbs && !pve:
		return fmt.Errorf("this host runs Proxmox Backup Server (proxmox-backup-server is installed, pve-manager is not); pve_base configures Proxmox VE nodes only and changed nothing: limit the play to your Proxmox VE hosts")
	case !pve:
		return fmt.Errorf("this host is not a Proxmox VE node (pve-manager is not installed; a plain Debian host?); pve_base configures installed Proxmox VE nodes only and changed nothing: limit the play to your Proxmox VE hosts")
	}
	osr, err := apt.ReadOSRelease(m.env.Root)
	if err != nil && m.p.Suite == "" {
		return fmt.Errorf("suite: %w", err)
	}
	if m.p.Suite != "" && osr.VersionCodename != "" && m.p.Suite != osr.VersionCodename {
		return fmt.Errorf("suite: %s differs from this node's release %s (VERSION_CODENAME in /etc/os-release); repositories of another release would make the dist-upgrade mix two Debian releases; leave suite unset (it defaults to the node's release) — upgrading a node to a new major release is not something pve_base does", m.p.Suite, osr.VersionCodename)
	}
	return m.guardArc()
}

// Bounds ZFS puts on zfs_arc_max (module/zfs/arc.c, arc_tuning_update): a
// value below 64 MiB, not below the physical memory, or not above
// zfs_arc_min (by default 1/32 of the memory) is ignored with only a kernel
// log line, so the cap the task reports as set would never apply.
const arcFloor = 64 << 20

func (m *base) guardArc() error {
	if m.p.ZFSArcMax == "" {
		return nil
	}
	want, err := parseArc(m.p.ZFSArcMax)
	if err != nil {
		return err
	}
	if want < arcFloor {
		return fmt.Errorf("zfs_arc_max: %s is below 64M, the smallest ARC cap ZFS accepts; ZFS would ignore it", size.Format(want))
	}
	mem, ok, err := m.memTotal()
	if err != nil || !ok {
		return err
	}
	if want >= mem {
		return fmt.Errorf("zfs_arc_max: %s is not below this node's memory (%s, MemTotal in /proc/meminfo); ZFS ignores a cap that large", size.Format(want), size.Format(mem))
	}
	floor, from := mem/32, "the default zfs_arc_min, 1/32 of the memory"
	if conf, err := m.env.Root.ReadFile(zfsConf); err == nil && conf.Exists {
		if v, ok := modprobe.Get(string(conf.Content), "zfs", "zfs_arc_min"); ok {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil && n > 0 {
				floor, from = n, "zfs_arc_min in "+zfsConf
			}
		}
	}
	if want <= floor {
		return fmt.Errorf("zfs_arc_max: %s is not above %s (%s); ZFS ignores such a cap: give a larger value or lower zfs_arc_min", size.Format(want), size.Format(floor), from)
	}
	return nil
}

// memTotal reads MemTotal from /proc/meminfo; ok is false when the file is
// missing (a test root).
func (m *base) memTotal() (uint64, bool, error) {
	st, err := m.env.Root.ReadFile("/proc/meminfo")
	if err != nil || !st.Exists {
		return 0, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(st.Content))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				break
			}
			return kb << 10, true, nil
		}
	}
	return 0, false, fmt.Errorf("read /proc/meminfo: no MemTotal line")
}

// warnSignedByList says that signed_by has no effect where the repository
// files are one-line .list files (they carry no Signed-By field here).
func (m *base) warnSignedByList() {
	if m.p.SignedBy != nil && *m.p.SignedBy != "" && m.format == apt.OneLine {
		m.r.Warn(fmt.Sprintf("signed_by is ignored: this node's repository files are one-line .list files (repo_format %s, suite %s), which pve_base writes without Signed-By; set repo_format: deb822 to use it, or drop signed_by", m.p.RepoFormat, m.suite))
	}
}

// Package aptrepo builds and serves the lab's Debian package repositories.
//
// A lab node runs the real apt and dpkg, so the pitfalls of the apt side of a
// PVE upgrade (B1 repository files, B2 stale cache, B3 proxmoxlib.js rewritten
// by an upgrade, B5 new kernel) reproduce only if the repositories behave like
// the real ones: signed suites, an enterprise repository that answers 401
// without a subscription, a no-subscription suite carrying newer versions than
// the ones installed. This package builds those repositories on disk with
// dpkg-deb, apt-ftparchive and gpg, and serves them over HTTP as the hosts the
// nodes' repository files name (deb.debian.org, download.proxmox.com, …),
// acting as the nodes' apt proxy so those files stay byte-identical to a
// fresh install while nothing ever leaves the machine.
package aptrepo

import (
	"fmt"
	"strings"
)

// Release describes the package versions of one PVE major version: what a
// fresh node has installed and what the no-subscription suite offers on top.
type Release struct {
	PVE      int    // 8 or 9
	Codename string // Debian suite the PVE release stands on

	ManagerInstalled, ManagerNew string // pve-manager
	ToolkitInstalled, ToolkitNew string // proxmox-widget-toolkit
	MetaInstalled, MetaNew       string // proxmox-default-kernel
	KernelInstalled, KernelNew   string // kernel ABI names, e.g. 6.14.8-2-pve
	CephDir                      string // enterprise ceph repository directory
	DebianHost                   string // mirror host in the installer's files
}

// ReleaseFor returns the lab's package story for a PVE major version. The
// numbers follow the seed write-up (9.2.2 installed, 9.2.5 available).
func ReleaseFor(pve int) (Release, error) {
	switch pve {
	case 9:
		return Release{PVE: 9, Codename: "trixie",
			ManagerInstalled: "9.2.2", ManagerNew: "9.2.5",
			ToolkitInstalled: "5.0.5", ToolkitNew: "5.0.6",
			MetaInstalled: "2.0.0", MetaNew: "2.0.1",
			KernelInstalled: "6.14.8-2-pve", KernelNew: "6.14.11-1-pve",
			CephDir: "ceph-squid", DebianHost: "deb.debian.org"}, nil
	case 8:
		return Release{PVE: 8, Codename: "bookworm",
			ManagerInstalled: "8.4.1", ManagerNew: "8.4.5",
			ToolkitInstalled: "4.3.11", ToolkitNew: "4.3.13",
			MetaInstalled: "1.1.0", MetaNew: "1.1.1",
			KernelInstalled: "6.8.12-9-pve", KernelNew: "6.8.12-11-pve",
			CephDir: "ceph-quincy", DebianHost: "ftp.debian.org"}, nil
	}
	return Release{}, fmt.Errorf("PVE %d is not simulated: the lab knows PVE 8 (bookworm) and 9 (trixie)", pve)
}

// pkg is one dummy Debian package: a control stanza, files and maintainer scripts.
type pkg struct {
	Name, Version, Depends, Description string
	Files                               map[string]string // absolute path → content
	Modes                               map[string]uint32 // absolute path → mode (default 0644)
	Postinst                            string
}

func (p pkg) filename() string { return p.Name + "_" + p.Version + "_all.deb" }

func (p pkg) control() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Package: %s\nVersion: %s\nArchitecture: all\nMaintainer: gopve lab <lab@gopve.invalid>\n", p.Name, p.Version)
	if p.Depends != "" {
		fmt.Fprintf(&b, "Depends: %s\n", p.Depends)
	}
	fmt.Fprintf(&b, "Section: admin\nPriority: optional\nDescription: %s\n gopve lab stand-in package: same name and version story as the real one, no real content.\n", p.Description)
	return b.String()
}

// kernelABI turns "6.14.8-2-pve" into the package name of that kernel.
func kernelPackage(abi string) string { return "proxmox-kernel-" + abi + "-signed" }

// managerPkg is pve-manager: pveversion prints the line `pveversion` prints on a
// real node, with the kernel the node "booted" (written by the lab at start);
// `pveversion -v` the package list of PVE::API2::APT versions (see
// pveversionVerbose).
func managerPkg(r Release, version string) pkg {
	script := fmt.Sprintf(`#!/bin/sh
# gopve lab stand-in for pveversion (pve-manager %[1]s).
kernel=$(cat /proc/sys/kernel/osrelease)  # uname -r, as pveversion runs it (lab node script.go)
case "$*" in
"") echo "pve-manager/%[1]s/%[2]s (running kernel: $kernel)"; exit 0 ;;
-v|--verbose) ;;
*) echo "ERROR: unknown option '$1'" >&2; echo "USAGE: pveversion [--verbose]" >&2; exit 255 ;;
esac
running="%[1]s/%[2]s"
%[3]s`, version, fakeCommit(version), pveversionVerbose)
	return pkg{Name: "pve-manager", Version: version, Depends: "proxmox-widget-toolkit",
		Description: "Proxmox Virtual Environment Management Tools",
		Files:       map[string]string{"/usr/bin/pveversion": script},
		Modes:       map[string]uint32{"/usr/bin/pveversion": 0o755}}
}

// pveversionVerbose prints what `pveversion -v` prints (pve-manager
// bin/pveversion over PVE::API2::APT versions): proxmox-ve and pve-manager
// first, the installed kernels newest first, then a fixed list of packages
// by name. An installed package shows its version, one with only its
// configuration left "residual config", one apt knows but has not installed
// "not correctly installed" — except optional ones (microcode, ceph,
// zfsutils-linux…), which are left out like packages apt does not know.
const pveversionVerbose = `state() { dpkg-query -W -f='${db:Status-Status} ${Version}' "$1" 2>/dev/null; }
known=$(apt-cache pkgnames 2>/dev/null)
show() { # name optional suffix
	s=$(state "$1")
	case "$s" in
	"installed "*) v=${s#installed } ;;
	"config-files "*) v="residual config" ;;
	*)
		[ "$2" = opt ] && return 0
		printf '%s\n' "$known" | grep -qx -- "$1" || return 0
		v="not correctly installed" ;;
	esac
	echo "$1: $v$3"
}
show proxmox-ve req " (running kernel: $kernel)"
show pve-manager req " (running version: $running)"
dpkg-query -W -f='${Version} ${Package} ${db:Status-Status}\n' 'proxmox-kernel-*' 'pve-kernel-*' 2>/dev/null |
	awk '$3 == "installed" {print $1, $2}' | sort -V -r | while read -r v p; do echo "$p: $v"; done
for p in amd64-microcode ceph criu dnsmasq frr-pythontools gfs2-utils ifupdown ifupdown2 intel-microcode \
	ksm-control-daemon ksmtuned libpve-apiclient-perl libpve-network-perl openvswitch-switch \
	proxmox-backup-file-restore proxmox-enterprise-support-keyring proxmox-firewall proxmox-kernel-helper \
	proxmox-offline-mirror-helper pve-esxi-import-tools pve-zsync zfsutils-linux; do echo "$p opt"; done >/tmp/.pveversion.$$
for p in ceph-fuse corosync libjs-extjs libknet1 libproxmox-acme-perl libproxmox-backup-qemu0 libproxmox-rs-perl \
	libpve-access-control libpve-cluster-api-perl libpve-cluster-perl libpve-common-perl libpve-guest-common-perl \
	libpve-http-server-perl libpve-notify-perl libpve-rs-perl libpve-storage-perl libqb0 libspice-server1 lvm2 \
	lxc-pve lxcfs novnc-pve proxmox-backup-client proxmox-backup-restore-image proxmox-mail-forward \
	proxmox-mini-journalreader proxmox-widget-toolkit pve-cluster pve-container pve-docs pve-edk2-firmware \
	pve-firewall pve-firmware pve-ha-manager pve-i18n pve-qemu-kvm pve-xtermjs qemu-server smartmontools \
	spiceterm swtpm vncterm; do echo "$p req"; done >>/tmp/.pveversion.$$
LC_ALL=C sort /tmp/.pveversion.$$ | while read -r p kind; do show "$p" "$kind"; done
rm -f /tmp/.pveversion.$$
`

// fakeCommit is a stable 16-hex-digit stand-in for the git hash in pveversion.
func fakeCommit(version string) string {
	var h uint64 = 1469598103934665603
	for _, c := range version {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return fmt.Sprintf("%016x", h)
}

func toolkitPkg(version string) pkg {
	return pkg{Name: "proxmox-widget-toolkit", Version: version,
		Description: "Core Widgets and ExtJS Helper Classes for Proxmox Web UIs",
		Files:       map[string]string{ProxmoxLibJS: ProxmoxLib(version)}}
}

// kernelPkgs returns the kernel image package and the meta package that pulls
// it in. Installing a kernel marks the node as needing a reboot (B5) the way
// Debian does: /run/reboot-required and /run/reboot-required.pkgs.
func kernelPkgs(metaVersion, abi string) []pkg {
	name := kernelPackage(abi)
	return []pkg{
		{Name: name, Version: strings.TrimSuffix(abi, "-pve"),
			Description: "Proxmox Kernel Image (signed)",
			Files: map[string]string{
				"/boot/vmlinuz-" + abi:                 "gopve lab stand-in kernel image " + abi + "\n",
				"/lib/modules/" + abi + "/modules.dep": "",
			},
			Postinst: fmt.Sprintf(`#!/bin/sh
set -e
if [ "$1" = configure ]; then
  touch /run/reboot-required
  echo %s >> /run/reboot-required.pkgs
fi
`, name)},
		{Name: "proxmox-default-kernel", Version: metaVersion, Depends: name,
			Description: "Default Proxmox Kernel Image"},
	}
}

// debianExtras are tools a user's base role typically installs (the seed's
// pve_base installs these). The lab's Debian suites are otherwise empty, so
// they exist as tiny stand-ins with a version lower than any real one: a node
// that already has the real package keeps it.
var debianExtras = []string{"vim", "htop", "tmux", "git", "lsb-release"}

// extraVersion is a stand-in's version. Real apt enforces the real Breaks:
// trixie's libtinfo6 Breaks tmux (< 3.3a-4), so on trixie (whose minimal
// root has no tmux to shadow) tmux's stand-in sits just above that.
func extraVersion(codename, name string) string {
	if codename == "trixie" && name == "tmux" {
		return "3.3a-4+gopvelab1"
	}
	return "0~gopvelab1"
}

func debianExtraPkg(codename, name string) pkg {
	return pkg{Name: name, Version: extraVersion(codename, name), Description: name + " (gopve lab stand-in)",
		Files: map[string]string{"/usr/share/doc/" + name + "/gopve-lab-stand-in": "This is not the real " + name + ".\n"}}
}

// noSubscriptionPkgs is what the no-subscription suite offers: both the
// installed and the newer versions, as the real pool does.
func noSubscriptionPkgs(r Release) []pkg {
	ps := []pkg{
		managerPkg(r, r.ManagerInstalled), managerPkg(r, r.ManagerNew),
		toolkitPkg(r.ToolkitInstalled), toolkitPkg(r.ToolkitNew),
	}
	ps = append(ps, kernelPkgs(r.MetaInstalled, r.KernelInstalled)...)
	ps = append(ps, kernelPkgs(r.MetaNew, r.KernelNew)...)
	return ps
}

// installedPkgs is what a fresh node has: installed with dpkg -i at lab
// creation, since on a real node they came from the enterprise repository the
// node cannot reach.
func installedPkgs(r Release) []pkg {
	ps := []pkg{managerPkg(r, r.ManagerInstalled), toolkitPkg(r.ToolkitInstalled)}
	return append(ps, kernelPkgs(r.MetaInstalled, r.KernelInstalled)...)
}

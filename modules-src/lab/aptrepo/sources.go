package aptrepo

import "fmt"

// Where a fresh PVE keeps the keys that verify its repositories. The lab puts
// its own archive key at these paths on each node, so the repository files
// can name them exactly as the installer does.
const (
	ProxmoxKeyring9 = "/usr/share/keyrings/proxmox-archive-keyring.gpg"
	DebianKeyring9  = "/usr/share/keyrings/debian-archive-keyring.gpg"
	ProxmoxKeyring8 = "/etc/apt/trusted.gpg.d/proxmox-release-bookworm.gpg"
)

// FreshFiles returns the apt repository files of a freshly installed node
// (B1): deb822 .sources on PVE 9, one-line .list files on PVE 8, with the
// enterprise and ceph-enterprise repositories enabled. Paths are absolute
// inside the node; keyring contents are the lab's archive key.
func FreshFiles(r Release, keyring []byte) map[string][]byte {
	files := map[string][]byte{}
	switch r.PVE {
	case 9:
		files["/etc/apt/sources.list.d/debian.sources"] = []byte(fmt.Sprintf(`Types: deb
URIs: http://deb.debian.org/debian/
Suites: %[1]s %[1]s-updates
Components: main contrib non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.debian.org/debian-security/
Suites: %[1]s-security
Components: main contrib non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`, r.Codename))
		files["/etc/apt/sources.list.d/pve-enterprise.sources"] = []byte(fmt.Sprintf(`Types: deb
URIs: https://enterprise.proxmox.com/debian/pve
Suites: %s
Components: pve-enterprise
Signed-By: /usr/share/keyrings/proxmox-archive-keyring.gpg
`, r.Codename))
		files["/etc/apt/sources.list.d/ceph.sources"] = []byte(fmt.Sprintf(`Types: deb
URIs: https://enterprise.proxmox.com/debian/%s
Suites: %s
Components: enterprise
Signed-By: /usr/share/keyrings/proxmox-archive-keyring.gpg
`, r.CephDir, r.Codename))
		files[ProxmoxKeyring9] = keyring
		files[DebianKeyring9] = keyring
	case 8:
		files["/etc/apt/sources.list"] = []byte(fmt.Sprintf(`deb http://%[2]s/debian %[1]s main contrib
deb http://%[2]s/debian %[1]s-updates main contrib

# security updates
deb http://security.debian.org %[1]s-security main contrib
`, r.Codename, r.DebianHost))
		files["/etc/apt/sources.list.d/pve-enterprise.list"] = []byte(fmt.Sprintf(
			"deb https://enterprise.proxmox.com/debian/pve %s pve-enterprise\n", r.Codename))
		files["/etc/apt/sources.list.d/ceph.list"] = []byte(fmt.Sprintf(
			"deb https://enterprise.proxmox.com/debian/%s %s enterprise\n", r.CephDir, r.Codename))
		files[ProxmoxKeyring8] = keyring
	}
	return files
}

// AptConfPath is the node's apt configuration that routes every repository
// host through the lab's server.
const AptConfPath = "/etc/apt/apt.conf.d/00gopve-lab"

// AptConf makes apt on a node use the lab's server as its HTTP proxy (and as
// the CONNECT tunnel for https), trusting the lab's CA for https. This is what
// lets the repository files keep the real host names: the server answers for
// those hosts and refuses every other one.
func AptConf(proxyURL, caPath string) []byte {
	return []byte(fmt.Sprintf(`// gopve lab: every repository host is answered by the lab's server at
// %[1]s; nothing leaves the machine.
Acquire::http::Proxy "%[1]s";
Acquire::https::Proxy "%[1]s";
Acquire::https::CAInfo "%[2]s";
`, proxyURL, caPath))
}

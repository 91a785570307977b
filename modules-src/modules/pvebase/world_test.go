package pvebase

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/apt"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

// world is a fake PVE node: a temporary root with the files a fresh install
// has, and a fake APT/dpkg/systemctl that behave like the real ones where
// the module depends on it: `apt-get update` reads the sources APT is pointed
// at (real or sandbox), a no-subscription repository offers newer versions,
// the enterprise repository answers 401, and upgrading
// proxmox-widget-toolkit rewrites proxmoxlib.js (B3).
type world struct {
	t         *testing.T
	root      host.Root
	fake      *hosttest.Runner
	installed map[string]string
	lists     map[string]map[string]string // lists dir → candidates
	held      map[string]bool              // on hold (apt-mark showhold): kept back by dist-upgrade
	keptBack  map[string]bool              // kept back by dist-upgrade for another reason (a new dependency)
	running   string                       // the kernel /proc/sys/kernel/osrelease names
	aptEnvs   [][]string                   // the environment of every apt-get call
	restarts  int
	initramfs int
	initFail  bool
	// pveproxy: when it last started (an hour before the test, like a
	// node booted earlier), and whether its restarts fail
	proxyStart   time.Time
	proxyDown    bool
	restartFails bool
	// afterUpgrade runs at the end of every real dist-upgrade
	afterUpgrade func()
	downloads    int // apt-get --download-only runs (dist-upgrade, install)
}

const nagJS = `Ext.define('Proxmox.Utils', {
    checked_command: function(orig_cmd) {
	Proxmox.Utils.API2Request({
	    success: function(response, opts) {
		let res = response.result;
		if (res === null || res === undefined || !res || res
		    .data.status.toLowerCase() !== 'active') {
		    Ext.Msg.show({
			title: gettext('No valid subscription'),
			icon: Ext.Msg.WARNING,
		    });
		} else {
		    orig_cmd();
		}
	    },
	});
    },
});
`

var debianVersions = map[string]string{"vim": "2:9.1.1230-2", "htop": "3.4.1-5", "pve-manager": "9.2.2", "proxmox-widget-toolkit": "5.0.2"}
var noSubVersions = map[string]string{"pve-manager": "9.2.5", "proxmox-widget-toolkit": "5.0.5"}

func write(t *testing.T, root host.Root, p, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(root.Path(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root.Path(p), []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, root host.Root, p string) string {
	t.Helper()
	b, err := os.ReadFile(root.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newWorld builds a fresh node of PVE major version 8 or 9 (B1 files).
func newWorld(t *testing.T, pve int) *world {
	w := &world{t: t, root: host.Root(t.TempDir()), fake: hosttest.New(),
		installed: map[string]string{"pve-manager": "9.2.2", "proxmox-widget-toolkit": "5.0.2"},
		lists:     map[string]map[string]string{}, held: map[string]bool{}, keptBack: map[string]bool{}, running: "6.14.8-2-pve"}
	r := w.root
	if pve == 9 {
		write(t, r, "/etc/os-release", "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nID=debian\nVERSION_ID=\"13\"\nVERSION_CODENAME=trixie\n", 0o644)
		write(t, r, "/etc/apt/sources.list.d/debian.sources", "Types: deb\nURIs: http://deb.debian.org/debian/\nSuites: trixie trixie-updates\nComponents: main contrib non-free-firmware\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n", 0o644)
		write(t, r, "/etc/apt/sources.list.d/pve-enterprise.sources", "Types: deb\nURIs: https://enterprise.proxmox.com/debian/pve\nSuites: trixie\nComponents: pve-enterprise\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n", 0o644)
		write(t, r, "/etc/apt/sources.list.d/ceph.sources", "Types: deb\nURIs: https://enterprise.proxmox.com/debian/ceph-squid\nSuites: trixie\nComponents: enterprise\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n", 0o644)
	} else {
		write(t, r, "/etc/os-release", "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\n", 0o644)
		write(t, r, "/etc/apt/sources.list", "deb http://ftp.debian.org/debian bookworm main contrib\n\ndeb http://ftp.debian.org/debian bookworm-updates main contrib\n\n# security updates\ndeb http://security.debian.org bookworm-security main contrib\n", 0o644)
		write(t, r, "/etc/apt/sources.list.d/pve-enterprise.list", "deb https://enterprise.proxmox.com/debian/pve bookworm pve-enterprise\n", 0o644)
		write(t, r, "/etc/apt/sources.list.d/ceph.list", "deb https://enterprise.proxmox.com/debian/ceph-quincy bookworm enterprise\n", 0o644)
	}
	write(t, r, "/etc/modprobe.d/zfs.conf", "options zfs zfs_arc_max=3353346048\n", 0o644)
	write(t, r, "/sys/module/zfs/parameters/zfs_arc_max", "3353346048\n", 0o644)
	write(t, r, proxmoxlib, nagJS, 0o644)
	w.fake.OnFunc("apt-get *", func(c host.Command) hosttest.Reply {
		w.aptEnvs = append(w.aptEnvs, c.Env)
		return w.aptGet(c)
	})
	w.fake.OnFunc("apt-mark * showhold", func(host.Command) hosttest.Reply {
		var out strings.Builder
		for _, n := range slices.Sorted(maps.Keys(w.held)) {
			if w.held[n] {
				out.WriteString(n + "\n")
			}
		}
		return hosttest.Reply{Stdout: out.String()}
	})
	write(t, r, "/proc/sys/kernel/osrelease", w.running+"\n", 0o444)
	write(t, r, "/boot/vmlinuz-6.14.8-2-pve", "", 0o644)
	write(t, r, "/boot/vmlinuz-6.1.0-40-amd64", "", 0o644) // a Debian kernel left from the installation
	w.fake.OnFunc("dpkg-query *", w.dpkgQuery)
	w.proxyStart = time.Now().Add(-time.Hour)
	w.fake.OnFunc("systemctl restart pveproxy.service", func(host.Command) hosttest.Reply {
		if w.restartFails {
			w.proxyDown = true
			return hosttest.Reply{Exit: 1, Stderr: "Job for pveproxy.service failed because the control process exited with error code."}
		}
		w.restarts++
		w.proxyStart, w.proxyDown = time.Now(), false
		return hosttest.Reply{}
	})
	w.fake.OnFunc("systemctl show -p ActiveState,ActiveEnterTimestamp pveproxy.service", func(cmd host.Command) hosttest.Reply {
		if w.proxyDown {
			return hosttest.Reply{Stdout: "ActiveState=failed\nActiveEnterTimestamp=\n"}
		}
		// systemd's format, second resolution, in the zone TZ names
		return hosttest.Reply{Stdout: "ActiveState=active\nActiveEnterTimestamp=" + w.proxyStart.UTC().Format("Mon 2006-01-02 15:04:05") + " UTC\n"}
	})
	w.fake.On("systemctl is-active pveproxy.service", hosttest.Reply{Stdout: "active\n"})
	w.fake.OnFunc("update-initramfs -u -k all", func(host.Command) hosttest.Reply {
		if w.initFail {
			return hosttest.Reply{Exit: 1, Stderr: "update-initramfs: failed for /boot/initrd.img-7.0.2-6-pve"}
		}
		w.initramfs++
		return hosttest.Reply{}
	})
	return w
}

// aptGet dispatches apt-get calls, honouring the sandbox -o options.
func (w *world) aptGet(cmd host.Command) hosttest.Reply {
	sourceparts, lists := w.root.Path(apt.SourcesDir), "real"
	var rest []string
	for i := 0; i < len(cmd.Args); i++ {
		a := cmd.Args[i]
		if a == "-o" && i+1 < len(cmd.Args) {
			k, v, _ := strings.Cut(cmd.Args[i+1], "=")
			switch k {
			case "Dir::Etc::sourceparts":
				sourceparts = v
			case "Dir::State::Lists":
				lists = v
			}
			i++
			continue
		}
		if a == "-c" { // the sandbox's apt.conf
			i++
			continue
		}
		if a == "-y" || a == "-q" {
			continue
		}
		rest = append(rest, a)
	}
	avail := w.lists[lists]
	switch {
	case len(rest) == 1 && rest[0] == "update":
		cands := map[string]string{}
		for k, v := range debianVersions {
			cands[k] = v
		}
		ents, _ := os.ReadDir(sourceparts)
		for _, e := range ents {
			format, ok := apt.FormatOf(e.Name())
			if !ok {
				continue
			}
			b, _ := os.ReadFile(filepath.Join(sourceparts, e.Name()))
			f, err := apt.ParseFile(e.Name(), format, b)
			if err != nil {
				return hosttest.Reply{Exit: 100, Stderr: "E: Malformed entry in " + e.Name()}
			}
			for _, en := range f.Entries() {
				if !en.Enabled {
					continue
				}
				if en.HasURI(defPVEEnterprise) {
					return hosttest.Reply{Exit: 100, Stdout: "Err:2 https://enterprise.proxmox.com/debian/pve trixie InRelease\n  401  Unauthorized [IP: 1.2.3.4 443]\n",
						Stderr: "E: Failed to fetch https://enterprise.proxmox.com/debian/pve/dists/trixie/InRelease  401  Unauthorized [IP: 1.2.3.4 443]\n"}
				}
				if en.HasURI(defPVENoSubscription) {
					for k, v := range noSubVersions {
						cands[k] = v
					}
				}
			}
		}
		w.lists[lists] = cands
		return hosttest.Reply{Stdout: "Reading package lists...\n"}
	case len(rest) >= 2 && rest[0] == "-s":
		if avail == nil {
			avail = debianVersions
		}
		var out strings.Builder
		out.WriteString("NOTE: This is only a simulation!\n")
		switch rest[1] {
		case "dist-upgrade":
			for _, n := range slices.Sorted(maps.Keys(w.installed)) {
				if c := avail[n]; c != "" && c != w.installed[n] {
					if w.held[n] || w.keptBack[n] {
						fmt.Fprintf(&out, "The following packages have been kept back:\n  %s\n", n)
						continue
					}
					fmt.Fprintf(&out, "Inst %s [%s] (%s Proxmox:9.0/pve-no-subscription [all])\n", n, w.installed[n], c)
				}
			}
		case "install":
			for _, n := range rest[2:] {
				c := avail[n]
				if c == "" {
					return hosttest.Reply{Exit: 100, Stderr: "E: Unable to locate package " + n}
				}
				if w.installed[n] != c {
					fmt.Fprintf(&out, "Inst %s (%s Debian:13.1/stable [amd64])\n", n, c)
				}
			}
		}
		return hosttest.Reply{Stdout: out.String()}
	case len(rest) >= 2 && rest[len(rest)-2] == "--download-only" && rest[len(rest)-1] == "dist-upgrade":
		w.downloads++
		return hosttest.Reply{}
	case len(rest) >= 1 && rest[len(rest)-1] == "dist-upgrade":
		for n, v := range w.installed {
			if c := w.lists["real"][n]; c != "" && c != v && !w.held[n] && !w.keptBack[n] {
				w.installed[n] = c
				if n == toolkitPkg {
					write(w.t, w.root, proxmoxlib, nagJS, 0o644) // B3: the upgrade brings the notice back
				}
			}
		}
		if w.afterUpgrade != nil {
			w.afterUpgrade()
		}
		return hosttest.Reply{}
	case slices.Contains(rest, "--download-only") && slices.Contains(rest, "install"):
		w.downloads++
		return hosttest.Reply{}
	case len(rest) >= 2 && slices.Contains(rest, "install"):
		for _, n := range rest[slices.Index(rest, "install")+1:] {
			w.installed[n] = w.lists["real"][n]
		}
		return hosttest.Reply{}
	}
	return hosttest.Reply{Exit: 64, Stderr: "world: unsupported apt-get call " + cmd.String()}
}

func (w *world) dpkgQuery(cmd host.Command) hosttest.Reply {
	var out strings.Builder
	exit := 0
	for _, n := range cmd.Args[3:] {
		if v, ok := w.installed[n]; ok {
			status := "ii " // Status-Abbrev: held packages read "hi "
			if w.held[n] {
				status = "hi "
			}
			fmt.Fprintf(&out, "%s\t%s\t%s\n", n, status, v)
		} else {
			exit = 1
		}
	}
	return hosttest.Reply{Stdout: out.String(), Exit: exit}
}

// run executes pve_base against the world.
func (w *world) run(args map[string]any, check bool) map[string]any {
	w.t.Helper()
	m := New(func(*ansible.Run) Env {
		return Env{Root: w.root, Runner: w.fake, Now: func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }}
	})
	if args == nil {
		args = map[string]any{}
	}
	inv := &ansible.Invocation{Params: args, CheckMode: check, Diff: true}
	return ansible.Execute(context.Background(), &m, inv, func(string) (string, bool) { return "", false }, io.Discard)
}

// snapshot records every file under the root (content and mode), to prove
// check mode writes nothing.
func (w *world) snapshot() map[string]string {
	out := map[string]string{}
	filepath.WalkDir(string(w.root), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, _ := d.Info()
		b, _ := os.ReadFile(p)
		out[p] = fmt.Sprintf("%o:%s", info.Mode(), b)
		return nil
	})
	return out
}

func changes(res map[string]any) []string {
	var out []string
	if l, ok := res["changes"].([]any); ok {
		for _, c := range l {
			out = append(out, c.(string))
		}
	}
	sort.Strings(out)
	return out
}

package pvebase

// The edges a careful user and a hostile input found (issue 7): held
// packages, proxies, values that would inject fields into APT files, a
// kernel installed but not running, contradicting options, and hosts
// pve_base must not touch.

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func warnings(res map[string]any) string {
	var out []string
	for _, w := range res["warnings"].([]any) {
		out = append(out, w.(string))
	}
	return strings.Join(out, "\n")
}

// Held packages are neither planned nor verified as upgradable: check mode
// predicts no phantom dist-upgrade, the real run does not fail on them, and
// `held` plus a warning name them (B2's proof ignores what an admin held).
func TestHeldPackages(t *testing.T) {
	w := newWorld(t, 9)
	w.held["pve-manager"] = true
	args := map[string]any{"remove_subscription_notice": false}
	check := w.run(args, true)
	if failed(check) {
		t.Fatal(check["msg"])
	}
	want := []string{"add pve-no-subscription in /etc/apt/sources.list.d/pve-no-subscription.sources",
		"disable ceph-enterprise in /etc/apt/sources.list.d/ceph.sources",
		"disable pve-enterprise in /etc/apt/sources.list.d/pve-enterprise.sources",
		"dist-upgrade proxmox-widget-toolkit 5.0.2 → 5.0.5"}
	if got := changes(check); !reflect.DeepEqual(got, want) {
		t.Errorf("check mode changes:\n got %q\nwant %q", got, want)
	}
	real := w.run(args, false)
	if failed(real) {
		t.Fatalf("real run failed on a held package: %v", real["msg"])
	}
	if !reflect.DeepEqual(changes(real), changes(check)) {
		t.Errorf("real %q != predicted %q", changes(real), changes(check))
	}
	if !reflect.DeepEqual(real["held"], []any{"pve-manager"}) || !strings.Contains(warnings(real), "held packages are not upgraded: pve-manager") {
		t.Errorf("held = %v, warnings = %q", real["held"], warnings(real))
	}
	if w.installed["pve-manager"] != "9.2.2" {
		t.Errorf("a held package was upgraded: %v", w.installed)
	}
	// everything upgradable is held: no dist-upgrade at all, in check mode
	// and in the real run
	w.held[toolkitPkg] = true
	w.installed[toolkitPkg] = "5.0.2"
	for _, checkMode := range []bool{true, false} {
		res := w.run(args, checkMode)
		if failed(res) || res["changed"] != false {
			t.Errorf("check=%v with every upgrade held: %v %q", checkMode, res["msg"], changes(res))
		}
	}
}

// Proxies given with `environment:` (any case) reach every apt-get call,
// the sandboxed update of check mode included.
func TestProxyReachesAptGet(t *testing.T) {
	t.Setenv("http_proxy", "http://proxy.lab:3128")
	t.Setenv("HTTPS_PROXY", "http://proxy.lab:3128")
	t.Setenv("NO_PROXY", "localhost")
	w := newWorld(t, 9)
	for _, check := range []bool{true, false} {
		if res := w.run(map[string]any{"extra_packages": []any{"vim"}}, check); failed(res) {
			t.Fatal(res["msg"])
		}
	}
	if len(w.aptEnvs) < 4 {
		t.Fatalf("only %d apt-get calls", len(w.aptEnvs))
	}
	for i, env := range w.aptEnvs {
		for _, want := range []string{"http_proxy=http://proxy.lab:3128", "HTTPS_PROXY=http://proxy.lab:3128", "NO_PROXY=localhost"} {
			if !slices.Contains(env, want) {
				t.Errorf("apt-get call %d lacks %s: %q", i, want, env)
			}
		}
	}
}

// Values written into APT files cannot add fields or options: each is
// refused naming its option, before any command runs.
func TestAPTValuesCannotInject(t *testing.T) {
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"repository_urls": map[string]any{"pve_no_subscription": "http://mirror.example/pve\nTrusted: yes"}}, "repository_urls.pve_no_subscription"},
		{map[string]any{"repository_urls": map[string]any{"pve_no_subscription": "[trusted=yes] http://mirror.example/pve"}}, "repository_urls.pve_no_subscription"},
		{map[string]any{"repository_urls": map[string]any{"ceph_no_subscription": "http://m.example/ceph-{ceph_release} trusted=yes"}}, "repository_urls.ceph_no_subscription"},
		{map[string]any{"repository_urls": map[string]any{"pve_enterprise": "ftp://m.example/pve"}}, "repository_urls.pve_enterprise"},
		{map[string]any{"suite": "trixie\nTrusted: yes"}, "suite:"},
		{map[string]any{"suite": "trixie main"}, "suite:"},
		{map[string]any{"signed_by": "/usr/share/keyrings/k.gpg\nTrusted: yes"}, "signed_by:"},
		{map[string]any{"signed_by": "relative.gpg"}, "signed_by:"},
		{map[string]any{"ceph_release": "squid\nTrusted: yes"}, "ceph_release:"},
		{map[string]any{"extra_packages": []any{"-oAPT::Get::AllowUnauthenticated=true"}}, "extra_packages:"},
	}
	for _, c := range cases {
		w := newWorld(t, 9)
		before := w.snapshot()
		for _, check := range []bool{true, false} {
			res := w.run(c.args, check)
			if msg, _ := res["msg"].(string); !failed(res) || !strings.HasPrefix(msg, c.want) {
				t.Errorf("%v check=%v: msg = %q, want a failure naming %s", c.args, check, msg, c.want)
			}
		}
		if len(w.fake.Calls()) != 0 || !reflect.DeepEqual(before, w.snapshot()) {
			t.Errorf("%v: refused input still ran %q", c.args, w.fake.Calls())
		}
	}
	// a mirror that is a plain URL is fine
	w := newWorld(t, 9)
	noSub := "http://mirror.example/proxmox/pve"
	res := w.run(map[string]any{"upgrade": "none", "repository_urls": map[string]any{"pve_no_subscription": noSub}}, true)
	if failed(res) {
		t.Errorf("a mirror URL refused: %v", res["msg"])
	}
}

// B5: a kernel installed earlier (this run installs nothing) but not
// running still means a reboot is pending; a Debian kernel of another
// flavour left in /boot does not.
func TestRebootRunningKernelOlder(t *testing.T) {
	w := newWorld(t, 9)
	write(t, w.root, "/boot/vmlinuz-6.16.1-1-amd64", "", 0o644)
	args := map[string]any{"upgrade": "none", "remove_subscription_notice": false}
	if res := w.run(args, false); failed(res) || res["reboot_required"] != false {
		t.Fatalf("running the newest -pve kernel: reboot_required=%v %v %v", res["reboot_required"], res["reboot_reasons"], res["msg"])
	}
	write(t, w.root, "/boot/vmlinuz-6.14.11-1-pve", "", 0o644)
	for _, check := range []bool{true, false} {
		res := w.run(args, check)
		reasons, _ := res["reboot_reasons"].([]any)
		if failed(res) || res["reboot_required"] != true || !slices.Contains(reasons, any("running kernel 6.14.8-2-pve, newest installed kernel 6.14.11-1-pve")) {
			t.Errorf("check=%v: reboot_required=%v reasons=%q", check, res["reboot_required"], reasons)
		}
	}
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{{"6.14.11-1-pve", "6.14.8-2-pve", 1}, {"6.8.12-4-pve", "6.14.8-2-pve", -1}, {"6.8.12-4-pve", "6.8.12-4-pve", 0}, {"6.8.12-10-pve", "6.8.12-9-pve", 1}} {
		if got := compareVersions(c.a, c.b); got != c.want {
			t.Errorf("compareVersions(%s, %s) = %d", c.a, c.b, got)
		}
	}
}

// Contradicting options and ARC caps ZFS would ignore are refused naming
// the options; signed_by where it cannot apply is a warning.
func TestContradictionsRefused(t *testing.T) {
	cases := []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"remove_subscription_notice": false, "subscription_notice_hook": true}, []string{"subscription_notice_hook", "remove_subscription_notice"}},
		{map[string]any{"zfs_arc_live": true}, []string{"zfs_arc_live", "zfs_arc_max"}},
		{map[string]any{"zfs_arc_max": "16G"}, []string{"zfs_arc_max: 16G is not below this node's memory (8G"}},
		{map[string]any{"zfs_arc_max": "32M"}, []string{"zfs_arc_max: 32M is below 64M"}},
		{map[string]any{"zfs_arc_max": "128M"}, []string{"zfs_arc_max: 128M is not above 256M (the default zfs_arc_min"}},
	}
	for _, c := range cases {
		w := newWorld(t, 9)
		write(t, w.root, "/proc/meminfo", "MemTotal:        8388608 kB\nMemFree:         1000000 kB\n", 0o444)
		before := w.snapshot()
		for _, check := range []bool{true, false} {
			res := w.run(c.args, check)
			msg, _ := res["msg"].(string)
			for _, want := range c.want {
				if !failed(res) || !strings.Contains(msg, want) {
					t.Errorf("%v check=%v: msg = %q, want %q", c.args, check, msg, want)
				}
			}
		}
		if !reflect.DeepEqual(before, w.snapshot()) || w.fake.Ran("apt-get *") {
			t.Errorf("%v: refused input still acted: %q", c.args, w.fake.Calls())
		}
	}
	// zfs_arc_min set in zfs.conf raises the floor
	w := newWorld(t, 9)
	write(t, w.root, "/proc/meminfo", "MemTotal:        8388608 kB\n", 0o444)
	write(t, w.root, zfsConf, "options zfs zfs_arc_min=1073741824 zfs_arc_max=3353346048\n", 0o644)
	res := w.run(map[string]any{"upgrade": "none", "zfs_arc_max": "1G"}, true)
	if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, "zfs_arc_min in /etc/modprobe.d/zfs.conf") {
		t.Errorf("ARC cap at zfs_arc_min: %q", msg)
	}
	// signed_by on a node whose files are .list: said, not silently ignored
	w = newWorld(t, 8)
	res = w.run(map[string]any{"upgrade": "none", "remove_subscription_notice": false, "signed_by": "/usr/share/keyrings/proxmox-archive-keyring.gpg"}, true)
	if failed(res) || !strings.Contains(warnings(res), "signed_by is ignored") {
		t.Errorf("signed_by with .list files: %v warnings=%v", res["msg"], res["warnings"])
	}
}

// Target guards: another release's suite, a plain Debian host and a Proxmox
// Backup Server are refused before any write, in check mode too.
func TestTargetGuards(t *testing.T) {
	cases := []struct {
		name  string
		setup func(w *world)
		args  map[string]any
		want  string
	}{
		{"suite of another release", func(*world) {}, map[string]any{"suite": "bookworm"}, "suite: bookworm differs from this node's release trixie"},
		{"plain Debian", func(w *world) { delete(w.installed, "pve-manager") }, nil, "not a Proxmox VE node (pve-manager is not installed"},
		{"Proxmox Backup Server", func(w *world) {
			delete(w.installed, "pve-manager")
			w.installed["proxmox-backup-server"] = "4.0.14"
		}, nil, "this host runs Proxmox Backup Server"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 9)
			c.setup(w)
			before := w.snapshot()
			for _, check := range []bool{true, false} {
				res := w.run(c.args, check)
				if msg, _ := res["msg"].(string); !failed(res) || !strings.Contains(msg, c.want) || res["changed"] != false {
					t.Errorf("check=%v: changed=%v msg = %q, want %q", check, res["changed"], msg, c.want)
				}
			}
			if !reflect.DeepEqual(before, w.snapshot()) || w.fake.Ran("apt-get *") {
				t.Errorf("refused host still acted: %q", w.fake.Calls())
			}
		})
	}
	// the node's own suite, given explicitly, is fine
	w := newWorld(t, 9)
	if res := w.run(map[string]any{"suite": "trixie", "upgrade": "none"}, true); failed(res) {
		t.Errorf("suite trixie on trixie: %v", res["msg"])
	}
}

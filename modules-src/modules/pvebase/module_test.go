package pvebase

import (
	"reflect"
	"strings"
	"testing"
)

func failed(res map[string]any) bool { f, _ := res["failed"].(bool); return f }

// TestFreshNode: check mode predicts, writes nothing; the real run changes
// exactly what was predicted; the second run changes nothing (B1, B2, B3).
func TestFreshNode(t *testing.T) {
	for _, pve := range []int{8, 9} {
		t.Run(map[int]string{8: "PVE8", 9: "PVE9"}[pve], func(t *testing.T) {
			w := newWorld(t, pve)
			args := func() map[string]any {
				return map[string]any{"extra_packages": []any{"vim", "htop"}, "zfs_arc_max": "4G"}
			}
			before := w.snapshot()
			check := w.run(args(), true)
			if failed(check) {
				t.Fatalf("check mode failed: %v", check["msg"])
			}
			if !reflect.DeepEqual(before, w.snapshot()) {
				t.Fatal("check mode wrote to the node")
			}
			if w.fake.Ran("apt-get -o DPkg::Lock::Timeout=300 update") || w.fake.Ran("update-initramfs *") || w.fake.Ran("systemctl restart *") {
				t.Fatalf("check mode ran a command with side effects: %q", w.fake.Calls())
			}
			for _, c := range w.fake.Calls() {
				if strings.Contains(c, " -y ") || (strings.Contains(c, " update") && !strings.Contains(c, "Dir::State::Lists=")) {
					t.Fatalf("check mode ran %q", c)
				}
			}
			real := w.run(args(), false)
			if failed(real) {
				t.Fatalf("real run failed: %v", real["msg"])
			}
			if got, want := changes(real), changes(check); !reflect.DeepEqual(got, want) {
				t.Errorf("real run changes differ from the prediction:\n got %q\nwant %q", got, want)
			}
			if !reflect.DeepEqual(real["upgraded"], check["upgraded"]) {
				t.Errorf("upgraded: real %v, predicted %v", real["upgraded"], check["upgraded"])
			}
			// B2: the upgrade saw the no-subscription repository
			if w.installed["pve-manager"] != "9.2.5" || w.installed["vim"] == "" {
				t.Errorf("installed = %v", w.installed)
			}
			// B3: patched after the toolkit upgrade rewrote the file, one restart
			if js := read(t, w.root, proxmoxlib); strings.Contains(js, "Ext.Msg.show({") || !strings.Contains(js, patchedMark) {
				t.Errorf("proxmoxlib.js not patched:\n%s", js)
			}
			if w.restarts != 1 || w.initramfs != 1 {
				t.Errorf("restarts=%d initramfs=%d, want 1 and 1", w.restarts, w.initramfs)
			}
			if got := read(t, w.root, zfsConf); got != "options zfs zfs_arc_max=4294967296\n" {
				t.Errorf("zfs.conf = %q", got)
			}
			if real["reboot_required"] != true {
				t.Error("ARC changed without live apply: reboot_required must be true (B5)")
			}
			checkRepos(t, w, pve)
			again := w.run(args(), false)
			if failed(again) || again["changed"] != false {
				t.Fatalf("second run: changed=%v changes=%q msg=%v", again["changed"], changes(again), again["msg"])
			}
			if w.restarts != 1 || w.initramfs != 1 {
				t.Errorf("second run restarted or rebuilt: restarts=%d initramfs=%d", w.restarts, w.initramfs)
			}
		})
	}
}

func checkRepos(t *testing.T, w *world, pve int) {
	t.Helper()
	if pve == 9 {
		if got := read(t, w.root, "/etc/apt/sources.list.d/pve-enterprise.sources"); !strings.HasPrefix(got, "Enabled: no\nTypes: deb\n") {
			t.Errorf("pve-enterprise.sources = %q", got)
		}
		if got := read(t, w.root, "/etc/apt/sources.list.d/ceph.sources"); !strings.HasPrefix(got, "Enabled: no\n") {
			t.Errorf("ceph.sources = %q", got)
		}
		want := "Types: deb\nURIs: http://download.proxmox.com/debian/pve\nSuites: trixie\nComponents: pve-no-subscription\nSigned-By: /usr/share/keyrings/proxmox-archive-keyring.gpg\n"
		if got := read(t, w.root, "/etc/apt/sources.list.d/pve-no-subscription.sources"); got != want {
			t.Errorf("pve-no-subscription.sources = %q", got)
		}
		return
	}
	if got := read(t, w.root, "/etc/apt/sources.list.d/pve-enterprise.list"); got != "# deb https://enterprise.proxmox.com/debian/pve bookworm pve-enterprise\n" {
		t.Errorf("pve-enterprise.list = %q", got)
	}
	if got := read(t, w.root, "/etc/apt/sources.list.d/ceph.list"); got != "# deb https://enterprise.proxmox.com/debian/ceph-quincy bookworm enterprise\n" {
		t.Errorf("ceph.list = %q", got)
	}
	if got := read(t, w.root, "/etc/apt/sources.list.d/pve-no-subscription.list"); got != "deb http://download.proxmox.com/debian/pve bookworm pve-no-subscription\n" {
		t.Errorf("pve-no-subscription.list = %q", got)
	}
}

// TestDriftOnlyEnterprise: a package upgrade re-enabled the enterprise
// repository; only that file changes (B1).
func TestDriftOnlyEnterprise(t *testing.T) {
	w := newWorld(t, 9)
	args := map[string]any{"upgrade": "none", "remove_subscription_notice": false}
	if res := w.run(args, false); failed(res) {
		t.Fatal(res["msg"])
	}
	p := "/etc/apt/sources.list.d/pve-enterprise.sources"
	write(t, w.root, p, strings.TrimPrefix(read(t, w.root, p), "Enabled: no\n"), 0o644)
	before := w.snapshot()
	check := w.run(args, true)
	if !reflect.DeepEqual(before, w.snapshot()) {
		t.Fatal("check mode wrote")
	}
	want := []string{"disable pve-enterprise in " + p}
	if got := changes(check); !reflect.DeepEqual(got, want) {
		t.Fatalf("check changes = %q, want %q", got, want)
	}
	real := w.run(args, false)
	if got := changes(real); !reflect.DeepEqual(got, want) {
		t.Fatalf("real changes = %q", got)
	}
	after := w.snapshot()
	var differ []string
	for k := range after {
		if after[k] != before[k] {
			differ = append(differ, k)
		}
	}
	if len(differ) != 1 || !strings.HasSuffix(differ[0], p) {
		t.Errorf("files changed: %q", differ)
	}
}

// TestArc covers B4/B5: other options kept, initramfs only on change, live apply.
func TestArc(t *testing.T) {
	cases := []struct {
		name       string
		conf       string
		arc        string
		live       bool
		wantConf   string
		wantInit   int
		wantReboot bool
		wantSysfs  string
	}{
		{"installer value replaced, other options kept", "# tuned\noptions zfs zfs_arc_min=1073741824 zfs_arc_max=3353346048\n", "8G", false,
			"# tuned\noptions zfs zfs_arc_min=1073741824 zfs_arc_max=8589934592\n", 1, true, "3353346048\n"},
		{"live apply: no reboot", "options zfs zfs_arc_max=3353346048\n", "4096M", true,
			"options zfs zfs_arc_max=4294967296\n", 1, false, "4294967296\n"},
		{"already set: nothing, no initramfs", "options zfs zfs_arc_max=3353346048\n", "3353346048", false,
			"options zfs zfs_arc_max=3353346048\n", 0, false, "3353346048\n"},
		{"missing file created", "", "2G", false, "options zfs zfs_arc_max=2147483648\n", 1, true, "3353346048\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 9)
			write(t, w.root, zfsConf, c.conf, 0o644)
			args := map[string]any{"upgrade": "none", "remove_subscription_notice": false, "zfs_arc_max": c.arc, "zfs_arc_live": c.live}
			res := w.run(args, false)
			if failed(res) {
				t.Fatal(res["msg"])
			}
			if got := read(t, w.root, zfsConf); got != c.wantConf {
				t.Errorf("zfs.conf = %q, want %q", got, c.wantConf)
			}
			if w.initramfs != c.wantInit || res["reboot_required"] != c.wantReboot {
				t.Errorf("initramfs=%d reboot_required=%v reasons=%v", w.initramfs, res["reboot_required"], res["reboot_reasons"])
			}
			if got := read(t, w.root, arcSysfs); got != c.wantSysfs {
				t.Errorf("sysfs = %q", got)
			}
		})
	}
}

// TestArcInitramfsFailureRestores: a failed initramfs rebuild must not leave
// a file that makes the next run think all is done.
func TestArcInitramfsFailureRestores(t *testing.T) {
	w := newWorld(t, 9)
	w.initFail = true
	res := w.run(map[string]any{"upgrade": "none", "remove_subscription_notice": false, "zfs_arc_max": "4G"}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "update-initramfs") {
		t.Fatalf("want a failure naming update-initramfs, got %v", res["msg"])
	}
	if got := read(t, w.root, zfsConf); got != "options zfs zfs_arc_max=3353346048\n" {
		t.Errorf("zfs.conf not restored: %q", got)
	}
}

// TestBadInput: errors name the parameter and nothing runs or changes.
func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		args map[string]any
		want string
	}{
		{"unknown option", map[string]any{"zfs_arc": "4G"}, "zfs_arc"},
		{"ambiguous size", map[string]any{"zfs_arc_max": "4GB"}, "zfs_arc_max"},
		{"bad unit", map[string]any{"zfs_arc_max": "4Q"}, "zfs_arc_max"},
		{"bad choice", map[string]any{"upgrade": "full"}, "upgrade"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t, 9)
			before := w.snapshot()
			res := w.run(c.args, false)
			if !failed(res) || !strings.Contains(res["msg"].(string), c.want) {
				t.Fatalf("msg = %v, want failure naming %s", res["msg"], c.want)
			}
			if len(w.fake.Calls()) != 0 || !reflect.DeepEqual(before, w.snapshot()) {
				t.Errorf("bad input still acted: %q", w.fake.Calls())
			}
		})
	}
}

// TestEnterpriseWithoutSubscription: keeping the enterprise repository on a
// node without subscription surfaces apt's 401, never a green run.
func TestEnterpriseWithoutSubscription(t *testing.T) {
	w := newWorld(t, 9)
	res := w.run(map[string]any{"enterprise_repo": "enabled"}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "401") {
		t.Fatalf("msg = %v, want the 401", res["msg"])
	}
}

// TestLeftUpgradable: something still upgradable after the dist-upgrade is a
// failure naming it (B2).
func TestLeftUpgradable(t *testing.T) {
	w := newWorld(t, 9)
	w.keptBack["pve-manager"] = true
	res := w.run(map[string]any{"remove_subscription_notice": false}, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "pve-manager") {
		t.Fatalf("msg = %v, want failure naming pve-manager", res["msg"])
	}
}

// TestNoticeUnknownCode: a proxmoxlib.js without the expected code is left
// alone with a warning.
func TestNoticeUnknownCode(t *testing.T) {
	w := newWorld(t, 9)
	write(t, w.root, proxmoxlib, "// new upstream code\n", 0o644)
	res := w.run(map[string]any{"upgrade": "none"}, false)
	if failed(res) || read(t, w.root, proxmoxlib) != "// new upstream code\n" || w.restarts != 0 {
		t.Fatalf("res=%v", res)
	}
	if ws, _ := res["warnings"].([]any); len(ws) == 0 {
		t.Error("no warning")
	}
}

// TestNoticeHook: the hook is installed, then removed when turned off.
func TestNoticeHook(t *testing.T) {
	w := newWorld(t, 9)
	res := w.run(map[string]any{"upgrade": "none", "subscription_notice_hook": true}, false)
	if failed(res) {
		t.Fatal(res["msg"])
	}
	if !strings.Contains(read(t, w.root, hookConf), "DPkg::Post-Invoke") {
		t.Error("hook conf missing")
	}
	st, _ := w.root.ReadFile(hookScript)
	if st.Mode != 0o755 {
		t.Errorf("hook script mode %o", st.Mode)
	}
	res = w.run(map[string]any{"upgrade": "none"}, false)
	if failed(res) || len(changes(res)) != 2 {
		t.Fatalf("removal: %v %q", res["msg"], changes(res))
	}
	if st, _ := w.root.ReadFile(hookConf); st.Exists {
		t.Error("hook conf still there")
	}
}

// TestNoRefreshWithoutCause: update_cache false and no repository change:
// no apt-get update at all, not even a sandboxed one (B2 is about refreshing
// when repositories changed, never on a timer).
func TestNoRefreshWithoutCause(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(map[string]any{"upgrade": "none", "remove_subscription_notice": false}, false); failed(res) {
		t.Fatal(res["msg"])
	}
	n := len(w.fake.Calls())
	for _, check := range []bool{true, false} {
		res := w.run(map[string]any{"update_cache": false, "remove_subscription_notice": false}, check)
		if failed(res) {
			t.Fatal(res["msg"])
		}
	}
	for _, c := range w.fake.Calls()[n:] {
		if strings.HasSuffix(c, " update") {
			t.Errorf("refreshed without a repository change: %s", c)
		}
	}
	// ... but a repository change forces the refresh even with update_cache false.
	p := "/etc/apt/sources.list.d/pve-enterprise.sources"
	write(t, w.root, p, strings.TrimPrefix(read(t, w.root, p), "Enabled: no\n"), 0o644)
	n = len(w.fake.Calls())
	if res := w.run(map[string]any{"update_cache": false, "remove_subscription_notice": false}, false); failed(res) {
		t.Fatal(res["msg"])
	}
	refreshed := false
	for _, c := range w.fake.Calls()[n:] {
		refreshed = refreshed || c == "apt-get -o DPkg::Lock::Timeout=300 update"
	}
	if !refreshed {
		t.Error("a repository change did not refresh the lists (B2)")
	}
}

package pvebase

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/host"
)

func strs(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, e := range l {
		out = append(out, e.(string))
	}
	return out
}

// A dist-upgrade that ran but whose read-back fails has still changed the
// node: the result says changed, and which change is unverified.
func TestFailedUpgradeStillChanged(t *testing.T) {
	w := newWorld(t, 9)
	// a newer pve-manager shows up while the upgrade runs: something is
	// still upgradable afterwards, so Verify fails (B2)
	w.afterUpgrade = func() { w.lists["real"]["pve-manager"] = "9.2.6" }
	res := w.run(map[string]any{"remove_subscription_notice": false}, false)
	if !failed(res) || res["changed"] != true {
		t.Fatalf("failed=%v changed=%v, want a failed run that changed the node: %v", res["failed"], res["changed"], res["msg"])
	}
	if w.installed["pve-manager"] != "9.2.5" {
		t.Fatalf("the upgrade did not run: %v", w.installed)
	}
	unverified := strs(res["changes_unverified"])
	if len(unverified) != 1 || !strings.HasPrefix(unverified[0], "dist-upgrade") {
		t.Errorf("changes_unverified = %q", unverified)
	}
	if v := strs(res["changes_verified"]); len(v) == 0 {
		t.Errorf("changes_verified = %q, want the repository changes", v)
	}
	if !reflect.DeepEqual(strs(res["changes"]), append(strs(res["changes_verified"]), unverified...)) {
		t.Errorf("changes = %q", res["changes"])
	}
}

// The notice is patched and pveproxy restarted; a failed restart puts the
// file back, so the next run does both again (a patched file with a stale
// pveproxy would otherwise look converged forever).
func TestNoticeRestartFailureIsRedone(t *testing.T) {
	w := newWorld(t, 9)
	args := map[string]any{"upgrade": "none"}
	w.restartFails = true
	res := w.run(args, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "pveproxy") || !strings.Contains(res["msg"].(string), "put back") {
		t.Fatalf("msg = %v", res["msg"])
	}
	if js := read(t, w.root, proxmoxlib); js != nagJS {
		t.Fatalf("proxmoxlib.js not put back after the failed restart:\n%s", js)
	}
	w.restartFails = false
	check := w.run(args, true)
	if !reflect.DeepEqual(changes(check), []string{noticeSummary}) {
		t.Fatalf("check mode after the failure predicts %q", changes(check))
	}
	res = w.run(args, false)
	if failed(res) || !reflect.DeepEqual(changes(res), []string{noticeSummary}) || w.restarts != 1 {
		t.Fatalf("second run: %v %q restarts=%d", res["msg"], changes(res), w.restarts)
	}
	if again := w.run(args, false); failed(again) || again["changed"] != false {
		t.Fatalf("third run: %v %q", again["msg"], changes(again))
	}
}

// A proxmoxlib.js patched after pveproxy last started (the restart of an
// earlier run failed and could not be undone, or the run was killed between
// the two steps) is detected: pveproxy is restarted, once.
func TestPendingRestartDetected(t *testing.T) {
	w := newWorld(t, 9)
	args := map[string]any{"upgrade": "none"}
	if res := w.run(args, false); failed(res) || w.restarts != 1 {
		t.Fatalf("converging run: %v restarts=%d", res["msg"], w.restarts)
	}
	// the patch is newer than pveproxy: as if the restart never happened
	w.proxyStart = time.Now().Add(-time.Hour)
	check := w.run(args, true)
	if c := changes(check); len(c) != 1 || !strings.HasPrefix(c[0], "restart pveproxy.service") || !strings.Contains(c[0], "after pveproxy.service started") {
		t.Fatalf("check mode predicts %q", c)
	}
	res := w.run(args, false)
	if failed(res) || w.restarts != 2 || !reflect.DeepEqual(changes(res), changes(check)) {
		t.Fatalf("real run: %v %q restarts=%d", res["msg"], changes(res), w.restarts)
	}
	if again := w.run(args, false); failed(again) || again["changed"] != false || w.restarts != 2 {
		t.Fatalf("second run: %v %q restarts=%d", again["msg"], changes(again), w.restarts)
	}
	// a pveproxy that is down is started too
	w.proxyDown = true
	if res := w.run(args, false); failed(res) || w.restarts != 3 {
		t.Fatalf("pveproxy down: %v %q restarts=%d", res["msg"], changes(res), w.restarts)
	}
}

// Check mode runs read-only commands only, by construction: every command
// it ran is on the allow-list of host.ReadOnly (APT never even saves its
// binary caches; the sandbox update runs without the node's hooks).
func TestCheckModeRunsOnlyReadOnlyCommands(t *testing.T) {
	for _, args := range []map[string]any{
		{"extra_packages": []any{"vim"}, "zfs_arc_max": "4G", "zfs_arc_live": true, "subscription_notice_hook": true},
		{"update_cache": false, "enterprise_repo": "disabled"},
	} {
		for _, pve := range []int{8, 9} {
			w := newWorld(t, pve)
			before := w.snapshot()
			res := w.run(args, true)
			if failed(res) {
				t.Fatalf("check mode failed: %v", res["msg"])
			}
			for _, c := range w.fake.Calls() {
				if !host.ReadOnlyCommand(cmdOf(c)) {
					t.Errorf("PVE %d %v: check mode ran %q, which is not read-only", pve, args, c)
				}
			}
			if !reflect.DeepEqual(before, w.snapshot()) {
				t.Errorf("check mode wrote to the node")
			}
		}
	}
}

// cmdOf splits a logged command line (the fake's, unquoted arguments
// only) back into a Command.
func cmdOf(line string) host.Command {
	f := strings.Fields(line)
	return host.Command{Name: f[0], Args: f[1:]}
}

// Real run = prediction, compared on outcomes: every file check mode's
// diff shows is, after the real run, exactly what the diff's "after" said,
// and every package version check mode predicted is the one installed.
func TestPredictionIsTheOutcome(t *testing.T) {
	for _, pve := range []int{8, 9} {
		for _, args := range []map[string]any{
			{"extra_packages": []any{"vim", "htop"}, "zfs_arc_max": "4G", "subscription_notice_hook": true},
			{"ceph_no_subscription_repo": "enabled", "zfs_arc_max": "2G", "zfs_arc_live": true},
		} {
			w := newWorld(t, pve)
			check := w.run(args, true)
			if failed(check) {
				t.Fatalf("check mode: %v", check["msg"])
			}
			files := map[string]string{}
			for _, d := range check["diff"].([]any) {
				d := d.(map[string]any)
				after, ok := d["after"].(string)
				header, _ := d["after_header"].(string)
				if !ok || !strings.HasPrefix(header, "/") || header == proxmoxlib {
					continue // structured (packages) or partial (proxmoxlib.js lines) diffs
				}
				path, _, _ := strings.Cut(header, " (")
				files[path] = after
			}
			pkgs := map[string]string{}
			for _, key := range []string{"upgraded", "installed"} {
				for _, p := range check[key].([]any) {
					p := p.(map[string]any)
					pkgs[p["name"].(string)] = p["to"].(string)
				}
			}
			if len(files) == 0 || len(pkgs) == 0 {
				t.Fatalf("nothing predicted: %v", check["changes"])
			}
			real := w.run(args, false)
			if failed(real) {
				t.Fatalf("real run: %v", real["msg"])
			}
			for path, want := range files {
				got, err := os.ReadFile(w.root.Path(path))
				if err != nil || string(got) != want {
					t.Errorf("PVE %d: %s after the real run:\n%s\ncheck mode predicted:\n%s", pve, path, got, want)
				}
			}
			for name, want := range pkgs {
				if w.installed[name] != want {
					t.Errorf("PVE %d: %s is %s after the real run, check mode predicted %s", pve, name, w.installed[name], want)
				}
			}
			if !strings.Contains(read(t, w.root, proxmoxlib), patchedMark) {
				t.Errorf("PVE %d: check mode predicted the notice patch, the real run left no patch", pve)
			}
		}
	}
}

// Issue 15 item 9: the packages are downloaded first (under the deadline),
// then the dpkg transaction runs; check mode downloads nothing.
func TestDownloadBeforeTransaction(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(map[string]any{"remove_subscription_notice": false}, true); failed(res) || w.downloads != 0 {
		t.Fatalf("check mode: %v, %d downloads", res["msg"], w.downloads)
	}
	if res := w.run(map[string]any{"remove_subscription_notice": false}, false); failed(res) || res["changed"] != true {
		t.Fatalf("run: %v", res["msg"])
	}
	download, upgrade := -1, -1
	for i, c := range w.fake.Calls() {
		switch {
		case strings.HasPrefix(c, "apt-get") && strings.HasSuffix(c, "--download-only dist-upgrade"):
			download = i
		case strings.HasPrefix(c, "apt-get") && strings.HasSuffix(c, " dist-upgrade") && !strings.Contains(c, " -s "):
			upgrade = i
		}
	}
	if w.downloads != 1 || download < 0 || upgrade < download {
		t.Errorf("want one download before the transaction: %d downloads, download call %d, upgrade call %d\n%s", w.downloads, download, upgrade, strings.Join(w.fake.Calls(), "\n"))
	}
}

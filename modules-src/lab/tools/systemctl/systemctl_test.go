package systemctl

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
)

func TestJobsAreLoggedAndCounted(t *testing.T) {
	dir := t.TempDir()
	node := &nodecfg.Node{Node: "pve01", PVE: 9, StateDir: dir}
	clock := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	run := func(args ...string) (int, string) {
		var out bytes.Buffer
		clock = clock.Add(time.Second)
		code := (&Tool{Env: &cli.Env{Args: args, Stdout: &out, Stderr: &out}, Node: node, Now: func() time.Time { return clock }}).Run()
		return code, out.String()
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"restart", "pveproxy"}, 0},
		{[]string{"start", "pveproxy"}, 0}, // already active: no job
		{[]string{"restart", "pveproxy.service"}, 0},
		{[]string{"reload", "pvedaemon"}, 0},
		{[]string{"daemon-reload"}, 0},
		{[]string{"start", "nope"}, 5},
		{[]string{"enable", "--now", "zfs-scrub-monthly@tank.timer"}, 0},
	} {
		if code, out := run(tc.args...); code != tc.code {
			t.Fatalf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, out)
		}
	}
	log, err := ReadLog(filepath.Join(dir, LogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		job, unit string
		want      int
	}{
		{"restart", "pveproxy", 2}, {"start", "pveproxy", 0}, {"reload", "pvedaemon", 1},
		{"restart", "pvedaemon", 0}, {"enable", "zfs-scrub-monthly@tank.timer", 1}, {"start", "zfs-scrub-monthly@tank.timer", 1},
	} {
		if got := Count(log, tc.job, tc.unit); got != tc.want {
			t.Errorf("%s %s: %d times, want %d", tc.job, tc.unit, got, tc.want)
		}
	}
	if last := log[1]; last.Count != 2 || !last.Time.Equal(time.Date(2026, 11, 29, 15, 0, 3, 0, time.UTC)) {
		t.Errorf("second restart entry = %+v", last)
	}
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		name, id, instance string
		known              bool
	}{
		{"pveproxy", "pveproxy.service", "", true},
		{"sshd", "ssh.service", "", true},
		{"zfs-scrub-monthly@nvme-vm.timer", "zfs-scrub-monthly@nvme-vm.timer", "nvme-vm", true},
		{"zfs-scrub-monthly@.timer", "zfs-scrub-monthly@.timer", "", true},
		{"zfs-scrub-monthly@x.service", "zfs-scrub-monthly@x.service", "", false},
		{"nope", "nope.service", "", false},
	} {
		u := lookup(tc.name)
		if u.id != tc.id || u.instance != tc.instance || (u.def != nil) != tc.known {
			t.Errorf("lookup(%q) = %+v", tc.name, u)
		}
	}
}

// TestShowWritesNothing: `systemctl show` only reads, so a check-mode module
// reading an inactive timer must leave the node's unit state as it was;
// an active-since-boot unit keeps the start time it was first shown with.
func TestShowWritesNothing(t *testing.T) {
	dir := t.TempDir()
	node := &nodecfg.Node{Node: "pve01", PVE: 8, StateDir: dir}
	clock := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	run := func(args ...string) string {
		var out bytes.Buffer
		clock = clock.Add(time.Minute)
		(&Tool{Env: &cli.Env{Args: args, Stdout: &out, Stderr: &out}, Node: node, Now: func() time.Time { return clock }}).Run()
		return out.String()
	}
	out := run("show", "-p", "LoadState,UnitFileState,ActiveState", "zfs-scrub-monthly@tank.timer", "zfs-scrub-weekly@tank.timer")
	if want := "LoadState=loaded\nActiveState=inactive\nUnitFileState=disabled\n\nLoadState=loaded\nActiveState=inactive\nUnitFileState=disabled\n"; out != want {
		t.Errorf("show = %q, want %q", out, want)
	}
	if _, err := os.Stat(filepath.Join(dir, StateFile)); !os.IsNotExist(err) {
		t.Errorf("show of inactive units wrote %s (%v)", StateFile, err)
	}
	first := run("show", "-p", "ActiveEnterTimestamp", "pveproxy")
	if again := run("show", "-p", "ActiveEnterTimestamp", "pveproxy"); again != first || first == "ActiveEnterTimestamp=\n" {
		t.Errorf("an active unit's start time moved: %q then %q", first, again)
	}
}

package systemd

import (
	"context"
	"testing"

	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

func TestState(t *testing.T) {
	const u = "zfs-scrub-monthly@tank.timer"
	cases := []struct {
		name            string
		enabled, active hosttest.Reply
		want            UnitState
		wantErr         bool
	}{
		{"on", hosttest.Reply{Stdout: "enabled\n"}, hosttest.Reply{Stdout: "active\n"}, UnitState{true, true, "enabled"}, false},
		{"off", hosttest.Reply{Exit: 1, Stdout: "disabled\n"}, hosttest.Reply{Exit: 3, Stdout: "inactive\n"}, UnitState{false, false, "disabled"}, false},
		{"enabled but stopped", hosttest.Reply{Stdout: "enabled\n"}, hosttest.Reply{Exit: 3, Stdout: "inactive\n"}, UnitState{true, false, "enabled"}, false},
		{"missing template", hosttest.Reply{Exit: 1, Stderr: "Failed to get unit file state for x: No such file or directory\n"}, hosttest.Reply{Exit: 3, Stdout: "inactive\n"}, UnitState{false, false, "not-found"}, false},
		{"systemd down", hosttest.Reply{Exit: 1, Stderr: "System has not been booted with systemd\n"}, hosttest.Reply{}, UnitState{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := hosttest.New().On("systemctl is-enabled "+u, c.enabled).On("systemctl is-active "+u, c.active)
			got, err := State(context.Background(), f, u)
			if (err != nil) != c.wantErr || (!c.wantErr && got != c.want) {
				t.Errorf("got %+v, %v", got, err)
			}
		})
	}
}

// TestStates: one `systemctl show` for several units reads what State reads
// with two commands per unit (systemd's own block format: the properties in
// its order, not the order asked, an empty line between units).
func TestStates(t *testing.T) {
	const m, w, gone = "zfs-scrub-monthly@tank.timer", "zfs-scrub-weekly@tank.timer", "zfs-scrub-daily@tank.timer"
	f := hosttest.New().On("systemctl show -p LoadState,UnitFileState,ActiveState "+m+" "+w+" "+gone, hosttest.Reply{Stdout: "LoadState=loaded\nActiveState=active\nUnitFileState=enabled\n\n" +
		"LoadState=loaded\nActiveState=inactive\nUnitFileState=disabled\n\n" +
		"LoadState=not-found\nActiveState=inactive\nUnitFileState=\n"})
	got, err := States(context.Background(), f, m, w, gone)
	want := []UnitState{{true, true, "enabled"}, {false, false, "disabled"}, {false, false, "not-found"}}
	if err != nil || len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if n := len(f.Calls()); n != 1 {
		t.Errorf("%d commands, want 1", n)
	}
	for name, reply := range map[string]hosttest.Reply{
		"one block for two units": {Stdout: "LoadState=loaded\nActiveState=active\nUnitFileState=enabled\n"},
		"unknown file state":      {Stdout: "LoadState=loaded\nActiveState=active\nUnitFileState=bogus\n\nLoadState=loaded\n"},
		"systemd down":            {Exit: 1, Stderr: "System has not been booted with systemd\n"},
	} {
		f := hosttest.New().On("systemctl show *", reply)
		if _, err := States(context.Background(), f, m, w); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

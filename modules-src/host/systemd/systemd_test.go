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

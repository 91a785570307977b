// Package systemd reads and changes the state of systemd units through
// systemctl.
package systemd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/host"
)

// UnitState is whether a unit starts at boot and runs now.
type UnitState struct {
	Enabled bool   `json:"enabled"`
	Active  bool   `json:"active"`
	Raw     string `json:"-"` // is-enabled's answer (enabled, disabled, static, not-found…)
}

// State asks `systemctl is-enabled` and `systemctl is-active`. Both exit
// non-zero for "no", which is an answer, not an error; only output that is
// not a known state is an error.
func State(ctx context.Context, r host.Runner, unit string) (UnitState, error) {
	var st UnitState
	res, err := r.Run(ctx, host.Command{Name: "systemctl", Args: []string{"is-enabled", unit}})
	en := strings.TrimSpace(res.Stdout)
	switch en {
	case "enabled", "enabled-runtime", "alias":
		st.Enabled = true
	case "disabled", "static", "indirect", "generated", "transient", "masked", "masked-runtime", "linked", "linked-runtime", "not-found":
	default:
		if err != nil && strings.Contains(res.Stderr, "No such file or directory") {
			en = "not-found"
			break
		}
		return st, fmt.Errorf("systemctl is-enabled %s: unexpected answer %q: %v", unit, en, err)
	}
	st.Raw = en
	res, _ = r.Run(ctx, host.Command{Name: "systemctl", Args: []string{"is-active", unit}})
	st.Active = strings.TrimSpace(res.Stdout) == "active"
	return st, nil
}

// EnableNow enables and starts a unit.
func EnableNow(ctx context.Context, r host.Runner, unit string) error {
	if _, err := r.Run(ctx, host.Command{Name: "systemctl", Args: []string{"enable", "--now", unit}}); err != nil {
		return fmt.Errorf("enable %s: %w", unit, err)
	}
	return nil
}

// DisableNow disables and stops a unit.
func DisableNow(ctx context.Context, r host.Runner, unit string) error {
	if _, err := r.Run(ctx, host.Command{Name: "systemctl", Args: []string{"disable", "--now", unit}}); err != nil {
		return fmt.Errorf("disable %s: %w", unit, err)
	}
	return nil
}

// startLayout is how systemctl prints timestamps (TZ=UTC makes the zone
// one Go can parse).
const startLayout = "Mon 2006-01-02 15:04:05 MST"

// ActiveSince returns when the unit last entered the active state
// (ActiveEnterTimestamp, second resolution); ok is false when the unit is
// not active.
func ActiveSince(ctx context.Context, r host.Runner, unit string) (since time.Time, ok bool, err error) {
	res, err := r.Run(ctx, host.Command{Name: "systemctl", Args: []string{"show", "-p", "ActiveState,ActiveEnterTimestamp", unit}, Env: []string{"TZ=UTC"}})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("systemctl show %s: %w", unit, err)
	}
	props := map[string]string{}
	for _, l := range strings.Split(res.Stdout, "\n") {
		if k, v, found := strings.Cut(strings.TrimSpace(l), "="); found {
			props[k] = v
		}
	}
	if props["ActiveState"] != "active" {
		return time.Time{}, false, nil
	}
	since, err = time.Parse(startLayout, props["ActiveEnterTimestamp"])
	if err != nil {
		return time.Time{}, false, fmt.Errorf("systemctl show %s: ActiveEnterTimestamp %q: %w", unit, props["ActiveEnterTimestamp"], err)
	}
	return since, true, nil
}

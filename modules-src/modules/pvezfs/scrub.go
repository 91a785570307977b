package pvezfs

// Stage 3: the scrub timer (Z6).

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host/systemd"
)

func scrubUnit(period, pool string) string { return "zfs-scrub-" + period + "@" + pool + ".timer" }

// planScrub is stage 3 (Z6).
func (m *pool) planScrub(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	return m.scrubChanges(ctx, m.p.Scrub)
}

// scrubChanges enables the timer of period (monthly, weekly) and disables
// the other; any other period ("disabled", "" for a destroyed pool)
// disables both.
func (m *pool) scrubChanges(ctx context.Context, keep string) ([]ansible.Change, error) {
	periods := []string{"monthly", "weekly"}
	units := make([]string, len(periods))
	for i, period := range periods {
		units[i] = scrubUnit(period, m.p.Name)
	}
	// both timers in one command: each is-enabled/is-active is a process
	states, err := systemd.States(ctx, m.reads(), units...)
	if err != nil {
		return nil, fmt.Errorf("scrub: %w", err)
	}
	var changes []ansible.Change
	for i, period := range periods {
		unit, st := units[i], states[i]
		want := keep == period
		if st.Raw == "not-found" {
			if want {
				return nil, fmt.Errorf("scrub: %s does not exist (zfsutils-linux ships zfs-scrub-%s@.timer); set scrub: disabled or install it", unit, period)
			}
			continue
		}
		if want == st.Enabled && want == st.Active {
			continue
		}
		verb, do := "enable and start ", systemd.EnableNow
		if !want {
			verb, do = "disable and stop ", systemd.DisableNow
		}
		changes = append(changes, ansible.Change{
			ID:      "scrub:" + unit,
			Summary: verb + unit,
			Apply:   func(ctx context.Context) error { return do(ctx, m.env.Runner, unit) },
			Verify: func(ctx context.Context) error {
				got, err := systemd.State(ctx, m.env.Runner, unit)
				if err != nil {
					return err
				}
				if got.Enabled != want || got.Active != want {
					return fmt.Errorf("%s is enabled=%v active=%v, expected %v", unit, got.Enabled, got.Active, want)
				}
				return nil
			},
		})
	}
	return changes, nil
}

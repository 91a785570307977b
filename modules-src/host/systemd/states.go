package systemd

import (
	"context"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// States reads the state of several units with one `systemctl show`, where
// State asks two commands per unit: on a node every command is a process
// start, and a module that only checks its units (pve_zfs's two scrub
// timers on a no-op run) pays for each. The answers mean what State's do:
// Raw is the unit file state, or "not-found" for a unit systemd cannot
// load; Enabled and Active as is-enabled and is-active would say.
func States(ctx context.Context, r host.Runner, units ...string) ([]UnitState, error) {
	if len(units) == 0 {
		return nil, nil
	}
	args := append([]string{"show", "-p", "LoadState,UnitFileState,ActiveState"}, units...)
	res, err := r.Run(ctx, host.Command{Name: "systemctl", Args: args})
	if err != nil {
		return nil, fmt.Errorf("systemctl show %s: %w", strings.Join(units, " "), err)
	}
	// one block of KEY=value lines per unit, in the order asked, blocks
	// separated by an empty line
	blocks := strings.Split(strings.Trim(res.Stdout, "\n"), "\n\n")
	if len(blocks) != len(units) {
		return nil, fmt.Errorf("systemctl show %s: %d answers for %d units: %q", strings.Join(units, " "), len(blocks), len(units), res.Stdout)
	}
	out := make([]UnitState, len(units))
	for i, b := range blocks {
		props := map[string]string{}
		for _, l := range strings.Split(b, "\n") {
			if k, v, ok := strings.Cut(l, "="); ok {
				props[k] = v
			}
		}
		st, err := fromShow(props)
		if err != nil {
			return nil, fmt.Errorf("systemctl show %s: %w", units[i], err)
		}
		out[i] = st
	}
	return out, nil
}

func fromShow(p map[string]string) (UnitState, error) {
	load, ok := p["LoadState"]
	if !ok {
		return UnitState{}, fmt.Errorf("no LoadState in the answer")
	}
	if load == "not-found" {
		return UnitState{Raw: "not-found"}, nil
	}
	st := UnitState{Raw: p["UnitFileState"], Active: p["ActiveState"] == "active"}
	switch st.Raw {
	case "enabled", "enabled-runtime", "alias":
		st.Enabled = true
	case "", "disabled", "static", "indirect", "generated", "transient", "masked", "masked-runtime", "linked", "linked-runtime":
	default:
		return UnitState{}, fmt.Errorf("unexpected UnitFileState %q", st.Raw)
	}
	return st, nil
}

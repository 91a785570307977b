package pvebase

import (
	"context"
	"fmt"
	"strings"

	"github.com/gopve/proxmox/modules-src/host/apt"
)

// dropHeld takes the packages on hold (apt-mark showhold) out of a
// dist-upgrade plan. An administrator holds a package on purpose; apt keeps
// it back, so counting it would plan a dist-upgrade that changes nothing in
// check mode and fail the real run's "nothing left upgradable" proof. They
// are reported under `held`, with a warning, instead.
//
// A plan with nothing to install, keep back or remove (a converged node)
// has no held package to drop, and nothing is upgraded, so nothing is
// verified against the held list: apt-mark is not started (issue 24 §3).
func (m *base) dropHeld(ctx context.Context, plan apt.Plan) (apt.Plan, error) {
	if plan.Empty() {
		return plan, nil
	}
	held, err := apt.Held(ctx, m.env.Runner)
	if err != nil {
		return plan, err
	}
	m.held = held
	rest, skipped := plan.WithoutHeld(held)
	if len(skipped) > 0 {
		m.heldBack = skipped
		m.r.Warn(fmt.Sprintf("held packages are not upgraded: %s (apt-mark showhold); run apt-mark unhold to let pve_base upgrade them", strings.Join(skipped, ", ")))
	}
	return rest, nil
}

// leftWithoutHeld is what dist-upgrade left behind, held packages aside.
func (m *base) leftWithoutHeld(left apt.Plan) apt.Plan {
	rest, _ := left.WithoutHeld(m.held)
	return rest
}

package apt

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/host"
)

// Held lists the packages on hold (`apt-mark showhold`): an administrator
// pinned them on purpose, so dist-upgrade keeps them back and nothing should
// count them as left behind.
func Held(ctx context.Context, r host.Runner) ([]string, error) {
	// ReadOnlyOpts: apt-mark opens APT's cache, and as root would save a
	// stale one to /var/cache/apt — a write, in check mode too.
	res, err := r.Run(ctx, host.Command{Name: "apt-mark", Args: append(slices.Clone(ReadOnlyOpts), "showhold")})
	if err != nil {
		return nil, fmt.Errorf("list held packages: %w", err)
	}
	var out []string
	for _, l := range strings.Split(res.Stdout, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			name, _, _ := strings.Cut(l, ":") // drop :amd64
			out = append(out, name)
		}
	}
	return out, nil
}

// WithoutHeld removes held packages from a plan. It returns the plan and the
// held packages the plan had kept back (or would have changed).
func (p Plan) WithoutHeld(held []string) (Plan, []string) {
	isHeld := map[string]bool{}
	for _, h := range held {
		isHeld[h] = true
	}
	var out Plan
	var dropped []string
	for _, x := range p.Install {
		if isHeld[x.Name] {
			dropped = append(dropped, x.Name)
			continue
		}
		out.Install = append(out.Install, x)
	}
	for _, x := range p.KeptBack {
		if isHeld[x] {
			dropped = append(dropped, x)
			continue
		}
		out.KeptBack = append(out.KeptBack, x)
	}
	out.Remove = p.Remove
	return out, dropped
}

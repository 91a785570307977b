package pvebase

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host/apt"
)

// prepareAPT makes m.client see the package lists a real run would see at
// this point: refreshed after the repository stage (B2). In a real run the
// repository files are already written, so the real lists are refreshed. In
// check mode a sandbox holding the predicted repository files is refreshed
// instead, so nothing under /etc/apt or /var/lib/apt changes.
func (m *base) prepareAPT(ctx context.Context) error {
	if m.client.Runner != nil {
		return nil
	}
	m.client = apt.Client{Runner: m.env.Runner}
	if m.r.CheckMode() {
		// outside the sandbox, APT must not even refresh its binary caches
		m.client.Opts = apt.ReadOnlyOpts
	}
	refresh := m.changed || m.p.UpdateCache
	if !refresh {
		return nil
	}
	if m.r.CheckMode() {
		files := map[string][]byte{}
		for p, f := range m.files {
			files[p] = f.Bytes()
		}
		sb, err := apt.NewSandbox(files)
		if err != nil {
			return err
		}
		m.sandbox = sb
		m.client.Opts = sb.Opts
	}
	warnings, err := m.client.Update(ctx)
	for _, w := range warnings {
		m.r.Warn("apt-get update: " + w)
	}
	if err != nil {
		return fmt.Errorf("%w (fix the repository or disable it with the matching *_repo option)", err)
	}
	return nil
}

func (m *base) cleanup() {
	if m.sandbox != nil {
		m.sandbox.Close()
	}
}

func pkgList(ps []apt.Pkg) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		switch {
		case p.From == "":
			parts = append(parts, fmt.Sprintf("%s (%s)", p.Name, p.To))
		default:
			parts = append(parts, fmt.Sprintf("%s %s → %s", p.Name, p.From, p.To))
		}
	}
	return strings.Join(parts, ", ")
}

// planInstall is stage 2: extra packages that are not installed.
// The lists are refreshed here even when nothing is to be installed or
// upgraded: a repository changed in this run must not leave a stale cache
// behind, and an unreachable repository (401 from enterprise) must fail the
// run — in check mode too, where the sandbox refresh predicts that failure.
func (m *base) planInstall(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	if err := m.prepareAPT(ctx); err != nil {
		return nil, err
	}
	if len(m.p.ExtraPackages) == 0 {
		return nil, nil
	}
	have := m.extraInstalled
	if have == nil {
		var err error
		if have, err = apt.Installed(ctx, m.env.Runner, m.p.ExtraPackages); err != nil {
			return nil, err
		}
	}
	var missing []string
	for _, p := range m.p.ExtraPackages {
		if _, ok := have[p]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return nil, nil
	}
	plan, err := m.client.SimulateInstall(ctx, missing)
	if err != nil {
		return nil, fmt.Errorf("extra_packages: %w", err)
	}
	m.installPlan = plan
	return []ansible.Change{{
		Predict: func(w *ansible.World) { predictInstalled(w, plan.Install) },
		ID:      "packages:install",
		Summary: "install " + pkgList(plan.Install),
		Diff:    versionsDiff("packages", plan.Install),
		// Downloaded under the deadline (nothing installed yet), then the
		// dpkg transaction runs to completion whatever the deadline.
		Apply: func(ctx context.Context) error {
			client := apt.Client{Runner: m.env.Runner}
			if err := client.DownloadInstall(ctx, missing); err != nil {
				return ansible.NothingChanged(err)
			}
			return ansible.Uninterruptible(ctx, "the apt-get install transaction", func(ctx context.Context) error {
				return client.Install(ctx, missing)
			})
		},
		Verify: func(ctx context.Context) error {
			have, err := apt.Installed(ctx, m.env.Runner, missing)
			if err != nil {
				return err
			}
			var still []string
			for _, p := range missing {
				if _, ok := have[p]; !ok {
					still = append(still, p)
				}
			}
			if len(still) > 0 {
				return fmt.Errorf("still not installed: %s", strings.Join(still, ", "))
			}
			return nil
		},
	}}, nil
}

// versionsDiff shows package versions as a structured before/after diff.
func versionsDiff(header string, ps []apt.Pkg) *ansible.Diff {
	before, after := map[string]any{}, map[string]any{}
	for _, p := range ps {
		if p.From != "" {
			before[p.Name] = p.From
		}
		after[p.Name] = p.To
	}
	return &ansible.Diff{Before: before, After: after, BeforeHeader: header, AfterHeader: header}
}

// kernelPkg matches packages whose upgrade means a reboot is pending (B5).
var kernelPkg = regexp.MustCompile(`^(proxmox-kernel-|pve-kernel-|linux-image-)`)

// planUpgrade is stage 3: dist-upgrade, and the proof afterwards that
// nothing the configured repositories offer is left behind (B2).
func (m *base) planUpgrade(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	m.rebootFor(m.installPlan.Install, func(p apt.Pkg) string { return "kernel package " + p.Name + " installed" })
	if m.p.Upgrade == "none" {
		return nil, nil
	}
	if err := m.prepareAPT(ctx); err != nil {
		return nil, err
	}
	plan, err := m.client.SimulateDistUpgrade(ctx)
	if err != nil {
		return nil, err
	}
	if plan, err = m.dropHeld(ctx, plan); err != nil {
		return nil, err
	}
	plan.Install = notYetInstalled(w, plan.Install)
	m.upgradePlan = plan
	m.upgraded = append([]apt.Pkg(nil), plan.Install...)
	m.rebootFor(plan.Install, func(p apt.Pkg) string { return "kernel package " + p.Name + " upgraded to " + p.To })
	if plan.Empty() {
		return nil, nil
	}
	return []ansible.Change{{
		Predict: func(w *ansible.World) { predictInstalled(w, plan.Install) },
		ID:      "packages:upgrade",
		Summary: upgradeSummary(plan),
		Diff:    versionsDiff("packages", plan.Install),
		// The download installs nothing: it runs under the deadline, and
		// cut short it leaves the node as it was. Only the dpkg
		// transaction then runs to completion whatever the deadline.
		Apply: func(ctx context.Context) error {
			client := apt.Client{Runner: m.env.Runner}
			if err := client.DownloadDistUpgrade(ctx); err != nil {
				return ansible.NothingChanged(err)
			}
			return ansible.Uninterruptible(ctx, "the apt-get dist-upgrade transaction", func(ctx context.Context) error {
				return client.DistUpgrade(ctx)
			})
		},
		Verify: func(ctx context.Context) error { return m.verifyUpgraded(ctx, plan) },
	}}, nil
}

// rebootFor asks for a reboot, saying why, for each kernel package of pkgs.
func (m *base) rebootFor(pkgs []apt.Pkg, why func(apt.Pkg) string) {
	for _, p := range pkgs {
		if kernelPkg.MatchString(p.Name) {
			m.reboot = append(m.reboot, why(p))
		}
	}
}

// notYetInstalled drops from pkgs what an earlier change of this run
// already installs (predicted in check mode, where the simulation still
// sees the node as it was), so it is not upgraded a second time.
func notYetInstalled(w *ansible.World, pkgs []apt.Pkg) []apt.Pkg {
	var rest []apt.Pkg
	for _, p := range pkgs {
		if v, ok := installedVersion(p.Name).Predicted(w); !ok || v != p.To {
			rest = append(rest, p)
		}
	}
	return rest
}

func upgradeSummary(plan apt.Plan) string {
	summary := "dist-upgrade " + pkgList(plan.Install)
	if len(plan.Install) == 0 {
		summary = "dist-upgrade"
	}
	if len(plan.Remove) > 0 {
		summary += "; remove " + strings.Join(plan.Remove, ", ")
	}
	return summary
}

// verifyUpgraded checks that nothing is left to upgrade (held packages
// aside), then reports the versions really installed, not the ones
// predicted.
func (m *base) verifyUpgraded(ctx context.Context, plan apt.Plan) error {
	left, err := apt.Client{Runner: m.env.Runner}.SimulateDistUpgrade(ctx)
	if err != nil {
		return err
	}
	left = m.leftWithoutHeld(left)
	if !left.Empty() {
		var names []string
		for _, p := range left.Install {
			names = append(names, p.Name)
		}
		names = append(names, left.KeptBack...)
		names = append(names, left.Remove...)
		sort.Strings(names)
		return fmt.Errorf("still upgradable from the configured repositories after dist-upgrade: %s (see apt-cache policy)", strings.Join(names, ", "))
	}
	names := make([]string, 0, len(plan.Install))
	for _, p := range plan.Install {
		names = append(names, p.Name)
	}
	got, err := apt.Installed(ctx, m.env.Runner, names)
	if err != nil {
		return err
	}
	for i, p := range m.upgraded {
		if v, ok := got[p.Name]; ok {
			m.upgraded[i].To = v
		}
	}
	return nil
}

// installedVersion is a fact of the predicted world (ansible.World): the
// version of a package once the planned installs and upgrades are done.
func installedVersion(pkg string) ansible.Key[string] {
	return ansible.Key[string]("pvebase:installed:" + pkg)
}

// predictInstalled records what an install or upgrade leaves installed.
func predictInstalled(w *ansible.World, ps []apt.Pkg) {
	for _, p := range ps {
		installedVersion(p.Name).Predict(w, p.To)
	}
}

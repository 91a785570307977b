// Package pvebase is the pve_base module: the base configuration of one
// Proxmox VE node — APT repositories, package upgrade, extra packages, the
// ZFS ARC cap and the subscription notice — in the order the seed's pve_base
// role needed and with its bugs fixed (B1–B5).
//
// Stages, each observe → plan → apply → verify:
//
//  1. repositories: enterprise/no-subscription/Ceph repositories toggled in
//     place (deb822 "Enabled: no" or a commented .list line), never deleted;
//     files we create are written atomically, mode 0644.
//  2. packages: the APT lists are refreshed before anything is installed or
//     upgraded — always when a repository file changed in this run (B2), and
//     by default on every run (update_cache), never on a timer. Then
//     extra_packages are installed and, with upgrade=dist, a dist-upgrade
//     runs; afterwards nothing may remain upgradable or the task fails
//     naming the packages.
//  3. zfs_arc: /etc/modprobe.d/zfs.conf carries zfs_arc_max, other lines kept;
//     update-initramfs runs only when the file changed (B4).
//  4. subscription notice: patched after the upgrade (B3), with a backup;
//     pveproxy restarts only when the file changed.
//
// Check mode runs the same stages without applying. The APT lists are then
// refreshed in a throw-away sandbox (host/apt.Sandbox) built from the
// repository files a real run would write, so the predicted upgrade is the
// one a real run would perform — without touching /etc/apt or
// /var/lib/apt/lists.
package pvebase

import (
	"context"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
)

// Env is what the module touches on the node: a root prefix and a runner.
type Env struct {
	Root   host.Root
	Runner host.Runner
	Now    func() time.Time
}

// readOnly is the environment of check mode: a root that refuses writes
// and a runner that runs only read-only commands, both failing the task as
// a bug on any attempt (host.WriteAttempt). Check mode is write-free by
// construction, not because every stage remembers to be careful.
func (e Env) readOnly() Env {
	e.Root = e.Root.ReadOnly()
	e.Runner = host.ReadOnly(e.Runner)
	return e
}

// Module is pve_base as it runs on a node.
func Module() ansible.Module {
	return New(func(*ansible.Run) Env {
		return Env{Root: "/", Runner: &host.ExecRunner{}, Now: time.Now}
	})
}

// New builds the module with a custom environment (tests use a temporary
// root and a fake runner).
func New(env func(*ansible.Run) Env) ansible.Module {
	return ansible.Module{
		Name:             "pve_base",
		ShortDescription: "Base configuration of a Proxmox VE node: repositories, upgrade, packages, ZFS ARC, subscription notice",
		Description: []string{
			"Configures the APT repositories of a Proxmox VE 8 or 9 node (enterprise off, no-subscription on by default), refreshes the package lists whenever a repository changed, installs extra packages, runs a dist-upgrade and fails if anything the configured repositories offer is still upgradable afterwards.",
			"Caps the ZFS ARC in /etc/modprobe.d/zfs.conf (keeping other options) and rebuilds the initramfs only when that file changed; optionally applies the cap live.",
			"Removes the 'No valid subscription' notice of the web UI after the upgrade, so an upgrade of proxmox-widget-toolkit in the same run cannot undo it; pveproxy is restarted only when the file changed.",
			"Check mode predicts exactly what a real run would change and writes nothing: the package lists are refreshed in a temporary APT state built from the repository files the run would write.",
		},
		Notes: []string{
			"The suite (bookworm, trixie) and the repository format (.list on Debian 12, deb822 .sources on Debian 13) come from the node's /etc/os-release unless set.",
			"Repository files are never deleted: a disabled deb822 repository gets 'Enabled: no', a disabled .list line is commented out. Files that hold none of the four Proxmox repositories are left alone.",
			"reboot_required is returned, never acted upon: the module does not reboot.",
		},
		Requirements: []string{"Proxmox VE 8 (Debian 12) or 9 (Debian 13)", "root on the node (become: true)"},
		Examples:     examples,
		Return:       returnDoc,
		Spec:         spec(),
		Timeout:      time.Hour,
		Params:       params{},
		Run: func(r *ansible.Run) error {
			e := env(r)
			if e.Now == nil {
				e.Now = time.Now
			}
			if r.CheckMode() {
				e = e.readOnly()
			}
			return run(r, e)
		},
	}
}

// Repository choices.
const (
	stateEnabled  = "enabled"
	stateDisabled = "disabled"
)

func spec() ansible.Spec {
	choice := []any{stateEnabled, stateDisabled}
	return ansible.Spec{Options: map[string]ansible.Option{
		"enterprise_repo": {Type: ansible.TypeStr, Default: stateDisabled, Choices: choice,
			Description: []string{"The pve-enterprise repository (needs a subscription; without one, apt-get update fails with 401)."}},
		"no_subscription_repo": {Type: ansible.TypeStr, Default: stateEnabled, Choices: choice,
			Description: []string{"The pve-no-subscription repository."}},
		"ceph_enterprise_repo": {Type: ansible.TypeStr, Default: stateDisabled, Choices: choice,
			Description: []string{"The Ceph enterprise repository (ceph.sources / ceph.list of a fresh install)."}},
		"ceph_no_subscription_repo": {Type: ansible.TypeStr, Default: stateDisabled, Choices: choice,
			Description: []string{"The Ceph no-subscription repository; enabled, it is written to ceph-no-subscription.sources (or .list)."}},
		"suite": {Type: ansible.TypeStr,
			Description: []string{"Debian suite of the Proxmox repositories. Default: VERSION_CODENAME from /etc/os-release."}},
		"repo_format": {Type: ansible.TypeStr, Default: "auto", Choices: []any{"auto", "deb822", "list"},
			Description: []string{"Format of repository files this module creates. auto: deb822 .sources from trixie on, .list before. Existing entries are edited in the file and format they are in."}},
		"ceph_release": {Type: ansible.TypeStr,
			Description: []string{"Ceph release of the Ceph repositories (squid, reef, quincy). Default: the one already configured on the node, else squid on trixie and reef on bookworm."}},
		"repository_urls": {Type: ansible.TypeDict,
			Description: []string{"Override repository base URLs (mirrors, the lab). Keys: pve_enterprise, pve_no_subscription, ceph_enterprise, ceph_no_subscription. '{ceph_release}' in a Ceph URL is replaced by the release."},
			Options: map[string]ansible.Option{
				"pve_enterprise":       {Type: ansible.TypeStr, Description: []string{"Default https://enterprise.proxmox.com/debian/pve."}},
				"pve_no_subscription":  {Type: ansible.TypeStr, Description: []string{"Default http://download.proxmox.com/debian/pve."}},
				"ceph_enterprise":      {Type: ansible.TypeStr, Description: []string{"Default https://enterprise.proxmox.com/debian/ceph-{ceph_release}."}},
				"ceph_no_subscription": {Type: ansible.TypeStr, Description: []string{"Default http://download.proxmox.com/debian/ceph-{ceph_release}."}},
			}},
		"signed_by": {Type: ansible.TypeStr,
			Description: []string{"Signed-By of deb822 files this module creates. Default /usr/share/keyrings/proxmox-archive-keyring.gpg; an empty string omits the field. Not used for .list files (Debian 12 nodes trust /etc/apt/trusted.gpg.d)."}},
		"update_cache": {Type: ansible.TypeBool, Default: true,
			Description: []string{"Refresh the package lists before installing or upgrading, on every run. The lists are refreshed anyway whenever a repository file changed in this run (never based on the age of the cache)."}},
		"extra_packages": {Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{},
			Description: []string{"Packages to install (installed only if missing; not upgraded beyond what upgrade does)."}},
		"upgrade": {Type: ansible.TypeStr, Default: "dist", Choices: []any{"dist", "none"},
			Description: []string{"dist: apt-get dist-upgrade, non-interactive, keeping local config files; afterwards nothing may remain upgradable. none: no upgrade."}},
		"zfs_arc_max": {Type: ansible.TypeStr,
			Description: []string{"ZFS ARC cap, in bytes or with a binary unit (4G = 4GiB = 4294967296 bytes, 4096M). '4GB' is refused as ambiguous. Unset: zfs.conf is left alone."}},
		"zfs_arc_live": {Type: ansible.TypeBool, Default: false,
			Description: []string{"Also write the cap to /sys/module/zfs/parameters/zfs_arc_max, so no reboot is needed for it."}},
		"remove_subscription_notice": {Type: ansible.TypeBool, Default: true,
			Description: []string{"Patch proxmoxlib.js so the web UI stops showing 'No valid subscription' (backup kept next to the file). If the file lacks the expected code, a warning is returned and nothing is changed."}},
		"subscription_notice_hook": {Type: ansible.TypeBool, Default: false,
			Description: []string{"Install an APT DPkg::Post-Invoke hook that re-applies the patch whenever a package upgrade rewrites proxmoxlib.js. false removes a hook this module installed earlier."}},
	}}
}

type params struct {
	EnterpriseRepo         string            `ansible:"enterprise_repo"`
	NoSubscriptionRepo     string            `ansible:"no_subscription_repo"`
	CephEnterpriseRepo     string            `ansible:"ceph_enterprise_repo"`
	CephNoSubscriptionRepo string            `ansible:"ceph_no_subscription_repo"`
	Suite                  string            `ansible:"suite"`
	RepoFormat             string            `ansible:"repo_format"`
	CephRelease            string            `ansible:"ceph_release"`
	RepositoryURLs         map[string]string `ansible:"repository_urls"`
	SignedBy               *string           `ansible:"signed_by"`
	UpdateCache            bool              `ansible:"update_cache"`
	ExtraPackages          []string          `ansible:"extra_packages"`
	Upgrade                string            `ansible:"upgrade"`
	ZFSArcMax              string            `ansible:"zfs_arc_max"`
	ZFSArcLive             bool              `ansible:"zfs_arc_live"`
	RemoveNotice           bool              `ansible:"remove_subscription_notice"`
	NoticeHook             bool              `ansible:"subscription_notice_hook"`
}

func run(r *ansible.Run, e Env) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	m := &base{r: r, env: e, p: p}
	var arcBytes uint64
	if p.ZFSArcMax != "" {
		b, err := parseArc(p.ZFSArcMax)
		if err != nil {
			return err
		}
		arcBytes = b
	}
	steps := []struct {
		name string
		fn   ansible.StageFunc
	}{
		{"repositories", m.planRepos},
		{"packages", m.planInstall},
		{"upgrade", m.planUpgrade},
		{"zfs_arc", func(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
			return m.planArc(ctx, arcBytes)
		}},
		{"subscription_notice", m.planNotice},
	}
	defer m.cleanup()
	for _, s := range steps {
		if err := r.Stage(s.name, s.fn); err != nil {
			m.report()
			return err
		}
	}
	m.report()
	return nil
}

package pvebase

import (
	"os"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/apt"
)

// report sets the module's result keys from what the run planned and read
// back. It is called on success and on failure, so a failed run still says
// how far it got.
func (m *base) report() {
	if m.repos != nil {
		m.r.Set("repositories", m.repoReports())
		m.r.Set("suite", m.suite)
	}
	up := m.upgraded
	if up == nil {
		up = []apt.Pkg{}
	}
	m.r.Set("upgraded", up)
	inst := m.installPlan.Install
	if inst == nil {
		inst = []apt.Pkg{}
	}
	m.r.Set("installed", inst)
	held := m.heldBack
	if held == nil {
		held = []string{}
	}
	m.r.Set("held", held)
	if why := m.kernelReboot(); why != "" {
		m.reboot = append(m.reboot, why)
	}
	// Debian's packages drop /run/reboot-required when they want a reboot.
	if _, err := os.Stat(m.env.Root.Path("/run/reboot-required")); err == nil {
		m.reboot = append(m.reboot, "/run/reboot-required exists")
	}
	reasons := m.reboot
	if reasons == nil {
		reasons = []string{}
	}
	m.r.Set("reboot_required", len(reasons) > 0)
	m.r.Set("reboot_reasons", reasons)
	if m.r.Verbosity() >= 2 {
		m.r.Set("commands", host.CommandLog(m.env.Runner))
	}
}

const examples = `- name: Base configuration of every node
  gopve.proxmox.pve_base:
    extra_packages: [vim, htop, tmux]
    zfs_arc_max: 4G

- name: Predict what an upgrade would bring, change nothing
  gopve.proxmox.pve_base:
  check_mode: true
  register: base

- name: Keep the enterprise repository (subscribed nodes), no upgrade
  gopve.proxmox.pve_base:
    enterprise_repo: enabled
    no_subscription_repo: disabled
    upgrade: none
    remove_subscription_notice: false
`

const returnDoc = `repositories:
  description: Final state of the four Proxmox repositories.
  returned: always
  type: list
  elements: dict
  contains:
    name: {description: "pve-enterprise, pve-no-subscription, ceph-enterprise or ceph-no-subscription", type: str}
    state: {description: "enabled, disabled or absent", type: str}
    uri: {description: Repository URI, type: str}
    suite: {description: Suite configured, type: str}
    files: {description: Files holding an entry for it, type: list, elements: str}
suite:
  description: Debian suite used (from /etc/os-release unless set).
  returned: always
  type: str
  sample: trixie
upgraded:
  description: Packages the dist-upgrade installed or upgraded (predicted in check mode), with versions read back after a real run.
  returned: always
  type: list
  elements: dict
  sample: [{name: pve-manager, from: 9.2.2, to: 9.2.5}]
held:
  description: Packages on hold (apt-mark showhold) that the dist-upgrade left at their installed version; a warning names them too. They do not count as left upgradable.
  returned: always
  type: list
  elements: str
  sample: [pve-manager]
installed:
  description: Packages installed for extra_packages (with their dependencies).
  returned: always
  type: list
  elements: dict
reboot_required:
  description: A reboot is pending (a kernel newer than the running one installed, by this run or earlier; ZFS ARC cap not applied live; /run/reboot-required). The module never reboots.
  returned: always
  type: bool
reboot_reasons:
  description: Why reboot_required is true.
  returned: always
  type: list
  elements: str
commands:
  description: The commands the module ran on the node (command line and exit code), oldest first.
  returned: with -vv or more
  type: list
  elements: dict
`

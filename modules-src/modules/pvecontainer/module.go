// Package pvecontainer is the pve_container module: one LXC container,
// identified by its VMID (K1), created from a CT template volume
// (local:vztmpl/…) with `pct create`'s API call, then configured as asked
// and proved by reading it back.
//
// Three stages, each observing before it plans, as pve_clone's:
//
//   - container: GET /version (the schema of that PVE version checks every
//     write before it is sent) and GET /cluster/resources (the CT by VMID,
//     cluster-wide, H3). An existing CT is read once (GET …/pending) and
//     must be ours (its hostname, or adopt). A missing one is created on
//     node after the checks create_vm makes (node, storages, template);
//     check mode predicts its config as pve-container builds it, the
//     rootfs and mount point volumes named per storage type (predict.go).
//   - config: what differs from the task (cores, memory, swap, NICs merged
//     key by key with the MAC kept, features, mount points, onboot,
//     startup, tags, description), one PUT, and each volume grown by its
//     own resize (never shrunk). On a running CT what PVE keeps pending is
//     returned as pending with restart_required.
//   - power: started/stopped, through HA's requested state when HA manages
//     the CT (H4).
//
// A no-op run costs three reads: version, cluster resources, pending.
package pvecontainer

import (
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// Module builds pve_container as the binary registers it; New builds it with
// client options (tests point it at a simulator with short retries).
var Module, New = pveansible.Declare(about, spec, params{}, 15*time.Minute, run)

// params are the module's options.
type params struct {
	pveansible.Connection `ansible:",squash"`
	VMID                  int    `ansible:"vmid"`
	Hostname              string `ansible:"hostname"`
	Adopt                 bool   `ansible:"adopt"`
	Node                  string `ansible:"node"`
	OSTemplate            string `ansible:"ostemplate"`
	RestoreFrom           string `ansible:"restore_from"`
	State                 string `ansible:"state"`
	Pool                  string `ansible:"pool"`
	Purge                 bool   `ansible:"purge"`

	Cores        *int           `ansible:"cores"`
	Memory       *int           `ansible:"memory"`
	Swap         *int           `ansible:"swap"`
	RootFS       map[string]any `ansible:"rootfs"`
	Mounts       map[string]any `ansible:"mounts"`
	Nets         map[string]any `ansible:"nets"`
	Features     map[string]any `ansible:"features"`
	Unprivileged *bool          `ansible:"unprivileged"`
	OnBoot       *bool          `ansible:"onboot"`
	Startup      *string        `ansible:"startup"`
	Tags         []string       `ansible:"tags"`
	Description  *string        `ansible:"description"`
	Password     *string        `ansible:"password"`
	SSHKeys      []string       `ansible:"ssh_public_keys"`
}

func spec() ansible.Spec {
	opts := map[string]ansible.Option{
		"vmid":     {Type: ansible.TypeInt, Required: true, Description: []string{"The container's identity (K1): the VMID to create or manage (100 … 999999999). A hostname is never an identity."}},
		"hostname": ansible.StrOption("The container's hostname, the proof that the container at vmid is this task's: on an existing VMID it must match, else the task fails with what holds the VMID, before any write. Required unless adopt is true (always with state=absent)."),
		"adopt": {Type: ansible.TypeBool, Default: false, Description: []string{
			"Manage whatever container holds vmid, whatever its hostname; a given hostname is then set, not checked. Without hostname and without adopt an existing VMID is never taken over (K1)."}},
		"node":       ansible.StrOption("Node the container is created on (required to create one). An existing container is found wherever it runs now (after an HA recovery) and is not moved."),
		"ostemplate": ansible.StrOption("The CT template volume a new container is created from (local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst); it must exist on its storage on node. Required to create, unless restore_from; ignored for an existing container (its origin is not kept by PVE)."),
		"state": {Type: ansible.TypeStr, Default: "present", Choices: []any{"present", "started", "stopped", "absent"}, Description: []string{
			"present: exists and configured, power untouched (a new container stays stopped). started/stopped: also that power state (through HA when HA manages it). absent: stopped (through HA when HA manages it) and destroyed, after checking its hostname; what PVE would refuse to destroy (protection, HA or replication jobs without purge, a lock) is refused before any write, check mode alike."}},
		"restore_from": ansible.StrOption("A container backup volume (local:backup/vzdump-lxc-200-2026_12_01-03_00_00.tar.zst) a missing container is restored from instead of created from ostemplate (mutually exclusive with it): its volumes are re-created on rootfs.storage (default local) with their sizes (rootfs.size then only grows them), its config is kept where the task says nothing, then the task's settings are converged on it. Ignored for an existing container: a restore never overwrites one (force is never sent)."),
		"pool":         ansible.StrOption("Resource pool a container created by this run joins (PVE takes it only at creation, K6); it must exist."),
		"purge":        {Type: ansible.TypeBool, Default: false, Description: []string{"With state=absent, pve-container's purge: the VMID also leaves its replication jobs, backup jobs and HA. Without it PVE refuses to destroy a container under HA or with replication jobs, and the module refuses first."}},

		"cores":  ansible.IntOption("CPU cores (PVE's default: all the node's)."),
		"memory": ansible.IntOption("Memory in MiB."),
		"swap":   ansible.IntOption("Swap in MiB."),
		"rootfs": {Type: ansible.TypeDict, Description: []string{"The root volume: storage (created on it; it must hold rootdir) and size (8G; grown, never shrunk). PVE's default is 4G on storage local."},
			Options: map[string]ansible.Option{
				"storage": {Type: ansible.TypeStr, Description: []string{"Storage of a new container's root volume. An existing root volume is never moved: another storage is refused."}},
				"size":    {Type: ansible.TypeStr, Description: []string{"Size (8G, 512M): grown by a resize when smaller, a smaller one refused."}},
			}},
		"mounts": {Type: ansible.TypeDict, Description: []string{
			"Mount points by key (mp0 … mp255): each a dict of storage and size (a volume allocated when the key is new), mp (the path in the container, required) and the options backup, acl, quota, ro, replicate, shared. An existing volume is grown, never shrunk, and never moved; its options are merged key by key."}},
		"nets": {Type: ansible.TypeDict, Description: []string{
			"NICs by key (net0 … net31): each a dict of name (eth0), bridge, ip (cidr, dhcp, manual), gw, ip6, gw6, tag, firewall, mtu, rate, link_down, hwaddr (only to set one on purpose), or PVE's string (name=eth0,bridge=vmbr0,ip=dhcp).",
			"Only the given keys are merged into the NIC that is there; its MAC is kept (K16). A new NIC needs name and bridge."}},
		"features": {Type: ansible.TypeDict, Description: []string{
			"Container features merged key by key: nesting, keyctl, fuse, mknod, force_rw_sys (booleans), mount (fstype;fstype). On a running container a change waits for its next start (pending)."}},
		"unprivileged": ansible.BoolOption("Create the container unprivileged (its root mapped to uid 100000). Only at creation: PVE keeps it read-only, so a different value on an existing container is refused before any write. Unset: PVE's default, unprivileged on PVE 9, privileged on PVE 8."),
		"onboot":       ansible.BoolOption("Start the container when its node boots."),
		"startup":      ansible.StrOption("Startup and shutdown behaviour, PVE's string (order=1,up=30)."),
		"tags":         {Type: ansible.TypeList, Elements: ansible.TypeStr, Description: []string{"Tags (compared as a set; sent sorted, separated by ;)."}},
		"description":  ansible.StrOption("Description (the config's notes)."),
		"password": {Type: ansible.TypeStr, NoLog: true, Description: []string{
			"Root password, set only when this run creates the container (pve-container writes it into the container, never into its config): never compared, never returned. Refused in local mode falling back to pvesh (its command line is readable by any user of the node)."}},
		"ssh_public_keys": {Type: ansible.TypeList, Elements: ansible.TypeStr, Description: []string{
			"Public SSH keys for root, set only when this run creates the container (written into the container's authorized_keys, not its config): never compared afterwards."}},
	}
	return ansible.Spec{Options: opts, Constraints: ansible.Constraints{
		MutuallyExclusive: [][]string{{"ostemplate", "restore_from"}},
		RequiredIf:        []ansible.RequiredIf{{Key: "state", Value: "absent", Requirements: []string{"hostname"}}},
	}}
}

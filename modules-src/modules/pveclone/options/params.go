// Package options is pve_clone's side facing the playbook: its options
// (Params, Spec), their documentation (About, written into
// plugins/modules/pve_clone.py by gen-plugins), and what they ask for in
// PVE's terms, checked before any request (NewWant: scalars, NICs, disks,
// cloud-init; ParseVMID: vmid and vmid_range), every refusal naming the
// option (Of). It reads nothing from PVE; the checks follow the formats
// PVE's API enforces: qemu-server's (QemuServer.pm, QemuServer/Drive.pm,
// Network.pm, CPUConfig.pm) and pve-common's JSONSchema.pm (pve-vmid,
// pve-tag, dns-name, ip, mac-addr).
package options

import (
	"maps"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// Params are the module's options.
type Params struct {
	pveansible.Connection `ansible:",squash"`
	VMIDParam             any    `ansible:"vmid"`
	VMIDRange             string `ansible:"vmid_range"`
	VMID                  int    `ansible:"-"` // vmid as a number: given, found by name or claimed (vmid: auto)
	Name                  string `ansible:"name"`
	Adopt                 bool   `ansible:"adopt"`
	Node                  string `ansible:"node"`
	Template              string `ansible:"template"`
	State                 string `ansible:"state"`
	Full                  bool   `ansible:"full"`
	Storage               string `ansible:"storage"`
	Format                string `ansible:"format"`
	Pool                  string `ansible:"pool"`
	PoolCreate            bool   `ansible:"pool_create"`
	BWLimit               int    `ansible:"bwlimit"`
	Purge                 bool   `ansible:"purge"`
	AgentWait             int    `ansible:"agent_wait"`
	AsTemplate            bool   `ansible:"as_template"`
	CloneThenMigrate      bool   `ansible:"clone_then_migrate"`
	MigrateExisting       bool   `ansible:"migrate_existing"`

	Cores       *int     `ansible:"cores"`
	Sockets     *int     `ansible:"sockets"`
	Memory      *int     `ansible:"memory"`
	Balloon     *int     `ansible:"balloon"`
	CPU         *string  `ansible:"cpu"`
	NUMA        *bool    `ansible:"numa"`
	Tags        []string `ansible:"tags"`
	OnBoot      *bool    `ansible:"onboot"`
	Startup     *string  `ansible:"startup"`
	Description *string  `ansible:"description"`
	Agent       any      `ansible:"agent"`

	Nets  map[string]any `ansible:"nets"`
	Disks map[string]any `ansible:"disks"`

	CIUser       *string        `ansible:"ciuser"`
	CIPassword   *string        `ansible:"cipassword"`
	SSHKeys      []string       `ansible:"sshkeys"`
	IPConfig     map[string]any `ansible:"ipconfig"`
	Nameservers  []string       `ansible:"nameservers"`
	SearchDomain *string        `ansible:"searchdomain"`
	CIType       *string        `ansible:"citype"`
	CICustom     *string        `ansible:"cicustom"`

	Machine  *string        `ansible:"machine"`
	BIOS     *string        `ansible:"bios"`
	OSType   *string        `ansible:"ostype"`
	SCSIHW   *string        `ansible:"scsihw"`
	Boot     *string        `ansible:"boot"`
	CDROM    string         `ansible:"cdrom"`
	EFIDisk  map[string]any `ansible:"efidisk"`
	TPMState map[string]any `ansible:"tpmstate"`
}

func Spec() ansible.Spec {
	opts := map[string]ansible.Option{
		"vmid": {Type: ansible.TypeRaw, Required: true, Description: []string{
			"The VM's identity (K1): the VMID to clone into, create or manage (100 … 999999999). A name is never an identity; another VM with the same name does not stop this one.",
			"auto: the module picks the VMID, only within vmid_range and only when asked. The VM is then found again by its name, which is required and must match exactly one guest of the range (several fail, listing them). When none does, the lowest free VMID of the range is claimed by the clone or create call itself: PVE refuses a VMID that is taken, and then the next free one is tried (a bounded number of times), so two runs racing in one range end with distinct VMIDs. PVE keeps names unique nowhere: two runs with the same name racing in one range may both create a VM, and the next run then fails listing both. The chosen VMID is returned in vmid; check mode returns the one it would take now, with a warning that the real run may take another if the range changes meanwhile."}},
		"vmid_range": ansible.StrOption("With vmid: auto (required then): the VMIDs it may claim, first-last (2000-2099), within PVE's 100 … 999999999. With an explicit vmid it only checks that the vmid lies in it."),
		"name":       ansible.StrOption("The VM's name (a DNS name), the proof that the VM at vmid is this task's: on an existing VMID it must match, else the task fails with what holds the VMID, before any write. Required unless adopt is true (always with state=absent and vmid auto)."),
		"adopt": {Type: ansible.TypeBool, Default: false, Description: []string{
			"Without name, manage whatever VM holds vmid, whatever its name: its config is converged to this task's settings and it is started or stopped as asked. The VMID's origin is still checked (never a template, a container, a linked clone of another template). Without name and without adopt the task fails before any write, naming both options: an existing VMID is never taken over silently (K1: another tenant's VM would get this task's memory, NICs, sshkeys and ipconfig).",
			"With name given it changes nothing: the name is always checked."}},
		"node": ansible.StrOption("Node the VM should live on. Defaults to the template's node. An existing VM is found wherever it runs now (after a migration or an HA recovery); on another node it is moved only with migrate_existing, else a warning says where it is (the result's node is always where it is)."),
		"clone_then_migrate": {Type: ansible.TypeBool, Default: false, Description: []string{
			"A new VM whose template has disks (or whose storage is) on local storage of another node than node: PVE cannot clone it there (K2), so clone it on the template's node, then migrate it offline to node (with-local-disks; targetstorage storage when storage is given: the clone uses storage too when the template's node has it, else each disk's own storage, and the migration moves the disks onto storage), wait for the migration task, then configure and start it there. Each step is its own change and write; check mode predicts the whole sequence (the VM and its config on node) and writes nothing.",
			"Refused before any write (check mode alike) when node is not a cluster member or is offline, when a storage the VM's disks land on is missing on node or holds no images, when the template has a local CD-ROM ISO (PVE refuses to migrate it), or with full: false (a linked clone cannot leave its template's node, H8). A template entirely on shared storage is cloned straight to node (PVE's target), no migration, and the summary says so.",
			"When the migration fails after the clone, the task fails changed (the clone exists), naming the node the VM is on, read back; a rerun with migrate_existing: true finishes the move."}},
		"migrate_existing": {Type: ansible.TypeBool, Default: false, Description: []string{
			"An existing VM on another node than node is migrated there (off by default: nothing moves by surprise; after an HA recovery a guest lives elsewhere on purpose, H3). A stopped VM migrates offline, a running one online (online: 1), with-local-disks when it has disks on local storage; each disk keeps its storage. A guest HA manages is moved by the HA manager (POST /cluster/ha/resources/vm:N/migrate, never a direct migrate, H4). The move is waited for until PVE reports the VM on node, bounded by timeout; the configuration and power changes follow there.",
			"What PVE's migrate_vm and QemuMigrate refuse is refused before any write (check mode alike): node not a member or offline, a lock, a storage of the VM missing on node, a local CD-ROM ISO or the host's drive, a linked clone on local storage (H8), local devices (usb, hostpci, serial, parallel, virtiofs, ivshmem; PVE's force is root only and never sent), and a running replicated VM to a node that is not a replication target. A failed migration is changed, and the message says where the VM is, read back.",
			"Under HA with a node-affinity rule (PVE 9) or group (PVE 8) that prefers another node, the HA manager may move the guest back: put node where the rule wants it."}},
		"template": ansible.StrOption("Source template: its VMID, or its exact name (exactly one template of that name must exist cluster-wide). Omit it to build the VM bare from machine, bios, disks, cdrom, efidisk, tpmstate and nets."),
		"state": {Type: ansible.TypeStr, Default: "present", Choices: []any{"present", "started", "stopped", "absent"}, Description: []string{
			"present: exists and configured, power untouched (a new VM stays stopped). started/stopped: also that power state (through HA when HA manages the guest). absent: stopped and destroyed, after checking its name: a running VM is first stopped (through HA when HA manages it) and waited for until PVE reports it stopped, a change of its own, then destroyed; what PVE would refuse to destroy (protection, HA or replication jobs without purge, a lock) is refused before any write, check mode alike."}},
		"full":    {Type: ansible.TypeBool, Default: true, Description: []string{"Full clone (independent copy). false: a linked clone, which needs a storage with linked clones (lvmthin, zfspool, rbd, qcow2 on a file storage) and takes neither storage nor format."}},
		"storage": ansible.StrOption("Target storage of a full clone's disks (default: each disk's own storage). Must exist on the target node and hold images; with a target node it must be shared."),
		"format": {Type: ansible.TypeStr, Choices: []any{"raw", "qcow2", "vmdk"}, Description: []string{
			"Disk format of a full clone on a file storage (the clone API accepts only raw, qcow2 and vmdk)."}},
		"pool": ansible.StrOption("Resource pool a VM created by this run joins (clone or bare). PVE only takes pool at creation (K6): a missing pool fails the task before anything is sent, unless pool_create is set."),
		"pool_create": {Type: ansible.TypeBool, Default: false, Description: []string{
			"Create pool first when it does not exist (K6), as its own change, before the clone or create. Needs Pool.Allocate on /pool/<pool>."}},
		"bwlimit": ansible.IntOption("Bandwidth limit of the clone's disk copies, KiB/s."),
		"as_template": {Type: ansible.TypeBool, Default: false, Description: []string{
			"End the VM as a template: built bare or cloned, configured, then converted (POST …/template, qemu-server's qmtemplate task, waited for): PVE sets template: 1 and renames every disk to its base volume (vm-<vmid>-disk-N becomes base-<vmid>-disk-N; CD-ROMs and the cloud-init drive stay). Check mode predicts the conversion and the new disk names.",
			"An existing VM of this name is configured first, then converted; PVE refuses to convert a running VM, so a running one needs state: stopped (it is stopped first, then converted); with state: present it is refused before any write. state: started contradicts a template and is refused.",
			"A template already at vmid (its name must match, as for any VM) is left alone: no write, changed false. Where its config differs from this task's, the keys are named in a warning and nothing is sent (PVE would take most changes on a template, but a template's clones must not drift silently: change the template deliberately, or build a new one).",
			"Without it (false, the default) a template at vmid fails the task: this module never configures a template unless asked."}},
		"agent_wait": {Type: ansible.TypeInt, Default: 0, Description: []string{
			"With state=started, seconds to wait for the guest agent to answer (GET agent/network-get-interfaces) once the VM runs; the task fails if it does not, naming K20. 0 (the default) never waits: an image without qemu-guest-agent would hang an unbounded wait (seed 003's 15 minutes)."}},
		"purge": {Type: ansible.TypeBool, Default: false, Description: []string{"With state=absent, qemu-server's purge: the VMID also leaves its replication jobs, backup jobs and HA. Without it PVE refuses to destroy a VM under HA or named by replication jobs, and the module refuses first, before any write. The VM's ACLs and pool membership go with every destroy."}},

		"cores":       ansible.IntOption("CPU cores per socket."),
		"sockets":     ansible.IntOption("CPU sockets."),
		"memory":      ansible.IntOption("Memory in MiB."),
		"balloon":     ansible.IntOption("Minimum memory in MiB for the balloon device (0 disables it)."),
		"cpu":         ansible.StrOption("CPU type, PVE's string (host, x86-64-v2-AES, kvm64,flags=+aes)."),
		"numa":        ansible.BoolOption("Enable NUMA."),
		"tags":        ansible.ListOption("Tags (compared as a set; PVE stores them sorted, separated by ;)."),
		"onboot":      ansible.BoolOption("Start the VM when its node boots."),
		"startup":     ansible.StrOption("Startup and shutdown behaviour, PVE's string (order=1,up=30,down=60)."),
		"description": ansible.StrOption("Description (the config's notes). Sent with the clone call too."),
		"agent": {Type: ansible.TypeRaw, Description: []string{
			"QEMU guest agent: true/false, PVE's string (enabled=1,fstrim_cloned_disks=1) or a dict. The module never waits on the agent (K20)."}},
		"nets": ansible.DictOption(
			"NICs by key (net0 … net31): each a dict of model, bridge, tag, trunks, firewall, mtu, rate, queues, link_down (macaddr only to set one on purpose), or PVE's string (virtio,bridge=vmbr0,tag=10).",
			"Only the given keys are merged into the NIC that is there; the current MAC is always re-sent, so changing a bridge or VLAN never changes the MAC (K16). mtu 1 means the bridge's MTU (K9). tag 0 removes the VLAN tag.",
			"firewall=1 on a classic vmbrN bridge drops hairpin-routed return traffic (K8): the module warns when it is set there."),
		"disks": ansible.DictOption(
			"Disks by key (scsi0, virtio0, sata0, ide0 …): a minimum size (32G), PVE's string (vmdata:32,discard=on,ssd=1; isos:iso/x.iso,media=cdrom) or a dict of size, storage and drive options (cache, discard, iothread, ssd, backup, replicate, aio, serial, ro, format). A cloud-init drive is STORAGE:cloudinit (ide2, sata or scsi): created when the VM has none (named vm-<vmid>-cloudinit, as PVE names it), left alone when it has one on that storage; one on another storage, or a second one, is refused before any write, never moved.",
			"An existing disk is grown to the size when smaller and never shrunk (a larger disk is tolerated and reported, K11); its drive options are merged key by key, its volume is never replaced (K16). A missing key is allocated on its storage."),
		"ciuser":       ansible.StrOption("Cloud-init user."),
		"cipassword":   {Type: ansible.TypeStr, NoLog: true, Description: []string{"Cloud-init password (never returned; PVE shows it masked, see notes). When local mode falls back to pvesh, which would put it on a command line any user of the node can read, it is refused before any request (give api_host)."}},
		"sshkeys":      ansible.ListOption("Cloud-init public SSH keys, one per element; stored URL-encoded as the API wants (K12) and compared decoded."),
		"ipconfig":     ansible.DictOption("Cloud-init network by key (ipconfig0 …): PVE's string (ip=10.0.0.5/24,gw=10.0.0.1; ip=dhcp) or a dict of ip, gw, ip6, gw6. Checked as PVE's pve-qm-ipconfig format."),
		"nameservers":  ansible.ListOption("Cloud-init DNS servers (PVE's nameserver, space-joined)."),
		"searchdomain": ansible.StrOption("Cloud-init DNS search domain."),
		"citype": {Type: ansible.TypeStr, Choices: []any{"nocloud", "configdrive2", "opennebula"}, Description: []string{
			"Cloud-init configuration format."}},
		"cicustom": ansible.StrOption("Cloud-init custom files, PVE's string (vendor=local:snippets/vendor.yaml); the storage must hold snippets (S4)."),
	}
	maps.Copy(opts, bareOptions())
	return ansible.Spec{Options: opts, Constraints: ansible.Constraints{
		RequiredIf: []ansible.RequiredIf{{Key: "state", Value: "absent", Requirements: []string{"name"}}},
	}}
}

// bareOptions are what a VM built bare (no template) is made of (machine,
// firmware, OS type, SCSI controller, CD-ROM, EFI and TPM disks), and the
// boot order.
func bareOptions() map[string]ansible.Option {
	return map[string]ansible.Option{
		"machine": ansible.StrOption("Bare VM: machine type (q35, pc, or a versioned one)."),
		"bios": {Type: ansible.TypeStr, Choices: []any{"seabios", "ovmf"}, Description: []string{
			"Bare VM: firmware."}},
		"ostype": ansible.StrOption("Bare VM: guest OS type (l26, win11, …)."),
		"scsihw": ansible.StrOption("Bare VM: SCSI controller (virtio-scsi-single, virtio-scsi-pci, …)."),
		"boot":   ansible.StrOption("Boot order, PVE's string (order=scsi0;ide2;net0)."),
		"cdrom":  ansible.StrOption("Bare VM: ISO volume for a CD-ROM on ide2 (local:iso/debian-13.iso); it must exist on its storage."),
		"efidisk": {Type: ansible.TypeDict, Description: []string{"Bare VM with bios=ovmf: EFI vars disk, a dict of storage, efitype (2m, 4m), pre_enrolled_keys, format."},
			Options: map[string]ansible.Option{
				"storage":           {Type: ansible.TypeStr, Required: true, Description: []string{"Storage of the EFI vars disk."}},
				"efitype":           {Type: ansible.TypeStr, Choices: []any{"2m", "4m"}, Description: []string{"Size and type of the OVMF EFI vars."}},
				"pre_enrolled_keys": {Type: ansible.TypeBool, Description: []string{"Enrol the distribution's and Microsoft's Secure Boot keys."}},
				"format":            {Type: ansible.TypeStr, Choices: []any{"raw", "qcow2", "vmdk"}, Description: []string{"Format on a file storage."}},
			}},
		"tpmstate": {Type: ansible.TypeDict, Description: []string{"Bare VM: TPM state disk, a dict of storage and version (v1.2, v2.0)."},
			Options: map[string]ansible.Option{
				"storage": {Type: ansible.TypeStr, Required: true, Description: []string{"Storage of the TPM state."}},
				"version": {Type: ansible.TypeStr, Choices: []any{"v1.2", "v2.0"}, Description: []string{"TPM version."}},
			}},
	}
}

// Package pveclone is the pve_clone module: one VM, identified by its
// VMID (K1), cloned from a template wherever it lives or built bare, then
// configured as asked and proved by reading it back.
//
// Three stages, each observing before it plans:
//
//   - vm: GET /version (the schema of that PVE version checks every write
//     before it is sent) and GET /cluster/resources (the VM by VMID and the
//     template by VMID or exact name, cluster-wide). An existing VM is read
//     once (GET …/pending: the live values and the pending ones) and must
//     be ours (its name). A missing one is cloned at the template's node
//     with `target` (K2), after PVE's pre-clone checks run read-only;
//     check mode predicts the clone's config as qemu-server's clone_vm
//     builds it (qemu.PredictClone).
//   - config: the settings the clone ignores (K5), planned against that
//     config (observed, or predicted in check mode): scalars, NICs merged
//     key by key with the MAC re-sent (K16), disks grown never shrunk
//     (K11), cloud-init (K12). On a running VM a change that waits for a
//     restart is reported as pending with restart_required (K10).
//   - power: started/stopped, through HA's requested state when HA manages
//     the guest (H4).
//
// A no-op run costs three reads: version, cluster resources, pending.
//
// The options, their documentation and what they ask for in PVE's terms
// are the subpackage options; qemu-server's and pve-storage's own rules
// the stages predict with (clone_vm, create_vm, hotplug, volume names,
// template_create) are in pveapi/qemu. This package holds the stages, the
// reads and writes they make, migration and the report.
package pveclone

import (
	"time"

	"github.com/gopve/proxmox/modules-src/modules/pveclone/options"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// Module builds pve_clone as the binary registers it; New builds it with
// client options (tests point it at a simulator with short retries).
var Module, New = pveansible.Declare(options.About, options.Spec, options.Params{}, 15*time.Minute, run)

package pveclone

import (
	"maps"
	"slices"

	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// report sets the result every run, failed or not: the VMID, its node,
// the MAC of every NIC (K17), the final config (read back, or predicted in
// check mode), what waits for a restart, the clone's warnings and a failed
// task's log.
func (v *vm) report() {
	if v.p.VMID != 0 {
		v.r.Set("vmid", v.p.VMID) // 0: vmid auto found no VM to remove
	}
	v.r.Set("existed", v.existed)
	if v.node != "" {
		v.r.Set("node", v.node)
	}
	pveansible.ReportVersion(v.r, v.version)
	cfg := map[string]string{}
	macs := map[string]string{}
	if v.final != nil && !(v.p.State == "absent" && v.existed && !v.r.CheckMode()) {
		cfg = maps.Clone(v.final)
		if _, ok := cfg["cipassword"]; ok {
			cfg["cipassword"] = qemu.Masked
		}
		if m, err := (qemu.Config{Values: cfg}).MACs(); err == nil {
			macs = m
		}
	}
	if v.p.State == "absent" {
		cfg, macs = map[string]string{}, map[string]string{}
	}
	v.r.Set("config", cfg)
	v.r.Set("mac", macs)
	var pending []map[string]any
	var keys []string
	for _, it := range v.pending {
		row := it.Row()
		if msg := v.hotplugErrors[it.Key]; msg != "" {
			row["error"] = msg // PVE wrote it, then could not apply it to the running VM
		}
		if it.Key == "cipassword" {
			row["value"], row["pending"] = qemu.Masked, qemu.Masked
		}
		pending = append(pending, row)
		keys = append(keys, it.Key)
	}
	slices.Sort(keys)
	if pending == nil {
		pending = []map[string]any{}
	}
	v.r.Set("pending", pending)
	v.r.Set("restart_required", len(pending) > 0)
	if v.cloneWarnings != nil {
		v.r.Set("clone_warnings", v.cloneWarnings)
	}
	if v.taskLog != nil {
		v.r.Set("task_log", v.taskLog)
	}
}

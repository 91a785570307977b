package pveclone

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// planConfig converges what the clone (or create) does not set, against
// the VM as it is — or, in check mode, as the clone would make it.
func (v *vm) planConfig(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	// Read once by stage vm; one made by this run is stopped, not under HA.
	st, err := pveansible.GuestState(ctx, w, vmKey(v.p.VMID), v.read, func(ctx context.Context) (qemu.State, error) {
		return v.observe(ctx, v.node, false, false)
	})
	if err != nil {
		return nil, err
	}
	v.node = st.Node
	v.setFinal(st)
	if st.Next.Template() {
		return nil, v.templateDrift(st) // a template is left alone (as_template)
	}
	plan, req, resizes, err := v.settings(ctx, st, true)
	if err != nil || plan.empty() {
		return nil, err
	}
	upd := qemu.Update{Node: st.Node, VMID: v.p.VMID, Set: plan.set}
	what := slices.Sorted(maps.Keys(plan.set))
	for _, r := range plan.resizes {
		what = append(what, fmt.Sprintf("%s %s → %s", r.disk, fmtSize(r.from), fmtSize(r.to)))
	}
	summary := fmt.Sprintf("configure VM %d: %s", v.p.VMID, strings.Join(what, ", "))
	after := maps.Clone(plan.after)
	return []ansible.Change{{
		ID:      "vm:config",
		Summary: summary,
		Diff:    ansible.TextDiff(confHeader(st.Node, v.p.VMID), renderConf(st.Next.Values), renderConf(after)),
		Apply: func(ctx context.Context) error {
			if !upd.Empty() {
				if _, err := v.send(ctx, write{req: req, what: fmt.Sprintf("update the config of VM %d", v.p.VMID), afterWrite: true,
					settle: func(ctx context.Context) (bool, error) { return v.settingsApplied(ctx, st, "") }}); err != nil {
					if we, ok := pveapi.IsWritten(err); ok {
						return v.afterWrite(ctx, st, slices.Sorted(maps.Keys(plan.set)), we)
					}
					return err
				}
			}
			for _, r := range resizes {
				if _, err := v.send(ctx, write{req: r, what: fmt.Sprintf("grow %s of VM %d to %s", r.Params.Get("disk"), v.p.VMID, fmtSize(sizeOf(r))),
					settle: func(ctx context.Context) (bool, error) { return v.settingsApplied(ctx, st, r.Params.Get("disk")) }}); err != nil {
					return err
				}
			}
			return nil
		},
		Verify: func(ctx context.Context) error { return v.verifySettings(ctx, st) },
		// What of it a running VM keeps for its next start (K10): written,
		// read back, never called applied (issue 23 §4).
		Pending: func() ([]string, string) { return v.waiting(what, plan), "the VM's next start" },
		Predict: func(w *ansible.World) {
			next := qemu.Config{Values: after}
			live, pending := next, st.Pending
			if st.Running {
				// A running VM takes what it can hot-plug; the rest waits
				// for its next start (K10).
				live, pending = qemu.PredictHotplug(st, plan.set)
			}
			n := qemu.State{Node: st.Node, Next: next, Live: live, Pending: pending, Running: st.Running, HA: st.HA}
			vmKey(v.p.VMID).Predict(w, n)
			v.setFinal(n)
		},
	}}, nil
}

// settings plans the configuration against st and checks every write it
// needs (schema, snippets storage) without sending anything. The vm stage
// runs it against a clone's or create's prediction too, so that a refusal
// the inputs and a read can decide comes before the first write.
func (v *vm) settings(ctx context.Context, st qemu.State, warn bool) (settingsPlan, apischema.Request, []apischema.Request, error) {
	var req apischema.Request
	plan, err := planSettings(st.Next, v.w, !v.existed)
	if err != nil {
		return plan, req, nil, err
	}
	if warn {
		for _, w := range plan.warnings {
			v.r.Warn(w)
		}
		if v.w.HasCI && !hasCloudInitDrive(st.Next) && len(plan.set) > 0 {
			v.r.Warn("cloud-init settings are given but the VM has no cloud-init drive (storage:cloudinit on ide2, sata or scsi): the guest will not see them")
		}
	}
	if plan.empty() {
		return plan, req, nil, nil
	}
	if cc, ok := plan.set["cicustom"]; ok {
		if err := v.checkSnippets(ctx, cc); err != nil {
			return plan, req, nil, err
		}
	}
	plan.afterResize()
	if err := v.nameNewDisks(ctx, st, &plan); err != nil {
		return plan, req, nil, err
	}
	upd := qemu.Update{Node: st.Node, VMID: v.p.VMID, Set: plan.set, Digest: st.Next.Digest}
	req = upd.Request()
	if plan.alloc {
		req = upd.AsyncRequest() // allocating a disk: PVE's task variant
	}
	var resizes []apischema.Request
	for _, r := range plan.resizes {
		resizes = append(resizes, qemu.Resize(st.Node, v.p.VMID, r.disk, r.to, ""))
	}
	if err := v.validate(req, resizes); err != nil {
		return plan, req, nil, err
	}
	return plan, req, resizes, nil
}

// validate checks the writes against the node's schema before any is sent;
// MACs check mode cannot know are replaced by a well-formed stand-in.
func (v *vm) validate(reqs apischema.Request, more []apischema.Request) error {
	for _, r := range append([]apischema.Request{reqs}, more...) {
		check := r
		check.Params = maps.Clone(r.Params)
		for k, vals := range check.Params {
			for i, s := range vals {
				s = strings.ReplaceAll(s, qemu.AssignedAtClone, "BC:24:11:00:00:00")
				check.Params[k][i] = strings.ReplaceAll(s, qemu.AssignedAtCreation, "BC:24:11:00:00:00")
			}
		}
		if err := check.Validate(v.version); err != nil {
			return v.schemaError(err)
		}
	}
	return nil
}

// settingsApplied settles a lost write by a read: for the config update,
// none of its keys is left to set; for a resize, disk is no longer to grow.
func (v *vm) settingsApplied(ctx context.Context, st qemu.State, disk string) (bool, error) {
	now, err := v.observe(ctx, st.Node, st.Running, st.HA)
	if err != nil {
		return false, err
	}
	p, err := planSettings(now.Next, v.w, false)
	if err != nil {
		return false, err
	}
	if disk != "" {
		for _, r := range p.resizes {
			if r.disk == disk {
				return false, nil
			}
		}
		return true, nil
	}
	return len(p.set) == 0, nil
}

// verifySettings reads the VM back and plans again: nothing may be left
// to do. On a running VM the keys PVE keeps pending are reported, not
// claimed as live (K10).
func (v *vm) verifySettings(ctx context.Context, st qemu.State) error {
	now, err := v.observe(ctx, st.Node, st.Running, st.HA)
	if err != nil {
		return err
	}
	p, err := planSettings(now.Next, v.w, false)
	if err != nil {
		return err
	}
	v.setFinal(now)
	var grown []string
	for _, r := range p.resizes {
		grown = append(grown, fmt.Sprintf("%s size %s", r.disk, fmtSize(r.from)))
	}
	if err := qemu.StillDiffers(guest.VM, v.p.VMID, p.set, now.Next.Values, grown); err != nil {
		return err
	}
	if v.read != nil {
		v.read.Next, v.read.Live, v.read.Pending = now.Next, now.Live, now.Pending
	}
	return nil
}

// waiting are the parts of the config change (keys, and disks to grow)
// that the VM's pending section still holds: written, not in force.
func (v *vm) waiting(what []string, plan settingsPlan) []string {
	held := map[string]bool{}
	for _, it := range v.pending {
		if it.HasPending || it.Delete > 0 {
			held[it.Key] = true
		}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(plan.set)) {
		if held[k] {
			out = append(out, k)
		}
	}
	for i, r := range plan.resizes {
		if held[r.disk] {
			out = append(out, what[len(plan.set)+i])
		}
	}
	return out
}

// afterWrite settles a config update PVE answered with a failure after it
// wrote (qemu-server's hotplug problems on a running VM): the config and
// its pending section are read back, and the answer says which keys are
// live, which wait for the next start, and which PVE failed to apply and
// why. It is changed, never "nothing done"; the failed keys are returned
// in pending with PVE's message.
func (v *vm) afterWrite(ctx context.Context, st qemu.State, keys []string, we *pveapi.WrittenError) error {
	failed := qemu.AfterWriteErrors(we)
	v.hotplugErrors = failed
	now, err := v.observe(ctx, st.Node, st.Running, st.HA)
	if err != nil {
		return fmt.Errorf("%w; reading the VM back failed: %v", we, err)
	}
	v.setFinal(now)
	held := map[string]bool{}
	for _, it := range now.Pending {
		if it.HasPending || it.Delete > 0 {
			held[it.Key] = true
		}
	}
	var live, waiting, bad []string
	for _, k := range keys {
		switch {
		case failed[k] != "":
			bad = append(bad, fmt.Sprintf("%s (%s)", k, failed[k]))
		case held[k]:
			waiting = append(waiting, k)
		default:
			live = append(live, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(failed)) {
		if !slices.Contains(keys, k) {
			bad = append(bad, fmt.Sprintf("%s (%s)", k, failed[k]))
		}
	}
	none := func(l []string) string {
		if len(l) == 0 {
			return "none"
		}
		return strings.Join(l, ", ")
	}
	return fmt.Errorf("PVE wrote the new config of VM %d, then answered %s; read back: applied (live): %s; pending until the VM's next start: %s; PVE could not apply to the running VM, still pending: %s",
		v.p.VMID, errorHead(we), none(live), none(waiting), strings.Join(bad, "; "))
}

// errorHead is PVE's status line of the answer (400 Parameter
// verification failed.), or the task's failure.
func errorHead(we *pveapi.WrittenError) string {
	var e *pveapi.Error
	if errors.As(we.Cause, &e) {
		return fmt.Sprintf("%d %s", e.Status, e.Message)
	}
	var te *pveapi.TaskError
	if errors.As(we.Cause, &te) {
		return fmt.Sprintf("task %s failed", te.UPID.Type)
	}
	return we.Cause.Error()
}

// setFinal records the config to return: what runs now on a running VM,
// with the waiting changes apart.
func (v *vm) setFinal(st qemu.State) {
	v.final, v.pending = st.Final()
}

func hasCloudInitDrive(c qemu.Config) bool {
	disks, err := c.Disks()
	if err != nil {
		return false
	}
	for _, d := range disks {
		if d.IsCloudInit() {
			return true
		}
	}
	return false
}

// planPower starts or stops the VM after it is configured (network
// settings go in before the first start, K10). An HA-managed guest's
// start/stop goes to the HA manager (PVE turns it into hastart/hastop,
// H4), so the real state is polled until it is reached.
func (v *vm) planPower(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	pw := pveansible.GuestPower{Kind: guest.VM, VMID: v.p.VMID, State: v.p.State, Key: vmKey(v.p.VMID), Read: v.read, Node: v.node, HAManaged: v.haManaged}
	st, want, change, err := pw.Need(ctx, w)
	if err != nil || !change {
		return nil, err
	}
	action := map[bool]string{true: "start", false: "shutdown"}[want]
	req := qemu.Power(st.Node, v.p.VMID, action)
	if !want {
		req.Params.Set("forceStop", "1") // a guest that ignores ACPI is stopped at PVE's timeout
	}
	if err := req.Validate(v.version); err != nil {
		return nil, v.schemaError(err)
	}
	apply := func(ctx context.Context) error {
		task := map[bool]string{true: "qmstart", false: "qmshutdown"}[want]
		if st.HA {
			task = map[bool]string{true: "hastart", false: "hastop"}[want] // PVE asks the HA manager (H4)
		}
		if _, err := v.send(ctx, write{req: req, what: fmt.Sprintf("%s VM %d", pveansible.Verb(want), v.p.VMID), taskType: task,
			settle: func(ctx context.Context) (bool, error) { r, err := v.isRunning(ctx, st.Node); return r == want, err }}); err != nil {
			return err
		}
		return v.waitRunning(ctx, st.Node, want)
	}
	refresh := func(ctx context.Context) {
		if want {
			// Started: what was pending is live now; return that.
			if now, err := v.observe(ctx, st.Node, true, st.HA); err == nil {
				v.setFinal(now)
			}
		}
	}
	return []ansible.Change{pw.Change(pveansible.PowerChange{St: st, Want: want, Apply: apply, Running: v.isRunning, Refresh: refresh, SetFinal: v.setFinal})}, nil
}

// waitRunning polls the VM's real state, bounded by the run's deadline: an
// HA request task ends before the HA manager acts.
func (v *vm) waitRunning(ctx context.Context, node string, want bool) error {
	if err := guest.WaitRunning(ctx, v.c, guest.VM, node, v.p.VMID, want, v.poll); err != nil {
		return fmt.Errorf("VM %d did not reach state %s before the deadline", v.p.VMID, v.p.State)
	}
	return nil
}

func fmtSize(n int64) string {
	if n == 0 {
		return "0"
	}
	return pveformat.FormatSize(n)
}

func sizeOf(r apischema.Request) int64 {
	var n int64
	fmt.Sscan(r.Params.Get("size"), &n)
	return n
}

// haManaged reads whether HA manages the VM (qemu-server then asks the
// HA manager, H4): an ignored resource does not count.
func (v *vm) haManaged(ctx context.Context) (bool, error) {
	return guest.HAManaged(ctx, v.c, guest.VM, v.p.VMID)
}

// checkSnippets: every cicustom volume is on a storage that holds
// snippets (S4), else PVE would refuse it at the next start.
func (v *vm) checkSnippets(ctx context.Context, cicustom string) error {
	stores, err := v.readStorages(ctx)
	if err != nil {
		return err
	}
	for _, part := range strings.Split(cicustom, ",") {
		kind, volid, ok := strings.Cut(part, "=")
		store, _, isVol := strings.Cut(volid, ":")
		if !ok || !isVol {
			return fmt.Errorf("cicustom: %q is not kind=storage:snippets/file (user, network, meta, vendor)", part)
		}
		st, known := stores[store]
		switch {
		case !known:
			return fmt.Errorf("cicustom: %s: storage '%s' does not exist", kind, store)
		case !slices.Contains(st.Content, "snippets"):
			return fmt.Errorf("cicustom: %s: storage '%s' does not hold snippets; allow them first (content: [..., snippets], S4)", kind, store)
		}
	}
	return nil
}

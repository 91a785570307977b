package pveclone

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/modules/pveclone/options"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
	"github.com/gopve/proxmox/modules-src/pveapi/storages"
)

// vm carries one run's knowledge from stage to stage and to the report.
type vm struct {
	r    *ansible.Run
	c    *pveapi.Client
	p    options.Params
	w    *options.Want
	poll time.Duration
	auto *options.VMIDRange // vmid: auto, within this range

	volumes  map[string][]string    // the VMID's volumes per node and storage, read once (diskname.go)
	storages map[string]storageInfo // GET /storage, read once for the disk names
	notYet   map[string]bool        // check mode: nodes assumed made by earlier tasks (notyet.go)
	// check mode: storages assumed defined by earlier tasks (storageNotYet)
	assumedStores map[string]bool
	// tplNotYet: check mode, the template is assumed made by an earlier
	// task; the clone and its configuration are one predicted change.
	tplNotYet bool

	version int
	existed bool
	created bool // cloned or built by this run
	node    string
	guest   clusterguests.Guest
	read    *qemu.State // the existing VM as stage vm read it (reused by stage config)
	before  map[string]string

	final         map[string]string
	pending       []qemu.PendingItem
	cloneWarnings []string
	taskLog       []string
	hotplugErrors map[string]string // PVE's message per key it wrote but could not apply (afterWrite)
}

func vmKey(vmid int) ansible.Key[qemu.State] {
	return ansible.Key[qemu.State]("pve_clone:vm:" + strconv.Itoa(vmid))
}

func run(r *ansible.Run, o pveapi.Options) error {
	var p options.Params
	if err := r.Decode(&p); err != nil {
		return err
	}
	auto, err := options.ParseVMID(&p)
	if err != nil {
		return err
	}
	w, err := options.NewWant(p)
	if err != nil {
		return err
	}
	if p.AsTemplate && p.State == "started" {
		return fmt.Errorf("as_template: a template never runs (PVE refuses to start one, and to convert a running VM), so state: started contradicts as_template: true; give state: present or stopped; nothing was changed")
	}
	if p.AsTemplate && p.AgentWait > 0 {
		return fmt.Errorf("agent_wait: a template never runs, so there is no guest agent to wait for with as_template: true; nothing was changed")
	}
	if p.AgentWait < 0 {
		return fmt.Errorf("agent_wait: %d seconds is negative", p.AgentWait)
	}
	if p.State != "absent" && p.Template == "" && p.Format != "" {
		return fmt.Errorf("format: only for a clone (give template), a bare VM's disks take format in disks")
	}
	if !p.Full && p.Storage != "" {
		return fmt.Errorf("storage: parameter 'storage' not allowed for linked clones (full: false)")
	}
	if !p.Full && p.Format != "" {
		return fmt.Errorf("format: parameter 'format' not allowed for linked clones (full: false)")
	}
	c, err := pveansible.ForRunSecret(r, p.Connection.API(), o, "cipassword", p.CIPassword != nil && p.State != "absent")
	if err != nil {
		return err
	}
	v := &vm{r: r, c: c, p: p, w: w, poll: o.Poll(), auto: auto}
	defer v.report()
	if err := r.Stage("vm", v.planVM); err != nil {
		return err
	}
	if p.State == "absent" || v.tplNotYet {
		return nil
	}
	if err := r.Stage("config", v.planConfig); err != nil {
		return err
	}
	if err := r.Stage("power", v.planPower); err != nil {
		return err
	}
	if p.AsTemplate {
		if err := r.Stage("template", v.planTemplate); err != nil {
			return err
		}
	}
	if p.AgentWait > 0 && p.State == "started" && !r.CheckMode() {
		return v.waitAgent(r.Context(), time.Duration(p.AgentWait)*time.Second)
	}
	return nil
}

// waitAgent waits, only when asked and bounded (K20), for the guest agent
// of the running VM to answer.
func (v *vm) waitAgent(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last error
	for {
		var out any
		last = v.c.Get(ctx, pveapi.Path("/nodes/%s/qemu/%s/agent/network-get-interfaces", v.node, strconv.Itoa(v.p.VMID)), nil, &out)
		if last == nil {
			v.r.Set("agent_ready", true)
			return nil
		}
		select {
		case <-ctx.Done():
			v.r.Set("agent_ready", false)
			return fmt.Errorf("agent_wait: the guest agent of VM %d did not answer within %v (last: %v); is qemu-guest-agent installed and enabled in the image? (K20)", v.p.VMID, within, last)
		case <-time.After(v.poll):
		}
	}
}

// planVM finds the VM by VMID cluster-wide (H3) and plans its creation,
// or its destruction; an existing VM must be ours.
func (v *vm) planVM(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	major, guests, err := clusterguests.Survey(ctx, v.c)
	v.version = major
	if err != nil {
		return nil, err
	}
	if v.auto != nil {
		if ok, err := v.resolveAuto(guests); err != nil || !ok {
			return nil, err
		}
	}
	g, found := clusterguests.Find(guests, v.p.VMID)
	if found {
		if err := v.owned(g); err != nil {
			return nil, err
		}
		v.existed, v.node, v.guest = true, g.Node, g
		if v.p.State == "absent" {
			return v.planDestroy(ctx, g)
		}
		st, err := v.observe(ctx, g.Node, g.Status == "running", g.HAManaged())
		if err != nil {
			return nil, err
		}
		if err := v.checkOrigin(guests, st.Next); err != nil {
			return nil, err
		}
		if err := v.checkConvertible(st); err != nil {
			return nil, err
		}
		v.read = &st
		v.before = st.Next.Values
		if v.p.Node != "" && g.Node != v.p.Node {
			return v.planMoveExisting(ctx, g, st)
		}
		return nil, nil
	}
	if v.p.State == "absent" {
		return nil, nil
	}
	if v.p.Name == "" && !v.p.Adopt {
		// The rerun of a nameless create could not tell this VM from
		// another's at the VMID: refused now, as every rerun would be.
		return nil, fmt.Errorf("name: required to create VM %d (the name is what proves on every later run that the VM at the VMID is this task's, K1); give name, or adopt: true to manage whatever VM holds the VMID then; nothing was changed", v.p.VMID)
	}
	if v.p.Template == "" {
		return v.planCreate(ctx)
	}
	return v.planClone(ctx, guests)
}

// owned refuses a VMID that holds something else than what was asked:
// another name, a template, a container (seed 001 would reconfigure it),
// or any VM when the task gives no name to prove it is its own and does
// not say adopt (issue 23 §5). Decided from the guest list alone, before
// any other read or write, in check mode as in a real run.
func (v *vm) owned(g clusterguests.Guest) error {
	what := fmt.Sprintf("VMID %d is held by %s %q on node %s", g.VMID, map[bool]string{true: "VM", false: "container"}[g.IsVM()], g.Name, g.Node)
	switch {
	case g.Lock == "clone" || g.Lock == "create":
		return fmt.Errorf("vmid: VMID %d is being created right now on node %s (lock %s) by another run or user (K18); nothing was changed: rerun once it is done", g.VMID, g.Node, g.Lock)
	case !g.IsVM():
		return fmt.Errorf("vmid: %s, not a QEMU VM; nothing was changed", what)
	case g.Template && !v.p.AsTemplate:
		return fmt.Errorf("vmid: %s, which is a template; this module never configures a template (as_template: true leaves one of this task's name alone); nothing was changed", what)
	case v.p.Name != "" && g.Name != v.p.Name:
		return fmt.Errorf("vmid: %s, not %q: it is not this task's VM, so it is neither configured nor destroyed; nothing was changed", what, v.p.Name)
	case v.p.Name == "" && !v.p.Adopt:
		return fmt.Errorf("name: %s and this task gives no name to prove it is its own: an existing VMID is never taken over silently (K1); give name: %q if it is this task's VM, or adopt: true to manage it whatever its name; nothing was changed", what, g.Name)
	}
	return nil
}

// observe reads the VM once: GET …/pending gives the live values, the
// pending ones and the digest (one read for both views).
func (v *vm) observe(ctx context.Context, node string, running, ha bool) (qemu.State, error) {
	return qemu.ReadState(ctx, v.c, guest.VM, node, v.p.VMID, running, ha)
}

// findTemplate is the source by VMID or exact name, wherever it lives.
func (v *vm) findTemplate(ctx context.Context, guests []clusterguests.Guest) (clusterguests.Guest, error) {
	if id, err := strconv.Atoi(v.p.Template); err == nil {
		g, ok := clusterguests.Find(guests, id)
		switch {
		case !ok:
			return g, v.templateNotYet(v.emptyListHint(ctx, guests, fmt.Errorf("template: no VM %d in the cluster", id)))
		case !g.IsVM():
			return g, fmt.Errorf("template: %d is a container, not a VM template", id)
		case !g.Template:
			return g, fmt.Errorf("template: VM %d (%s) on %s is not a template", id, g.Name, g.Node)
		}
		return g, nil
	}
	g, err := clusterguests.TemplateByName(guests, v.p.Template)
	if err != nil {
		err = v.emptyListHint(ctx, guests, fmt.Errorf("template: %w", err))
		if len(clusterguests.TemplatesNamed(guests, v.p.Template)) == 0 {
			return g, v.templateNotYet(err)
		}
		return g, err
	}
	return g, nil
}

// emptyListHint: a token without VM.Audit sees an empty list (K19); say so
// rather than claim the template does not exist.
func (v *vm) emptyListHint(ctx context.Context, guests []clusterguests.Guest, err error) error {
	if len(guests) > 0 {
		return err
	}
	if perr := v.c.RequireAny(ctx, "/vms", "VM.Audit"); perr != nil {
		return fmt.Errorf("%w; the cluster's guest list is empty and %v: the token may simply not see the template (K19)", err, perr)
	}
	return err
}

// readStorages is GET /storage, for the prediction and the pre-checks.
func (v *vm) readStorages(ctx context.Context) (map[string]storageInfo, error) {
	return storages.Read(ctx, v.c)
}

func (v *vm) nodeExists(ctx context.Context, node string) error {
	missing, err := guest.CheckNode(ctx, v.c, node)
	if err != nil || missing == nil {
		return err
	}
	// In a check run of the whole site the node may be one the cluster
	// phase joins (ansible.NotYet): the VM is predicted on it all the same.
	return v.nodeNotYet(node, missing)
}

// lockRetries bounds how often a clone or create whose task failed on a
// storage or config lock, and provably left nothing, is tried again (K13:
// parallel clones queue on the storage lock, and PVE gives up waiting
// after 10 s — cfs_lock / lock_file).
const lockRetries = 5

// sendCreate sends a clone or create once; when its task failed on a
// lock timeout and a read proves it left nothing (clone_vm frees what it
// allocated), the same call is a new attempt, not a duplicate: it is
// tried again after a backoff, a bounded number of times, within the
// run's deadline.
func (v *vm) sendCreate(ctx context.Context, w write, done func(*pveapi.TaskResult)) error {
	for attempt := 1; ; attempt++ {
		res, err := v.send(ctx, w)
		done(res)
		if err == nil {
			return nil
		}
		err = v.leftNothing(ctx, err)
		if !ansible.IsNothingChanged(err) || !lockTimeout(err) || attempt > lockRetries {
			return err
		}
		wait := v.poll * time.Duration(5<<(attempt-1))
		v.r.Warn(fmt.Sprintf("%s: attempt %d failed on a lock held by parallel work (%v); nothing was left, trying again in %v (K13)", w.what, attempt, err, wait))
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}

func lockTimeout(err error) bool {
	var te *pveapi.TaskError
	if !errors.As(err, &te) {
		return false
	}
	s := te.ExitStatus
	return strings.Contains(s, "got lock request timeout") || (strings.Contains(s, "can't lock file") && strings.Contains(s, "got timeout"))
}

// leftNothing: a clone or create task that failed cleans up after itself
// (clone_vm frees the new volumes and unlinks the config); one read proves
// it, and the change is then reported as not made.
func (v *vm) leftNothing(ctx context.Context, err error) error {
	if pveapi.NothingDone(err) && strings.Contains(err.Error(), "already exists") {
		return ansible.NothingChanged(fmt.Errorf("vmid: VMID %d was taken between this run's read and its clone, by another run or user (K18): %w", v.p.VMID, err))
	}
	var te *pveapi.TaskError
	if !errors.As(err, &te) || te.Found {
		// A task found by a read after a lost answer is no answer to this
		// request: never settled as "nothing done".
		return err
	}
	ok, rerr := v.exists(ctx)
	if rerr == nil && !ok {
		return ansible.NothingChanged(fmt.Errorf("%w (VM %d does not exist after the failed task: nothing was left)", err, v.p.VMID))
	}
	// The task died on the new VMID's config lock (clone_vm's
	// lock_config_full around $clonefn, create_vm's create_and_lock_config:
	// taken before anything is made) and the VMID now holds a VM: another
	// run or user took it meanwhile (K18). Named as such; still unverified,
	// since no read proves what a started task did not do.
	if rerr == nil && takenMeanwhile(err, v.p.VMID) {
		return fmt.Errorf("vmid: VMID %d was taken between this run's read and its clone, by another run or user (K18): %w", v.p.VMID, err)
	}
	return err
}

// exists settles a lost create/clone answer: the VMID shows in the
// cluster's guest list.
func (v *vm) exists(ctx context.Context) (bool, error) {
	return clusterguests.Exists(ctx, v.c, v.p.VMID)
}

// waitConfig waits, bounded by the run's deadline, until the new VM's
// config is on the target node and unlocked (K4): a cross-node clone
// moves it there at its very end, slow storage ends the task before the
// file shows, and the node answers slowly right after a big copy (K5).
func (v *vm) waitConfig(ctx context.Context, node string) error {
	read := func(ctx context.Context) (qemu.Config, error) { return qemu.GetConfig(ctx, v.c, node, v.p.VMID, false) }
	return qemu.WaitUnlocked(ctx, guest.VM, v.p.VMID, node, read, func() <-chan time.Time { return time.After(v.poll) })
}

func (v *vm) verifyPresent(ctx context.Context, node string) error {
	read := func(ctx context.Context) (qemu.Config, error) { return qemu.GetConfig(ctx, v.c, node, v.p.VMID, false) }
	return qemu.VerifyCreated(ctx, guest.VM, v.p.VMID, node, read, "name", v.p.Name)
}

func (v *vm) isRunning(ctx context.Context, node string) (bool, error) {
	return guest.Running(ctx, v.c, guest.VM, node, v.p.VMID)
}

func confHeader(node string, vmid int) string {
	return fmt.Sprintf("/etc/pve/nodes/%s/qemu-server/%d.conf", node, vmid)
}

// renderConf prints a config as qm config does: key: value, sorted.
func renderConf(values map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(values)) {
		val := values[k]
		if k == "cipassword" {
			val = qemu.Masked
		}
		fmt.Fprintf(&b, "%s: %s\n", k, val)
	}
	return b.String()
}

// storageInfo is what the prediction needs of a storage (GET /storage).
type storageInfo = storages.Info

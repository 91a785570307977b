package pvecontainer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// ct carries one run's knowledge from stage to stage and to the report.
type ct struct {
	r    *ansible.Run
	c    *pveapi.Client
	p    params
	w    *want
	poll time.Duration

	version  int
	existed  bool
	node     string
	read     *qemu.State // the existing CT as stage container read it
	storages map[string]storageInfo

	final   map[string]string
	pending []qemu.PendingItem
	taskLog []string
}

func ctKey(vmid int) ansible.Key[qemu.State] {
	return ansible.Key[qemu.State]("pve_container:ct:" + strconv.Itoa(vmid))
}

func run(r *ansible.Run, o pveapi.Options) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	if p.VMID < 100 || p.VMID > 999999999 {
		return fmt.Errorf("vmid: %d is out of range (100 … 999999999)", p.VMID)
	}
	w, err := buildWant(p)
	if err != nil {
		return err
	}
	c, err := pveansible.ForRunSecret(r, p.Connection.API(), o, "password", p.Password != nil && p.State != "absent")
	if err != nil {
		return err
	}
	v := &ct{r: r, c: c, p: p, w: w, poll: o.Poll()}
	defer v.report()
	if err := r.Stage("container", v.planCT); err != nil {
		return err
	}
	if p.State == "absent" {
		return nil
	}
	if err := r.Stage("config", v.planConfig); err != nil {
		return err
	}
	return r.Stage("power", v.planPower)
}

// planCT finds the CT by VMID cluster-wide (H3) and plans its creation or
// its destruction; an existing CT must be ours.
func (v *ct) planCT(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	major, guests, err := clusterguests.Survey(ctx, v.c)
	v.version = major
	if err != nil {
		return nil, err
	}
	g, found := clusterguests.Find(guests, v.p.VMID)
	if !found {
		if v.p.State == "absent" {
			return nil, nil
		}
		// K19: the guest list leaves out what the token may not audit, so
		// a missing VMID is only missing with VM.Audit on it.
		if err := v.c.RequireAny(ctx, fmt.Sprintf("/vms/%d", v.p.VMID), "VM.Audit"); err != nil {
			return nil, fmt.Errorf("vmid: CT %d is not in the cluster's guest list, which shows only what the token may see: %w (VM.Audit on /vms/%d, K19); nothing was changed", v.p.VMID, err, v.p.VMID)
		}
		return v.planCreate(ctx)
	}
	if err := v.owned(g); err != nil {
		return nil, err
	}
	v.existed, v.node = true, g.Node
	st, err := v.observe(ctx, g.Node, g.Status == "running", g.HAManaged())
	if err != nil {
		return nil, err
	}
	if v.p.State == "absent" {
		return v.planDestroy(ctx, g, st)
	}
	if err := checkUnprivileged(st.Next, v.w); err != nil {
		return nil, err
	}
	v.read = &st
	return nil, nil
}

// owned refuses a VMID that holds something else than this task's CT: a
// VM, a template, another hostname, or any CT when the task gives no
// hostname to prove it and does not say adopt (K1). Decided from the
// guest list alone, before any other read or write.
func (v *ct) owned(g clusterguests.Guest) error {
	what := fmt.Sprintf("VMID %d is held by %s %q on node %s", g.VMID, map[bool]string{true: "VM", false: "container"}[g.IsVM()], g.Name, g.Node)
	switch {
	case g.Lock == "create":
		return fmt.Errorf("vmid: VMID %d is being created right now on node %s (lock create) by another run or user (K18); nothing was changed: rerun once it is done", g.VMID, g.Node)
	case g.IsVM():
		return fmt.Errorf("vmid: %s, not a container; nothing was changed", what)
	case g.Template:
		return fmt.Errorf("vmid: %s, which is a template; this module never configures a template; nothing was changed", what)
	case v.p.Adopt:
		return nil
	case v.p.Hostname != "" && g.Name != v.p.Hostname:
		return fmt.Errorf("vmid: %s, not %q: it is not this task's container, so it is neither configured nor destroyed; nothing was changed", what, v.p.Hostname)
	case v.p.Hostname == "":
		return fmt.Errorf("hostname: %s and this task gives no hostname to prove it is its own: an existing VMID is never taken over silently (K1); give hostname: %q if it is this task's container, or adopt: true; nothing was changed", what, g.Name)
	}
	return nil
}

// observe reads the CT once: GET …/pending gives the live values, the
// pending ones and the digest.
func (v *ct) observe(ctx context.Context, node string, running, ha bool) (qemu.State, error) {
	return qemu.ReadState(ctx, v.c, guest.CT, node, v.p.VMID, running, ha)
}

// send validates req against the node's schema and dispatches it once
// (pveansible.Send); a failed task's log is kept for the result.
func (v *ct) send(ctx context.Context, req apischema.Request, w pveapi.Write, taskType string) error {
	if err := req.Validate(v.version); err != nil {
		return ansible.NothingChanged(v.schemaError(err))
	}
	_, log, err := pveansible.Send(ctx, v.r, v.c, req, w, taskType)
	if log != nil {
		v.taskLog = log
	}
	return err
}

// schemaError names the Ansible options behind the refused PVE keys.
func (v *ct) schemaError(err error) error { return pveansible.SchemaError(err, optionOf) }

// exists settles a lost answer: the VMID is in the cluster's guest list.
func (v *ct) exists(ctx context.Context) (bool, error) {
	return clusterguests.Exists(ctx, v.c, v.p.VMID)
}

func (v *ct) isRunning(ctx context.Context, node string) (bool, error) {
	return guest.Running(ctx, v.c, guest.CT, node, v.p.VMID)
}

// setFinal records the config to return: what runs now on a running CT,
// with the waiting changes apart.
func (v *ct) setFinal(st qemu.State) {
	v.final, v.pending = st.Final()
}

// report sets the result every run, failed or not.
func (v *ct) report() {
	v.r.Set("vmid", v.p.VMID)
	v.r.Set("existed", v.existed)
	if v.node != "" {
		v.r.Set("node", v.node)
	}
	pveansible.ReportVersion(v.r, v.version)
	cfg, macs := map[string]string{}, map[string]string{}
	if v.final != nil && v.p.State != "absent" {
		cfg = maps.Clone(v.final)
		for k, val := range cfg {
			if netKeyRe.MatchString(k) {
				if n, err := pveformat.Parse(val, netShape); err == nil {
					macs[k], _ = n.Get("hwaddr")
				}
			}
		}
	}
	v.r.Set("config", cfg)
	v.r.Set("mac", macs)
	pending := []map[string]any{}
	for _, it := range v.pending {
		pending = append(pending, it.Row())
	}
	v.r.Set("pending", pending)
	v.r.Set("restart_required", len(pending) > 0)
	if v.taskLog != nil {
		v.r.Set("task_log", v.taskLog)
	}
}

func confHeader(node string, vmid int) string {
	return fmt.Sprintf("/etc/pve/nodes/%s/lxc/%d.conf", node, vmid)
}

// renderConf prints a config as pct config does: key: value, sorted.
func renderConf(values map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(values)) {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.TrimRight(values[k], "\n"))
	}
	return b.String()
}

package pveclone

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/modules/pveclone/options"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// vmid: auto. The module never picks a VMID unless asked, and then only
// within vmid_range. Identity stays a fact PVE keeps: on a rerun the VM is
// the one guest of the range carrying the task's name; when there is none,
// the lowest free VMID of the range is claimed by the clone or create call
// itself, which PVE refuses when the VMID is taken (clone_vm: "unable to
// create VM N: config file already exists", and the new VMID's config
// lock; create_vm: create_and_lock_config → check_vmid_unused "VM N
// already exists on node"). That refusal changed nothing, so the next free
// VMID is tried, a bounded number of times. /cluster/nextid is not used: it
// reserves nothing (K18).

// autoAttempts bounds how many VMIDs one run tries to claim when each is
// taken between its read and its call.
const autoAttempts = 8

// resolveAuto finds the VM of an auto task again by its name within the
// range, or picks the VMID a clone or create would claim now. ok is false
// when there is none and none is to be made (state absent).
func (v *vm) resolveAuto(guests []clusterguests.Guest) (bool, error) {
	var named []clusterguests.Guest
	for _, g := range guests {
		if v.auto.Has(g.VMID) && g.Name == v.p.Name {
			named = append(named, g)
		}
	}
	switch {
	case len(named) == 1:
		v.p.VMID = named[0].VMID
		return true, nil
	case len(named) > 1:
		var list []string
		for _, g := range named {
			list = append(list, fmt.Sprintf("%d on %s", g.VMID, g.Node))
		}
		slices.Sort(list)
		return false, fmt.Errorf("vmid: auto: %d guests are named %q in vmid_range %s (%s); the name must match exactly one: give vmid to say which; nothing was changed", len(named), v.p.Name, v.auto, strings.Join(list, ", "))
	case v.p.State == "absent":
		return false, nil
	}
	id, err := v.lowestFree(guests, nil)
	if err != nil {
		return false, err
	}
	v.p.VMID = id
	if v.r.CheckMode() {
		v.r.Warn(fmt.Sprintf("vmid: auto: no VM named %q in vmid_range %s; the clone or create would claim VMID %d, the lowest free one now; the real run claims the lowest free one when it runs, which differs if the range changes meanwhile", v.p.Name, v.auto, id))
	}
	return true, nil
}

// lowestFree is the lowest VMID of the range that no guest of the cluster
// holds (VMIDs are cluster-wide, VMs and containers alike) and that this
// run was not already refused.
func (v *vm) lowestFree(guests []clusterguests.Guest, refused map[int]bool) (int, error) {
	used := map[int]bool{}
	for _, g := range guests {
		used[g.VMID] = true
	}
	for id := v.auto.Lo; id <= v.auto.Hi; id++ {
		if !used[id] && !refused[id] {
			return id, nil
		}
	}
	return 0, ansible.NothingChanged(fmt.Errorf("vmid_range: every VMID of %s is taken (%d by guests of the cluster, %d refused to this run as taken); nothing was changed: widen the range or free a VMID", v.auto, countIn(used, *v.auto), len(refused)))
}

func countIn(ids map[int]bool, r options.VMIDRange) int {
	n := 0
	for id := range ids {
		if r.Has(id) {
			n++
		}
	}
	return n
}

// claim sends the clone or create built by mk for the VMID the plan
// picked; with vmid: auto, a refusal because that VMID was taken meanwhile
// (a proven non-change) makes it try the lowest VMID still free, after one
// read of the guest list, at most autoAttempts times. A lost answer is
// settled by the dispatch machinery as for any write, never re-sent.
func (v *vm) claim(ctx context.Context, mk func(vmid int) (write, error), done func(*pveapi.TaskResult)) error {
	refused := map[int]bool{}
	for attempt := 1; ; attempt++ {
		w, err := mk(v.p.VMID)
		if err != nil {
			return ansible.NothingChanged(err)
		}
		err = v.sendCreate(ctx, w, done)
		if err == nil || v.auto == nil || !takenMeanwhile(err, v.p.VMID) {
			return err
		}
		refused[v.p.VMID] = true
		if attempt >= autoAttempts {
			return ansible.NothingChanged(fmt.Errorf("vmid: auto: %d VMIDs of vmid_range %s were taken between this run's read and its call, the last %d (%v); nothing was changed: rerun", attempt, v.auto, v.p.VMID, err))
		}
		guests, rerr := clusterguests.Guests(ctx, v.c)
		if rerr != nil {
			return ansible.NothingChanged(fmt.Errorf("%w; then the guest list could not be read to pick another VMID: %v", err, rerr))
		}
		next, perr := v.lowestFree(guests, refused)
		if perr != nil {
			return perr
		}
		v.r.Warn(fmt.Sprintf("vmid: auto: VMID %d was taken meanwhile by another run or user (PVE refused it, nothing was made); claiming %d", v.p.VMID, next))
		v.p.VMID = next
	}
}

// takenMeanwhile: PVE refused the clone or create because the VMID is
// held — synchronously (config file already exists; VM N already exists
// on node) or in the clone worker, which re-runs that check under the new
// VMID's lock, could not take that lock (another clone of it holds it), or
// could not write its temporary config (another node holds the VMID).
// Each time the call made nothing of its own.
//
// Only PVE's answer to this very request counts: a task found by a read
// after the answer was lost (TaskError.Found), or a lost answer no read
// settled, is no refusal of ours, and claiming another VMID then could
// make a second VM of one name (issue 23 §1).
func takenMeanwhile(err error, vmid int) bool {
	var te *pveapi.TaskError
	if errors.As(err, &te) {
		if te.Found {
			return false
		}
		s := te.ExitStatus
		return strings.Contains(s, "already exists") ||
			(strings.Contains(s, fmt.Sprintf("lock-%d.conf", vmid)) && strings.Contains(s, "got timeout")) ||
			// pmxcfs refuses the temporary config when another node holds the
			// VMID (memdb.c vmlist_different_vm_exists), before any volume.
			(strings.Contains(s, fmt.Sprintf("/qemu-server/%d.conf' failed: File exists", vmid)))
	}
	return ansible.IsNothingChanged(err) && strings.Contains(err.Error(), "already exists")
}

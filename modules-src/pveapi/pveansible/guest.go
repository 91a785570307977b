package pveansible

import (
	"context"
	"fmt"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi/guest"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// GuestState is the guest as a later stage of pve_clone or pve_container
// plans against it: what the world holds under key (a prediction in check
// mode), else what the first stage read (first: a no-op run costs no
// read more), else what read reads (a guest this run made).
func GuestState(ctx context.Context, w *ansible.World, key ansible.Key[qemu.State], first *qemu.State, read func(context.Context) (qemu.State, error)) (qemu.State, error) {
	return key.Get(ctx, w, func(ctx context.Context) (qemu.State, error) {
		if first != nil {
			return *first, nil
		}
		return read(ctx)
	})
}

// GuestPower is the power stage pve_clone and pve_container share: a VM
// and a CT are started and stopped alike (pve-guest-common; through the
// HA manager when HA manages the guest, H4), only the request, its task
// and what each module reads back differ.
type GuestPower struct {
	Kind  guest.Kind
	VMID  int
	State string                  // the task's state: started, stopped (anything else: no power change)
	Key   ansible.Key[qemu.State] // the guest as the config stage left it
	Read  *qemu.State             // the existing guest as its first stage read it; nil: made by this run
	Node  string                  // where this run made it
	// HAManaged asks the HA config whether it manages the guest, when the
	// guest list did not say so.
	HAManaged func(ctx context.Context) (bool, error)
}

// Need returns the guest's state and the wanted power (running or not),
// and whether the power must change at all.
func (p GuestPower) Need(ctx context.Context, w *ansible.World) (st qemu.State, want, change bool, err error) {
	if p.State != "started" && p.State != "stopped" {
		return st, false, false, nil
	}
	st, err = GuestState(ctx, w, p.Key, p.Read, func(context.Context) (qemu.State, error) {
		return qemu.State{Node: p.Node}, nil // made by this run: stopped
	})
	if err != nil {
		return st, false, false, err
	}
	want = p.State == "started"
	if st.Running == want {
		return st, want, false, nil
	}
	if !st.HA {
		// The guest list's hastate lags the HA manager: ask the HA config
		// (only when the power changes, so a no-op run stays at three reads).
		managed, err := p.HAManaged(ctx)
		if err != nil {
			return st, want, false, err
		}
		st.HA = managed
	}
	return st, want, true, nil
}

// PowerChange is one start or stop of the guest in st.
type PowerChange struct {
	St    qemu.State
	Want  bool
	Apply func(ctx context.Context) error // sends the request and waits for the state
	// Running reads whether the guest runs on node.
	Running func(ctx context.Context, node string) (bool, error)
	// Refresh reads the guest back once its power is proved.
	Refresh func(ctx context.Context)
	// SetFinal records the predicted guest for the result.
	SetFinal func(qemu.State)
}

// Verb is how the summary and messages name the change: start or stop.
func Verb(want bool) string { return map[bool]string{true: "start", false: "stop"}[want] }

// Via is what the summary says of a change HA carries out.
func Via(ha bool) string {
	if ha {
		return " through HA"
	}
	return ""
}

// Change is the ansible.Change of c: its summary, the proof by a read of
// the real state, and the prediction (a started guest runs what was
// pending).
func (p GuestPower) Change(c PowerChange) ansible.Change {
	st, want, verb, via := c.St, c.Want, Verb(c.Want), Via(c.St.HA)
	return ansible.Change{
		ID:      p.Kind.SID + ":" + p.State,
		Summary: fmt.Sprintf("%s %s %d on %s%s", verb, p.Kind.Word, p.VMID, st.Node, via),
		Apply:   c.Apply,
		Verify: func(ctx context.Context) error {
			r, err := c.Running(ctx, st.Node)
			if err != nil {
				return err
			}
			if r != want {
				return fmt.Errorf("%s %d is %s after the %s", p.Kind.Word, p.VMID, map[bool]string{true: "running", false: "stopped"}[r], verb)
			}
			c.Refresh(ctx)
			return nil
		},
		Predict: func(w *ansible.World) {
			n := st
			n.Running = want
			if want {
				n.Live, n.Pending = n.Next, nil
			}
			p.Key.Predict(w, n)
			c.SetFinal(n)
		},
	}
}

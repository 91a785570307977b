package pveansible

import (
	"context"
	"fmt"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
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

// StopBeforeDestroy is the first of state: absent's two changes on a
// running guest (one change per write, issue 23 §2): a hard stop (the
// guest is about to go), sent once. PVE turns it into an HA request
// (hastop) when HA manages the guest (H4: vm_stop runs `ha-manager
// crm-command stop <sid> 0`, which the CRM and then the LRM carry out in
// their rounds), so the change waits, bounded by the run's deadline,
// until PVE reports the guest stopped: destroy_vm refuses a running guest
// ("VM N is running - destroy failed").
type StopBeforeDestroy struct {
	Kind      guest.Kind
	Guest     clusterguests.Guest
	HAManaged bool   // the destroy checks found HA managing it (guest.DestroyCheck)
	Task      string // the stop's own task type (qmstop, vzstop); hastop through HA
	// Send sends the stop request once, as the module sends its writes;
	// settle is the read that decides a lost answer.
	Send func(ctx context.Context, what, task string, settle func(context.Context) (bool, error)) error
	// Client and Poll read and wait for the guest's power.
	Client pveapi.Getter
	Poll   time.Duration
}

// Change is the stop as an ansible.Change, proved by a read of the
// guest's power.
func (s StopBeforeDestroy) Change() ansible.Change {
	g, word := s.Guest, s.Kind.Word
	task, via := s.Task, ""
	if s.HAManaged {
		task, via = "hastop", Via(true)
	}
	header := fmt.Sprintf("%s %d", word, g.VMID)
	running := func(ctx context.Context) (bool, error) { return guest.Running(ctx, s.Client, s.Kind, g.Node, g.VMID) }
	return ansible.Change{
		ID:      s.Kind.SID + ":absent-stop",
		Summary: fmt.Sprintf("stop %s %d (%s) on %s%s before destroying it", word, g.VMID, g.Name, g.Node, via),
		Diff:    &ansible.Diff{Before: "status: running\n", After: "status: stopped\n", BeforeHeader: header, AfterHeader: header},
		Apply: func(ctx context.Context) error {
			stopped := func(ctx context.Context) (bool, error) { r, err := running(ctx); return !r, err }
			if err := s.Send(ctx, fmt.Sprintf("stop %s %d%s", word, g.VMID, via), task, stopped); err != nil {
				return err
			}
			if err := guest.WaitRunning(ctx, s.Client, s.Kind, g.Node, g.VMID, false, s.Poll); err != nil {
				return fmt.Errorf("%s %d was asked to stop%s but PVE still reports it running: it was not destroyed: %w", word, g.VMID, via, err)
			}
			return nil
		},
		Verify: func(ctx context.Context) error {
			r, err := running(ctx)
			if err != nil {
				return err
			}
			if r {
				return fmt.Errorf("%s %d is still running after the stop", word, g.VMID)
			}
			return nil
		},
	}
}

package pveapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// Issue 23 §1: a read that settles a lost answer must prove the object is
// ours. These tests fail on the settle that took any task of the same type
// and id in the node's list (for a clone, the template's VMID) as ours.

// identityLab is one node with a template (9000) and two clients: ours
// (the lab token) and another tenant's token with the same rights.
type identityLab struct {
	s           *pvesim.Sim
	ours, other *pveapi.Client
}

func newIdentityLab(t *testing.T) *identityLab {
	t.Helper()
	s := pveapitest.StartWith(t, 9, 1, func(c *pvesim.Config) { c.AllocDuration = 20 * time.Millisecond })
	if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 9000, Template: true, Config: map[string]string{
		"name": "debian-12", "scsi0": "local-lvm:1", "net0": "virtio,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	conn := pveapitest.TokenConn(t, s, "pve01")
	opts := pveapi.Options{Retry: &pveapitest.FastRetry, SettlePoll: 50 * time.Millisecond, TaskPoll: 50 * time.Millisecond}
	ours, err := pveapi.Connect(context.Background(), conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	id, secret, err := s.AddToken("pve01", pvesim.TokenSpec{User: "root@pam", Name: "tenant2"})
	if err != nil {
		t.Fatal(err)
	}
	conn.TokenID, conn.TokenSecret = id, secret
	other, err := pveapi.Connect(context.Background(), conn, opts)
	if err != nil {
		t.Fatal(err)
	}
	return &identityLab{s: s, ours: ours, other: other}
}

// clone starts a clone of 9000 through c as another run would (not
// settled), and waits for its task when wait is set.
func (l *identityLab) clone(t *testing.T, c *pveapi.Client, newid int, name string, wait bool) string {
	t.Helper()
	var upid string
	if err := pveapitest.Send(context.Background(), c, "POST", "/nodes/pve01/qemu/9000/clone",
		url.Values{"newid": {strconv.Itoa(newid)}, "name": {name}, "full": {"1"}}, &upid); err != nil {
		t.Fatalf("clone %d: %v", newid, err)
	}
	if wait {
		if _, err := c.WaitTask(context.Background(), upid); err != nil {
			t.Fatalf("clone %d: %v", newid, err)
		}
	}
	return upid
}

// cloneWrite is the clone a module dispatches, with the proof pve_clone
// gives: the new VMID's config carries the name sent.
func (l *identityLab) cloneWrite(newid int, name string) pveapi.Write {
	return pveapi.Write{Method: "POST", Path: "/nodes/pve01/qemu/9000/clone", What: fmt.Sprintf("clone 9000 into %d", newid),
		Params:  url.Values{"newid": {strconv.Itoa(newid)}, "name": {name}, "full": {"1"}},
		Creates: true, SettleWithin: 2 * time.Second,
		Task:   &pveapi.TaskWrite{Node: "pve01", Types: []string{"qmclone"}, ID: "9000"},
		Settle: func(context.Context) (bool, error) { return false, nil },
		Proof: func(ctx context.Context) (pveapi.Evidence, error) {
			var cfg map[string]any
			err := l.ours.Get(ctx, fmt.Sprintf("/nodes/pve01/qemu/%d/config", newid), nil, &cfg)
			switch {
			case pveapi.IsNotFound(err):
				return pveapi.Evidence{Read: "no config"}, nil
			case err != nil:
				return pveapi.Evidence{}, err
			}
			got, _ := cfg["name"].(string)
			switch {
			case got == name:
				return pveapi.Evidence{Ours: true, Read: "named " + got}, nil
			case got == "":
				return pveapi.Evidence{Read: "no name yet"}, nil
			}
			return pveapi.Evidence{Other: "named " + got}, nil
		}}
}

func (l *identityLab) loseNextClone(t *testing.T) {
	t.Helper()
	if _, err := l.s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
		t.Fatal(err)
	}
}

func (l *identityLab) clonePosts() int { return posts(l.s, "/nodes/pve01/qemu/9000/clone") }

func TestSettleProvesIdentity(t *testing.T) {
	l := newIdentityLab(t)

	// A creating task write without a Proof is a bug, refused before
	// anything is sent: a module cannot opt out of the identity rule, not
	// even by leaving Creates unset on a worker that creates a guest.
	t.Run("no proof, no dispatch", func(t *testing.T) {
		l.s.ResetRequests()
		for _, w := range []pveapi.Write{
			func() pveapi.Write { w := l.cloneWrite(2090, "x"); w.Proof = nil; return w }(),
			func() pveapi.Write { w := l.cloneWrite(2090, "x"); w.Proof, w.Creates = nil, false; return w }(),
			{Method: "POST", Path: "/nodes/pve01/qemu", What: "create VM 2091", Creates: true,
				Params: url.Values{"vmid": {"2091"}}, Task: &pveapi.TaskWrite{Node: "pve01", Types: []string{"qmstart"}, ID: "2091"}},
		} {
			_, err := l.ours.Dispatch(context.Background(), w)
			if err == nil || !strings.Contains(err.Error(), "bug:") || !strings.Contains(err.Error(), "no Proof") {
				t.Errorf("%s (Creates %v) without Proof: %v", w.What, w.Creates, err)
			}
		}
		if m := pveapitest.Mutating(l.s); len(m) != 0 {
			t.Errorf("a write without proof was sent: %+v", m)
		}
	})

	// Another run with the same token cloned the template into 2000 a
	// moment ago; our clone into 2000 is refused (the VMID is taken) and
	// its answer is lost. The other run's qmclone task (same type, same
	// id 9000, same user, inside the clock slack) is not ours: the new
	// VMID shows another name. Changed/unverified at once, never made,
	// never "nothing done", never sent again.
	t.Run("same token, another name", func(t *testing.T) {
		l.clone(t, l.ours, 2000, "web-a", true)
		l.loseNextClone(t)
		l.s.ResetRequests()
		start := time.Now()
		out, err := l.ours.Dispatch(context.Background(), l.cloneWrite(2000, "web-b"))
		var u *pveapi.UnverifiedError
		if !errors.As(err, &u) || !u.NotOurs || pveapi.NothingDone(err) || out != nil {
			t.Fatalf("settled a foreign task as ours (issue 23 §1): out %+v, err %v", out, err)
		}
		for _, want := range []string{"the answer was lost", `not this write's (named web-a)`, "not sent again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message lacks %q: %v", want, err)
			}
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("a VMID shown as another's took %s to settle (the settle poll should stop at once)", d)
		}
		if n := l.clonePosts(); n != 1 {
			t.Errorf("the clone was sent %d times", n)
		}
	})

	// Another tenant's token cloned into 2001 with the very name we send:
	// the object alone would pass, but the task's user (in its UPID) is not
	// our principal, so no task proves the clone ours: unverified after the
	// settle time, not made.
	t.Run("another principal, same name", func(t *testing.T) {
		l.clone(t, l.other, 2001, "web-c", true)
		l.loseNextClone(t)
		_, err := l.ours.Dispatch(context.Background(), l.cloneWrite(2001, "web-c"))
		if !pveapi.IsUnverified(err) || pveapi.NothingDone(err) || !strings.Contains(err.Error(), "no qmclone task of root@pam!lab") {
			t.Fatalf("another principal's task taken as ours: %v", err)
		}
	})

	// Our own clone whose answer is lost is settled as made, even while
	// another clone of the same template by the same token runs: both
	// tasks are candidates, the proof tells.
	t.Run("ours, beside another", func(t *testing.T) {
		l.clone(t, l.ours, 2003, "web-x", false)
		l.loseNextClone(t)
		out, err := l.ours.Dispatch(context.Background(), l.cloneWrite(2002, "web-d"))
		if err != nil || out == nil || !strings.Contains(out.Lost, "was lost") || !strings.Contains(out.Lost, `named web-d`) {
			t.Fatalf("our lost clone: %+v %v", out, err)
		}
		var cfg map[string]any
		if err := l.ours.Get(context.Background(), "/nodes/pve01/qemu/2002/config", nil, &cfg); err != nil || cfg["name"] != "web-d" {
			t.Errorf("VM 2002: %v %v", cfg, err)
		}
	})
}

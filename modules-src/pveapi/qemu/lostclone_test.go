package qemu_test

import (
	"context"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// Issue 16: a clone whose answer is lost (qemu-server forked the qmclone
// worker, the UPID never arrived) is dispatched once: the typed request's
// task hint finds the task in the template node's task list, the task is
// waited out, and the clone exists — no second POST (bpg re-sends on any
// 5xx and takes "already exists" as success; this does not).
func TestLostCloneAnswerSettledFromTaskList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := pveapitest.Start(t, 9, 1)
	if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 9000, Template: true, Config: map[string]string{
		"name": "debian-12", "scsi0": "local-lvm:4", "net0": "virtio,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	c, err := pveapi.Connect(ctx, pveapitest.TokenConn(t, s, "pve01"), pveapi.Options{Retry: &pveapitest.FastRetry,
		TaskPoll: 20 * time.Millisecond, SettlePoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	req := qemu.Clone{Node: "pve01", VMID: 9000, NewID: 201, Name: "web-1", Full: qemu.Ptr(true)}.Request()
	if err := req.Validate(9); err != nil {
		t.Fatal(err)
	}
	s.Faults().Add(pvesim.Fault{Method: "POST", Path: req.Path, Kind: pvesim.FaultLostAnswer, Count: 1})
	s.ResetRequests()
	w := req.Write("clone 9000 to 201", nil)
	w.Proof = qemu.NameProof(c, 201, "web-1") // issue 23 §1: a creating task write must prove the VM its own
	out, err := c.Dispatch(ctx, w)
	if err != nil || out.Lost == "" || out.Task == nil || out.Task.ExitStatus != "OK" {
		t.Fatalf("lost clone answer: %+v %v", out, err)
	}
	s.WaitIdle()
	posts := 0
	for _, r := range pveapitest.Mutating(s) {
		if r.Path == req.Path {
			posts++
		}
	}
	if posts != 1 {
		t.Errorf("clone POST sent %d times, want 1", posts)
	}
	if _, err := qemu.GetConfig(ctx, c, "pve01", 201, false); err != nil {
		t.Errorf("the clone exists once its task ended: %v", err)
	}
}

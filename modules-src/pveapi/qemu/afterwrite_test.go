package qemu_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// Issue 23 §3: a config update qemu-server answers `400 Parameter
// verification failed.` after it wrote (hotplug problem on a running VM)
// is a *pveapi.WrittenError, never "nothing done", and is sent once; the
// same 400 without the handler's flag keeps today's rule (a refusal before
// writing), and a 400 qemu-server raises before writing is still one. A
// DELETE answered "does not exist" is settled by a read: gone → done.
func TestAfterWriteAnswers(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(map[int]string{8: "PVE 8", 9: "PVE 9"}[v], func(t *testing.T) {
			ctx := context.Background()
			s := pveapitest.Start(t, v, 1)
			if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 100, Running: true, Config: map[string]string{
				"name": "web", "memory": "2048", "net0": "virtio,bridge=vmbr0"}}); err != nil {
				t.Fatal(err)
			}
			c, err := pveapi.Connect(ctx, pveapitest.TokenConn(t, s, "pve01"), pveapi.Options{Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			update := func(set map[string]string, flag bool) error {
				r := qemu.Update{Node: "pve01", VMID: 100, Set: set}.Request()
				w := r.Write("update VM 100", func(ctx context.Context) (bool, error) {
					cfg, err := qemu.GetConfig(ctx, c, "pve01", 100, false)
					return err == nil && cfg.Values["net1"] != "", err
				})
				if flag {
					w.RaisesAfterWrite = qemu.RaisedAfterWrite
				}
				_, err := c.Dispatch(ctx, w)
				return err
			}
			s.ResetRequests()
			err = update(map[string]string{"net1": "virtio,bridge=vmbr9", "name": "web-1"}, true)
			we, ok := pveapi.IsWritten(err)
			if !ok || pveapi.NothingDone(err) || !we.InPlace || !strings.Contains(err.Error(), "net1: hotplug problem - VM 100 qmp command 'netdev_add' failed") {
				t.Errorf("after-write 400: %v (written %v)", err, ok)
			}
			if m := qemu.AfterWriteErrors(err); len(m) != 1 || !strings.HasPrefix(m["net1"], "hotplug problem - ") {
				t.Errorf("per-key errors: %v", m)
			}
			if n := len(pveapitest.Mutating(s)); n != 1 {
				t.Errorf("sent %d times", n)
			}
			// The same answer to a write without the flag: today's rule.
			if err := update(map[string]string{"net2": "virtio,bridge=vmbr8"}, false); !pveapi.NothingDone(err) {
				t.Errorf("unflagged 400: %v", err)
			}
			// A 400 qemu-server raises before writing stays a refusal.
			if err := update(map[string]string{"net3": "virtio,bridge=vmbr0,tag=5000"}, true); !pveapi.NothingDone(err) {
				t.Errorf("a parameter refusal: %v", err)
			}
			// The task variant: the qmconfig task fails with the exception.
			r := qemu.Update{Node: "pve01", VMID: 100, Set: map[string]string{"net4": "e1000,bridge=vmbr7"}}.AsyncRequest()
			w := r.Write("update VM 100 (task)", nil)
			w.RaisesAfterWrite = qemu.RaisedAfterWrite
			_, err = c.Dispatch(ctx, w)
			if _, ok := pveapi.IsWritten(err); !ok || qemu.AfterWriteErrors(err)["net4"] == "" {
				t.Errorf("task variant: %v %v", err, qemu.AfterWriteErrors(err))
			}

			// DELETE of what is already gone: the goal is met.
			gone := func(ctx context.Context) (bool, error) {
				_, err := qemu.GetConfig(ctx, c, "pve01", 555, false)
				if pveapi.IsNotFound(err) {
					return true, nil
				}
				return false, err
			}
			out, err := c.Dispatch(ctx, qemu.Destroy("pve01", 555, false).Write("destroy VM 555", gone))
			if err != nil || out == nil || !strings.Contains(out.Gone, "reading back shows it absent") {
				t.Errorf("DELETE of a missing VM: %v %+v", err, out)
			}
			// …but not when the read shows it there (wrong node: K2).
			s2 := func(context.Context) (bool, error) { return false, nil }
			if _, err := c.Dispatch(ctx, qemu.Destroy("pve01", 556, false).Write("destroy VM 556", s2)); !pveapi.NothingDone(err) {
				t.Errorf("DELETE answered not-found, object there: %v", err)
			}
		})
	}
}

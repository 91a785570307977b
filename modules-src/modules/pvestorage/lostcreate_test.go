package pvestorage

import (
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

func nfsArgs() map[string]any {
	return map[string]any{"storage": "backup-nfs", "type": "nfs", "server": "192.0.2.20", "export": "/export/backup",
		"path": "/mnt/pve/backup-nfs", "content": []any{"backup"}}
}

// storagePosts counts POST /storage once the simulator is idle (a create
// still inside its lock is logged when it ends).
func (w *world) storagePosts() int {
	w.sim.WaitIdle()
	n := 0
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "POST" && r.Path == "/storage" {
			n++
		}
	}
	return n
}

// Issue 15 item 3: the NFS mount of the create takes longer than
// api_timeout, so the answer is lost while PVE is still inside its lock
// (storage.cfg is written at the end). The create is sent once, and the
// read-back settles it when the storage appears: changed, verified, with a
// warning saying what was lost.
func TestLostCreateSettledSentOnce(t *testing.T) {
	w := newWorld(t, 9)
	w.conn["api_timeout"] = 1
	w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultSlowLocked, Delay: 2500 * time.Millisecond, Count: 1})
	w.sim.ResetRequests()
	res := w.run(nfsArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("settled create: %v", res["msg"])
	}
	if n := w.storagePosts(); n != 1 {
		t.Errorf("POST /storage sent %d times, want 1", n)
	}
	if !strings.Contains(pveapi.String(res["warnings"]), `the answer to "create storage backup-nfs" was lost`) {
		t.Errorf("the lost answer is not reported: %v", res["warnings"])
	}
	if cfg := w.config("backup-nfs"); cfg["server"] != "192.0.2.20" {
		t.Errorf("the storage the lab holds: %v", cfg)
	}
}

// The same create when the run's deadline ends before the storage shows:
// changed, unverified — never "nothing was changed" — and sent once. The
// lab then finishes the create, as PVE would: the report was right to say
// it may have happened.
func TestLostCreateUnverifiedSentOnce(t *testing.T) {
	w := newWorld(t, 9)
	w.conn["api_timeout"] = 1
	w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultSlowLocked, Delay: 6 * time.Second, Count: 1})
	w.sim.ResetRequests()
	args := nfsArgs()
	args["timeout"] = 3
	res := w.run(args, false)
	msg := pveapi.String(res["msg"])
	if !failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["changes_unverified"]), "create nfs storage backup-nfs") ||
		strings.Contains(msg, "nothing was changed") || !strings.Contains(msg, "not sent again") {
		t.Errorf("unsettled create: changed=%v unverified=%v msg=%s", res["changed"], res["changes_unverified"], msg)
	}
	if n := w.storagePosts(); n != 1 {
		t.Errorf("POST /storage sent %d times, want 1", n)
	}
	if cfg := w.config("backup-nfs"); cfg == nil {
		t.Errorf("the create did end in the lab")
	}
}

// Check mode of a create: no write reaches the lab, by the request log;
// the client it runs with refuses writes by construction
// (TestReadOnlyClientSendsNoWrite in pveapi, ForRun in pveansible).
func TestCheckModeSendsNoWrite(t *testing.T) {
	w := newWorld(t, 9)
	w.sim.ResetRequests()
	for _, args := range []map[string]any{nfsArgs(), {"storage": "local", "state": "absent", "force": true}} {
		res := w.run(args, true)
		if failed(res) || res["changed"] != true {
			t.Errorf("check: %v", res["msg"])
		}
	}
	if m := pveapitest.Mutating(w.sim); len(m) != 0 {
		t.Errorf("check mode wrote: %+v", m)
	}
}

// A PUT whose answer is lost (handled, then the connection reset): sent
// once, settled by reading the options back, changed and verified.
func TestLostUpdateSettledSentOnce(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(zfsArgs(), false); failed(res) {
		t.Fatal(res["msg"])
	}
	w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/storage/nvme-vm", Kind: pvesim.FaultLostAnswer, Count: 1})
	w.sim.ResetRequests()
	args := zfsArgs()
	args["disable"] = true
	res := w.run(args, false)
	if failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["warnings"]), `the answer to "update storage nvme-vm" was lost`) {
		t.Fatalf("settled update: %v %v", res["msg"], res["warnings"])
	}
	w.sim.WaitIdle()
	puts := 0
	for _, r := range pveapitest.Mutating(w.sim) {
		if r.Method == "PUT" {
			puts++
		}
	}
	if puts != 1 {
		t.Errorf("PUT sent %d times, want 1", puts)
	}
}

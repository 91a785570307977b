package pveclone

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

func with(base map[string]any, kv ...any) map[string]any {
	out := maps.Clone(base)
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

func (w *world) guests() []clusterguests.Guest {
	w.t.Helper()
	g, err := clusterguests.Guests(context.Background(), w.client())
	if err != nil {
		w.t.Fatal(err)
	}
	return g
}

// Bad input fails naming the option, before anything is written — the
// refusals PVE's own pre-clone checks would make included (K2 local
// storage, K6 pool), cloud-init values checked as PVE's formats (K12:
// ipconfigN, sshkeys) and a cicustom snippet on a storage without snippets
// (S4), on PVE 8 and 9.
func TestBadInputNamed(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		if err := w.sim.AddGuest("pve02", pvesim.GuestSpec{VMID: 9002, Template: true, Config: map[string]string{"name": "twin", "scsi0": "local-lvm:1"}}); err != nil {
			t.Fatal(err)
		}
		if err := w.sim.AddGuest("pve03", pvesim.GuestSpec{VMID: 9003, Template: true, Config: map[string]string{"name": "twin", "scsi0": "local-lvm:1"}}); err != nil {
			t.Fatal(err)
		}
		w.sim.ResetRequests()
		cases := []struct {
			args map[string]any
			want string
		}{
			{with(webArgs(), "vmid", 99), "vmid: 99 is out of range"},
			{with(webArgs(), "template", "no-such"), `template: no template named "no-such"`},
			{with(webArgs(), "template", "twin"), `template: 2 templates are named "twin" (9002 on pve02, 9003 on pve03)`},
			{with(webArgs(), "template", "9999"), "template: no VM 9999"},
			{with(webArgs(), "ipconfig", map[string]any{"ipconfig0": "ip=10.0.0.300/24"}), "ipconfig.ipconfig0: ip:"},
			{with(webArgs(), "ipconfig", map[string]any{"ipconfig0": "gw=10.0.0.1"}), "ipconfig.ipconfig0: gateway specified without specifying an IP address"},
			{with(webArgs(), "disks", map[string]any{"scsi0": "12Q"}), "disks.scsi0:"},
			{with(webArgs(), "disks", map[string]any{"scsi99": "8G"}), "disks.scsi99: not a disk key"},
			{with(webArgs(), "nets", map[string]any{"net0": map[string]any{"colour": "red"}}), `nets.net0: "colour" is not a NIC key`},
			{with(webArgs(), "nets", map[string]any{"net0": "virtio,bridge=vmbr0,speed=fast"}), "nets.net0:"},
			{with(webArgs(), "nets", map[string]any{"net0": map[string]any{"tag": 5000}}), "nets.net0: tag: 5000 is not in 0..4094"},
			{with(webArgs(), "template", "local-tpl"), "node: can't clone VM to node 'pve02' (VM uses local storage)"},
			{with(webArgs(), "pool", "tenant-z"), "pool: pool 'tenant-z' does not exist"},
			{with(webArgs(), "storage", "no-store"), "storage: storage 'no-store' does not exist"},
			{with(webArgs(), "storage", "local-lvm"), "storage: can't clone to non-shared storage 'local-lvm'"},
			{with(webArgs(), "node", "pve09"), "node: no such cluster node 'pve09'"},
			{with(webArgs(), "cpu", "not a cpu!"), "cpu:"},
			{with(webArgs(), "tags", []any{"bad tag"}), "tags:"},
			{with(webArgs(), "sshkeys", []any{"ssh-ed25519 AAAAnotakey alice"}), "sshkeys: element 1 is not an SSH public key"},
			{with(webArgs(), "cicustom", "vendor=local-lvm:snippets/v.yaml"), "cicustom: vendor: storage 'local-lvm' does not hold snippets"},
		}
		for _, c := range cases {
			res := w.run(c.args, false)
			if !failed(res) || !strings.Contains(msg(res), c.want) {
				t.Errorf("PVE %d: got %q, want a failure mentioning %q", v, msg(res), c.want)
			}
			if res["changed"] != false {
				t.Errorf("PVE %d %q: changed", v, c.want)
			}
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Errorf("PVE %d: bad input wrote %+v", v, m)
		}
		if _, ok := clusterguests.Find(w.guests(), 201); ok {
			t.Errorf("PVE %d: VM 201 exists after bad input", v)
		}
	}
}

// K1: a VM of the same name elsewhere does not stop the clone; a VMID held
// by another VM is refused with what holds it, and nothing is changed.
func TestK1IdentityIsVMID(t *testing.T) {
	w := newWorld(t, 9)
	if err := w.sim.AddGuest("pve03", pvesim.GuestSpec{VMID: 150, Config: map[string]string{"name": "web-1", "memory": "1024"}}); err != nil {
		t.Fatal(err)
	}
	res := w.run(webArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("K1: %v", msg(res))
	}
	if g, ok := clusterguests.Find(w.guests(), 201); !ok || g.Node != "pve02" || g.Name != "web-1" {
		t.Errorf("K1: VM 201 %+v %v", g, ok)
	}
	w.sim.ResetRequests()
	res = w.run(with(webArgs(), "vmid", 150, "name", "db-1"), false)
	if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), `vmid: VMID 150 is held by VM "web-1" on node pve03, not "db-1"`) {
		t.Errorf("ownership: %v", msg(res))
	}
	res = w.run(with(webArgs(), "vmid", 9001, "name", "local-tpl"), false)
	if !failed(res) || !strings.Contains(msg(res), "which is a template") {
		t.Errorf("a template's VMID: %v", msg(res))
	}
	if m := writes(w.sim); len(m) != 0 {
		t.Errorf("refusals wrote %+v", m)
	}
	if c := w.config("pve03", 150, false); c.Values["memory"] != "1024" || c.Values["cores"] != "" {
		t.Errorf("the other VM was touched: %v", c.Values)
	}
}

// K3: a clone task that fails fails the run with its log; WARNINGS is a
// success whose warnings are shown. PVE cleaned up after the failed task
// (one read shows no VM 201), but the task ran — it allocated and freed
// volumes — so the run is changed, unverified, never "nothing was changed"
// (issue 23 §2, the runtime's rule).
func TestK3CloneTaskEnd(t *testing.T) {
	w := newWorld(t, 8)
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultTaskFail,
		ExitStatus: "clone failed: storage 'shared' is not online", Count: 1}); err != nil {
		t.Fatal(err)
	}
	res := w.run(webArgs(), false)
	if !failed(res) || !strings.Contains(msg(res), "clone failed: storage 'shared' is not online") || res["changed"] != true ||
		!strings.Contains(msg(res), "counts as made, unverified") || len(stringsOf(res["changes_unverified"])) != 1 {
		t.Fatalf("K3 failed task: changed=%v unverified=%v %v", res["changed"], res["changes_unverified"], msg(res))
	}
	if tl, _ := res["task_log"].([]any); len(tl) == 0 {
		t.Errorf("K3: no task log in the result: %v", res)
	}
	if _, ok := clusterguests.Find(w.guests(), 201); ok {
		t.Errorf("K3: VM 201 exists after the failed clone")
	}

	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultTaskFail,
		ExitStatus: "WARNINGS: 1", Count: 1}); err != nil {
		t.Fatal(err)
	}
	res = w.run(webArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("K3 WARNINGS is success: %v", msg(res))
	}
	if c := w.config("pve02", 201, false); c.Values["cores"] != "2" {
		t.Errorf("K3: the configuration after a clone with warnings: %v", c.Values)
	}
	if again := w.run(webArgs(), false); failed(again) || again["changed"] != false {
		t.Errorf("rerun: %v %v", msg(again), again["changes"])
	}
}

// K11: a requested size below the disk's is tolerated and reported, never
// sent; K16: a bridge/VLAN change keeps the MAC, re-sent in the update.
func TestK11K16DiskAndNIC(t *testing.T) {
	w := newWorld(t, 9)
	res := w.run(webArgs(), false)
	if failed(res) {
		t.Fatal(msg(res))
	}
	mac := res["mac"].(map[string]any)["net0"].(string)
	w.sim.ResetRequests()
	res = w.run(with(webArgs(), "disks", map[string]any{"scsi0": "4G"}), false)
	if failed(res) || res["changed"] != false || len(writes(w.sim)) != 0 {
		t.Errorf("K11: smaller size: changed=%v %v writes %v", res["changed"], msg(res), writes(w.sim))
	}
	if warns := pveapi.String(res["warnings"]); !strings.Contains(warns, "never shrunk (K11)") {
		t.Errorf("K11: no warning: %v", res["warnings"])
	}
	w.sim.ResetRequests()
	res = w.run(with(webArgs(), "nets", map[string]any{"net0": map[string]any{"bridge": "vmbr2", "tag": 40}}, "disks", map[string]any{"scsi0": "10G"}), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("K16: %v", msg(res))
	}
	var put, resize *pvesim.Request
	for _, r := range writes(w.sim) {
		r := r
		switch {
		case r.Method == "PUT" && strings.HasSuffix(r.Path, "/config"):
			put = &r
		case strings.HasSuffix(r.Path, "/resize"):
			resize = &r
		}
	}
	if put == nil || !strings.Contains(put.Params["net0"], mac) {
		t.Errorf("K16: the update does not re-send the MAC %s: %+v", mac, put)
	}
	if resize == nil || resize.Params["disk"] != "scsi0" {
		t.Errorf("K11: grow: %+v", resize)
	}
	c := w.config("pve02", 201, false)
	nets, _ := c.Nets()
	disks, _ := c.Disks()
	if n := nets["net0"]; n.MAC != mac || n.Bridge != "vmbr2" || n.Tag != 40 || n.MTU != 1 {
		t.Errorf("K16: net0 after the change %+v (MAC was %s)", n, mac)
	}
	if disks["scsi0"].Size != 10<<30 {
		t.Errorf("K11: grown to %d", disks["scsi0"].Size)
	}
	// The update carries the digest of the read it was planned from (GET
	// …/pending lists it, as PVE's config_with_pending_array does).
	if put == nil || put.Params["digest"] == "" {
		t.Errorf("the update is not guarded by the digest: %+v", put)
	}
}

// K10: on a running VM a change PVE cannot hot-plug is reported pending
// with restart_required, never as done, and the VM is not restarted.
func TestK10PendingOnRunningVM(t *testing.T) {
	w := newWorld(t, 9)
	if res := w.run(with(webArgs(), "state", "started"), false); failed(res) || res["changed"] != true {
		t.Fatalf("started: %v", msg(res))
	}
	res := w.run(with(webArgs(), "state", "started", "cores", 4), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("K10: %v", msg(res))
	}
	if res["restart_required"] != true || !strings.Contains(pveapi.String(res["pending"]), "cores") {
		t.Errorf("K10: pending %v restart_required %v", res["pending"], res["restart_required"])
	}
	if cfg := cfgOf(res); cfg["cores"] != "2" {
		t.Errorf("K10: the returned (live) config claims cores=%s", cfg["cores"])
	}
	if live := w.config("pve02", 201, true); live.Values["cores"] != "2" {
		t.Errorf("K10: the VM was restarted or hot-plugged cores: %v", live.Values["cores"])
	}
	again := w.run(with(webArgs(), "state", "started", "cores", 4), false)
	if failed(again) || again["changed"] != false || again["restart_required"] != true {
		t.Errorf("K10 rerun: changed=%v restart_required=%v %v", again["changed"], again["restart_required"], msg(again))
	}
}

// state=absent checks the name, stops and destroys exactly this VMID.
func TestAbsent(t *testing.T) {
	w := newWorld(t, 8)
	if res := w.run(with(webArgs(), "state", "started"), false); failed(res) {
		t.Fatal(msg(res))
	}
	w.sim.ResetRequests()
	res := w.run(map[string]any{"vmid": 201, "name": "web-2", "state": "absent"}, false)
	if !failed(res) || res["changed"] != false || len(writes(w.sim)) != 0 {
		t.Errorf("absent with another name: %v", msg(res))
	}
	check := w.run(map[string]any{"vmid": 201, "name": "web-1", "state": "absent"}, true)
	if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
		t.Errorf("absent check: %v", msg(check))
	}
	res = w.run(map[string]any{"vmid": 201, "name": "web-1", "state": "absent"}, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("absent: %v", msg(res))
	}
	if _, ok := clusterguests.Find(w.guests(), 201); ok {
		t.Error("VM 201 still exists")
	}
	if res := w.run(map[string]any{"vmid": 201, "name": "web-1", "state": "absent"}, false); failed(res) || res["changed"] != false {
		t.Errorf("absent rerun: %v", msg(res))
	}
	if _, ok := clusterguests.Find(w.guests(), 9000); !ok {
		t.Error("the template went too")
	}
}

// Seed 002's bare VM: q35, OVMF with an EFI disk, a scsi disk, two NICs,
// built in one create call; check mode sends nothing; a rerun changes
// nothing.
func TestBareVM(t *testing.T) {
	w := newWorld(t, 9)
	args := map[string]any{"vmid": 310, "name": "bare-1", "node": "pve03", "cores": 4, "memory": 8192,
		"machine": "q35", "bios": "ovmf", "ostype": "l26", "scsihw": "virtio-scsi-single",
		"disks":   map[string]any{"scsi0": "local-lvm:32,discard=on,ssd=1"},
		"efidisk": map[string]any{"storage": "local-lvm", "efitype": "4m", "pre_enrolled_keys": true},
		"nets":    map[string]any{"net0": "virtio,bridge=vmbr0", "net1": map[string]any{"model": "virtio", "bridge": "vmbr1", "tag": 30}},
		"agent":   "enabled=1,fstrim_cloned_disks=1", "onboot": true, "tags": []any{"production"}}
	w.sim.ResetRequests()
	if c := w.run(args, true); failed(c) || c["changed"] != true || len(writes(w.sim)) != 0 {
		t.Fatalf("check: %v %v", msg(c), writes(w.sim))
	}
	res := w.run(args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("bare: %v", msg(res))
	}
	c := w.config("pve03", 310, false)
	disks, _ := c.Disks()
	nets, _ := c.Nets()
	if disks["scsi0"].Size != 32<<30 || c.Values["bios"] != "ovmf" || c.Values["machine"] != "q35" || disks["efidisk0"].File == "" ||
		nets["net0"].MAC == "" || nets["net1"].Tag != 30 || c.Values["cores"] != "4" {
		t.Errorf("bare VM config: %v", c.Values)
	}
	if again := w.run(args, false); failed(again) || again["changed"] != false {
		t.Errorf("bare rerun: %v %v", msg(again), again["changes"])
	}
}

// A clone whose answer is lost is settled by the template node's task
// list, not sent again; the configuration follows in the same run.
func TestLostCloneAnswer(t *testing.T) {
	w := newWorld(t, 8)
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(webArgs(), false)
	clones := 0
	for _, r := range writes(w.sim) {
		if strings.HasSuffix(r.Path, "/clone") {
			clones++
		}
	}
	if clones != 1 {
		t.Errorf("the clone was sent %d times", clones)
	}
	if failed(res) || res["changed"] != true {
		t.Fatalf("lost answer: %v", msg(res))
	}
	if c := w.config("pve02", 201, false); c.Values["cores"] != "2" {
		t.Errorf("configuration after the settled clone: %v", c.Values)
	}
}

// K4: the clone's task ends OK before its config shows on the target (slow
// storage); the module waits for it, present and unlocked, then configures.
// K5: the node answers slowly right after: reads are retried.
func TestK4K5SlowConfig(t *testing.T) {
	w := newWorld(t, 9)
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultSlowConfig, Delay: 600 * time.Millisecond, Count: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "GET", Path: "/nodes/pve02/qemu/201/pending", Kind: pvesim.FaultError, Status: 500, Message: "proxy loop detected: read timeout", Count: 1}); err != nil {
		t.Fatal(err)
	}
	res := w.run(webArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("K4: %v", msg(res))
	}
	if c := w.config("pve02", 201, false); c.Values["cores"] != "2" || c.Lock() != "" {
		t.Errorf("K4: config after the slow clone: %v", c.Values)
	}
}

// K18: two runs racing for one VMID end with one VM and a clear failure
// for the loser, whose changed says it made nothing.
func TestK18RaceForOneVMID(t *testing.T) {
	w := newWorld(t, 9)
	results := make(chan map[string]any, 2)
	for _, name := range []string{"web-1", "web-1"} {
		go func() { results <- w.run(with(webArgs(), "name", name), false) }()
	}
	a, b := <-results, <-results
	if failed(a) == failed(b) {
		// Both may succeed when the second run sees the first's VM (then it is ours by name: fine).
		if failed(a) {
			t.Fatalf("K18: both failed: %v / %v", msg(a), msg(b))
		}
	}
	t.Logf("K18: run A failed=%v changed=%v %q; run B failed=%v changed=%v %q", failed(a), a["changed"], msg(a), failed(b), b["changed"], msg(b))
	guests := w.guests()
	n := 0
	for _, g := range guests {
		if g.VMID == 201 {
			n++
		}
	}
	if n != 1 {
		t.Errorf("K18: %d VMs with VMID 201", n)
	}
	for _, r := range []map[string]any{a, b} {
		// A loser PVE refused before acting changed nothing; one whose clone
		// task ran and died on the VMID's config lock is changed and
		// unverified (TestK18LostAtTheConfigLock), never verified.
		if failed(r) && r["changed"] != false && len(stringsOf(r["changes_unverified"])) == 0 {
			t.Errorf("K18: the loser reports a change it does not call unverified: %v", msg(r))
		}
		if failed(r) && (!strings.Contains(msg(r), "201") || !strings.Contains(msg(r), "K18")) {
			t.Errorf("K18: the loser's message does not name the VMID: %v", msg(r))
		}
	}
	if c := w.config("pve02", 201, false); c.Values["cores"] != "2" {
		t.Errorf("K18: the winner's VM is not configured: %v", c.Values)
	}
}

// K13: 20 VMs from one template, at most four clones at once (the role's
// throttle across forks): no lock error surfaces, every VM is configured,
// and the API cost per VM is logged.
func TestK13TwentyClonesBounded(t *testing.T) {
	w := newWorld(t, 9)
	w.sim.ResetRequests()
	start := time.Now()
	sem := make(chan struct{}, 4)
	results := make(chan map[string]any, 20)
	for i := 0; i < 20; i++ {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			results <- w.run(with(webArgs(), "vmid", 300+i, "name", fmt.Sprintf("web-%d", i)), false)
		}()
	}
	for i := 0; i < 20; i++ {
		if r := <-results; failed(r) || r["changed"] != true {
			t.Errorf("K13: %v", msg(r))
		}
	}
	wall := time.Since(start)
	reqs := 0
	for _, r := range w.sim.Requests() {
		if r.Path != "/access/ticket" {
			reqs++
		}
	}
	t.Logf("K13: 20 clones, 4 at a time: %v wall, %.1f API requests per VM (%d writes in all)", wall.Round(time.Millisecond), float64(reqs)/20, len(writes(w.sim)))
	for i := 0; i < 20; i++ {
		if c := w.config("pve02", 300+i, false); c.Values["cores"] != "2" || c.Values["name"] != fmt.Sprintf("web-%d", i) {
			t.Errorf("VM %d: %v", 300+i, c.Values)
		}
	}
}

// K13: a clone whose task failed on the storage lock held by parallel
// clones, and which left nothing (one read proves it), is tried again
// with a backoff and succeeds; the warning says so.
func TestK13LockContentionRetried(t *testing.T) {
	w := newWorld(t, 8)
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultTaskFail,
		ExitStatus: "clone failed: cfs-lock 'storage-shared' error: got lock request timeout", Count: 1}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(webArgs(), false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("K13: %v", msg(res))
	}
	clones := 0
	for _, r := range writes(w.sim) {
		if strings.HasSuffix(r.Path, "/clone") {
			clones++
		}
	}
	if clones != 2 || !strings.Contains(pveapi.String(res["warnings"]), "trying again") {
		t.Errorf("K13: %d clone calls, warnings %v", clones, res["warnings"])
	}
	if g, ok := clusterguests.Find(w.guests(), 201); !ok || g.Node != "pve02" {
		t.Errorf("K13: VM 201 after the retried clone: %+v %v", g, ok)
	}
}

// H4: an HA-managed VM is started through HA (PVE turns the start into a
// hastart request) and the module waits for the real state; HA's
// requested state says started afterwards.
func TestH4StartThroughHA(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 9)
	if res := w.run(webArgs(), false); failed(res) {
		t.Fatal(msg(res))
	}
	if _, err := w.client().Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/cluster/ha/resources", What: "ha resource",
		Params: url.Values{"sid": {"vm:201"}, "state": {"stopped"}}, Settle: func(context.Context) (bool, error) { return false, nil }, Creates: true}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(with(webArgs(), "state", "started"), false)
	if failed(res) || res["changed"] != true || !strings.Contains(pveapi.String(res["changes"]), "through HA") {
		t.Fatalf("H4: %v %v", msg(res), res["changes"])
	}
	var ha map[string]any
	if err := w.client().Get(context.Background(), "/cluster/ha/resources/vm:201", nil, &ha); err != nil || ha["state"] != "started" {
		t.Errorf("H4: HA resource after the start: %v %v", ha, err)
	}
	if g, _ := clusterguests.Find(w.guests(), 201); g.Status != "running" {
		t.Errorf("H4: VM 201 is %s", g.Status)
	}
	if again := w.run(with(webArgs(), "state", "started"), false); failed(again) || again["changed"] != false {
		t.Errorf("H4 rerun: %v %v", msg(again), again["changes"])
	}
}

// H4: an HA resource in state ignored is not HA-managed for PVE
// (HA::Config's service_check_ha_state: "ignored service behave as if
// they were not managed"): qemu-server's vm_start runs a qmstart itself,
// while the guest list still shows hastate "ignored". The task starts the
// VM directly, in check mode and for real, and says nothing of HA; the
// resource stays ignored.
func TestH4IgnoredHAStartsDirectly(t *testing.T) {
	t.Parallel()
	w := newWorld(t, 9)
	if res := w.run(webArgs(), false); failed(res) {
		t.Fatal(msg(res))
	}
	if _, err := w.client().Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/cluster/ha/resources", What: "ha resource",
		Params: url.Values{"sid": {"vm:201"}, "state": {"ignored"}}, Settle: func(context.Context) (bool, error) { return false, nil }, Creates: true}); err != nil {
		t.Fatal(err)
	}
	for _, check := range []bool{true, false} {
		w.sim.ResetRequests()
		res := w.run(with(webArgs(), "state", "started"), check)
		if failed(res) || res["changed"] != true || strings.Contains(pveapi.String(res["changes"]), "HA") {
			t.Fatalf("check=%v: %v %v", check, msg(res), res["changes"])
		}
		if m := writes(w.sim); check && len(m) != 0 {
			t.Errorf("check mode wrote %+v", m)
		}
	}
	var tasks []struct {
		Type string `json:"type"`
	}
	g, _ := clusterguests.Find(w.guests(), 201)
	if err := w.client().Get(context.Background(), "/nodes/"+g.Node+"/tasks", url.Values{"vmid": {"201"}}, &tasks); err != nil {
		t.Fatal(err)
	}
	direct := false
	for _, task := range tasks {
		direct = direct || task.Type == "qmstart"
		if strings.HasPrefix(task.Type, "ha") {
			t.Errorf("an HA request ran: %+v", tasks)
		}
	}
	if !direct {
		t.Errorf("no qmstart task: %+v", tasks)
	}
	var ha map[string]any
	if err := w.client().Get(context.Background(), "/cluster/ha/resources/vm:201", nil, &ha); err != nil || ha["state"] != "ignored" {
		t.Errorf("HA resource after the start: %v %v", ha, err)
	}
	if g.Status != "running" {
		t.Errorf("VM 201 is %s", g.Status)
	}
	w.sim.ResetRequests()
	if again := w.run(with(webArgs(), "state", "started"), false); failed(again) || again["changed"] != false || len(writes(w.sim)) != 0 {
		t.Errorf("rerun: %v %v", msg(again), again["changes"])
	}
}

// A linked clone on the template's node (lvmthin): check mode predicts the
// volume under its base, and the real run reads it back so.
func TestLinkedClone(t *testing.T) {
	w := newWorld(t, 8)
	args := map[string]any{"vmid": 202, "name": "thin-1", "template": "9001", "full": false, "cores": 2}
	w.sim.ResetRequests()
	check := w.run(args, true)
	if failed(check) || len(writes(w.sim)) != 0 {
		t.Fatalf("linked check: %v", msg(check))
	}
	res := w.run(args, false)
	if failed(res) || res["changed"] != true {
		t.Fatalf("linked: %v", msg(res))
	}
	got := w.config("pve01", 202, false)
	if p := cfgOf(check)["scsi0"]; p != got.Values["scsi0"] || !strings.Contains(p, "base-9001-disk-0/vm-202-disk-0") {
		t.Errorf("linked scsi0: predicted %q, read back %q", p, got.Values["scsi0"])
	}
}

// Faults during configuration: a PUT whose answer is lost is settled by a
// read (never re-sent); a PUT refused after the clone fails the run as
// changed (the clone happened, the lab saw it), and the rerun completes
// the configuration without a second clone.
func TestFaultsDuringConfiguration(t *testing.T) {
	w := newWorld(t, 9)
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/nodes/*/qemu/201/config", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(webArgs(), false)
	puts := 0
	for _, r := range writes(w.sim) {
		if r.Method == "PUT" && strings.HasSuffix(r.Path, "/config") {
			puts++
		}
	}
	if failed(res) || res["changed"] != true || puts != 1 {
		t.Errorf("lost PUT: %v, %d PUTs", msg(res), puts)
	}

	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/nodes/*/qemu/202/config", Kind: pvesim.FaultError, Status: 500,
		Message: "can't lock file '/var/lock/qemu-server/lock-202.conf' - got timeout", Count: 4}); err != nil {
		t.Fatal(err)
	}
	args := with(webArgs(), "vmid", 202, "name", "web-2")
	res = w.run(args, false)
	if !failed(res) || res["changed"] != true {
		t.Errorf("a refused PUT after the clone: failed=%v changed=%v %v", failed(res), res["changed"], msg(res))
	}
	if _, ok := clusterguests.Find(w.guests(), 202); !ok {
		t.Fatal("the clone that the failed run reports as changed is not there")
	}
	w.sim.ResetRequests()
	again := w.run(args, false)
	if failed(again) || again["changed"] != true {
		t.Fatalf("rerun: %v", msg(again))
	}
	for _, r := range writes(w.sim) {
		if strings.HasSuffix(r.Path, "/clone") {
			t.Errorf("the rerun cloned again: %+v", r)
		}
	}
	if c := w.config("pve02", 202, false); c.Values["cores"] != "2" {
		t.Errorf("rerun did not configure: %v", c.Values)
	}
}

// K20: the module never waits on the guest agent unless asked; asked, the
// wait is bounded and fails naming K20 (no lab guest runs an agent), with
// the start reported as changed (the lab saw it).
func TestK20AgentWaitBounded(t *testing.T) {
	w := newWorld(t, 9)
	start := time.Now()
	res := w.run(with(webArgs(), "state", "started", "agent_wait", 1), false)
	took := time.Since(start)
	if !failed(res) || res["changed"] != true || !strings.Contains(msg(res), "(K20)") || res["agent_ready"] != false {
		t.Fatalf("K20: failed=%v changed=%v %v", failed(res), res["changed"], msg(res))
	}
	if took > 30*time.Second {
		t.Errorf("K20: the bounded wait took %v", took)
	}
	if g, _ := clusterguests.Find(w.guests(), 201); g.Status != "running" {
		t.Errorf("K20: VM 201 is %s", g.Status)
	}
	// Without agent_wait, no agent call at all.
	w.sim.ResetRequests()
	if again := w.run(with(webArgs(), "state", "started"), false); failed(again) || again["changed"] != false {
		t.Errorf("rerun: %v", msg(again))
	}
	for _, r := range w.sim.Requests() {
		if strings.Contains(r.Path, "/agent/") {
			t.Errorf("K20: agent call without agent_wait: %s", r.Path)
		}
	}
}

// K18 at the worker's lock: the clone passed the API's checks, then its
// task died waiting on the new VMID's config lock, which another run held
// while it made VM 201 (qemu-server clone_vm: lock_config_full on the new
// VMID before anything is made). The lab makes that state exactly: the
// clone task fails on lock-201.conf, and the other run's VM 201 is there
// when the module reads back. The run names the race (K18) and the VMID,
// is not retried as a K13 queue, and stays changed and unverified: its task
// ran, and no read can prove what it did not do.
func TestK18LostAtTheConfigLock(t *testing.T) {
	w := newWorld(t, 9)
	other := func() {
		if err := w.sim.AddGuest("pve02", pvesim.GuestSpec{VMID: 201, Config: map[string]string{"name": "someone-else", "scsi0": "local-lvm:1"}}); err != nil {
			t.Error(err)
		}
	}
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultTaskFail,
		ExitStatus: "can't lock file '/var/lock/qemu-server/lock-201.conf' - got timeout", Count: 1,
		// The other run's VM shows on the module's next guest-list read.
		Before: func() {
			if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "GET", Path: "/cluster/resources", Kind: pvesim.FaultLatency,
				Delay: time.Millisecond, Count: 1, Before: other}); err != nil {
				t.Error(err)
			}
		}}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(webArgs(), false)
	if !failed(res) || !strings.Contains(msg(res), "VMID 201") || !strings.Contains(msg(res), "K18") {
		t.Errorf("K18 at the lock: %v", msg(res))
	}
	if res["changed"] != true || len(stringsOf(res["changes_unverified"])) != 1 {
		t.Errorf("K18 at the lock: changed=%v unverified=%v, want changed and unverified (the task ran)", res["changed"], res["changes_unverified"])
	}
	clones := 0
	for _, r := range writes(w.sim) {
		if strings.HasSuffix(r.Path, "/clone") {
			clones++
		}
	}
	if clones != 1 {
		t.Errorf("K18 at the lock: %d clone calls, want 1 (the VMID is another's: no retry)", clones)
	}
	if c := w.config("pve02", 201, false); c.Values["name"] != "someone-else" {
		t.Errorf("the other run's VM 201: %v", c.Values)
	}
}

package pveclone

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

func autoArgs(name, rng string) map[string]any {
	return with(webArgs(), "vmid", "auto", "vmid_range", rng, "name", name)
}

func clonesSent(s *pvesim.Sim) []pvesim.Request {
	var out []pvesim.Request
	for _, r := range writes(s) {
		if strings.HasSuffix(r.Path, "/clone") || r.Path == "/nodes/pve03/qemu" {
			out = append(out, r)
		}
	}
	return out
}

func vmidOf(res map[string]any) int {
	n := 0
	fmt.Sscan(pveapi.String(res["vmid"]), &n)
	return n
}

// vmid: auto with a range: bad combinations fail naming the option before
// any request that writes; the module never picks a VMID without a range.
func TestVMIDAutoBadInput(t *testing.T) {
	w := newWorld(t, 9)
	w.sim.ResetRequests()
	cases := []struct {
		args map[string]any
		want string
	}{
		{with(webArgs(), "vmid", "auto"), "vmid_range: required with vmid: auto"},
		{with(autoArgs("", "2000-2099"), "name", nil), "name: required with vmid: auto"},
		{autoArgs("web-a", "2099-2000"), "vmid_range: 2099-2000 is empty"},
		{autoArgs("web-a", "50-200"), "vmid_range: 50-200 is not within PVE's VMIDs (100 … 999999999)"},
		{autoArgs("web-a", "2000-1000000000"), "vmid_range: 2000-1000000000 is not within PVE's VMIDs"},
		{autoArgs("web-a", "2000"), `vmid_range: "2000" is not a range of VMIDs`},
		{with(webArgs(), "vmid", 150, "vmid_range", "2000-2099"), "vmid: 150 is outside vmid_range 2000-2099"},
		{with(webArgs(), "vmid", "next"), `vmid: "next" is neither a VMID`},
		{with(webArgs(), "vmid", 99), "vmid: 99 is out of range"},
		// K1: Perl-false, the clone would be named Copy-of-VM-debian-12 and
		// end unverified, the name never proving the VM ours (the lab's
		// clone_vm and vmstatus).
		{with(webArgs(), "name", "0"), `name: "0" is no name to PVE`},
	}
	for _, c := range cases {
		res := w.run(c.args, false)
		if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), c.want) {
			t.Errorf("%v: failed=%v changed=%v %q, want %q", c.args["vmid_range"], failed(res), res["changed"], msg(res), c.want)
		}
	}
	if m := writes(w.sim); len(m) != 0 {
		t.Errorf("bad input wrote %+v", m)
	}
}

// vmid: auto claims the lowest free VMID of the range (2000 is held by
// another VM), check mode predicts it with a warning and writes nothing,
// the rerun finds the VM by its name in the range: changed=0, the same
// vmid, three reads (PVE 8 and 9). K18: the clone call is the claim.
func TestVMIDAutoClaimAndRerun(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			if err := w.sim.AddGuest("pve02", pvesim.GuestSpec{VMID: 2000, Config: map[string]string{"name": "someone-else"}}); err != nil {
				t.Fatal(err)
			}
			// Outside the range, the same name: not ours.
			if err := w.sim.AddGuest("pve03", pvesim.GuestSpec{VMID: 3000, Config: map[string]string{"name": "web-a"}}); err != nil {
				t.Fatal(err)
			}
			args := autoArgs("web-a", "2000-2009")
			w.sim.ResetRequests()
			check := w.run(args, true)
			if failed(check) || check["changed"] != true || vmidOf(check) != 2001 || len(writes(w.sim)) != 0 {
				t.Fatalf("check: vmid %v %v, writes %v", check["vmid"], msg(check), writes(w.sim))
			}
			if !strings.Contains(pveapi.String(check["warnings"]), "would claim VMID 2001") {
				t.Errorf("check mode does not say which VMID it predicts: %v", check["warnings"])
			}
			res := w.run(args, false)
			if failed(res) || res["changed"] != true || vmidOf(res) != 2001 {
				t.Fatalf("real: vmid %v %v", res["vmid"], msg(res))
			}
			if c := w.config("pve02", 2001, false); c.Values["name"] != "web-a" || c.Values["cores"] != "2" {
				t.Errorf("VM 2001: %v", c.Values)
			}
			w.sim.ResetRequests()
			again := w.run(args, false)
			if failed(again) || again["changed"] != false || vmidOf(again) != 2001 || len(writes(w.sim)) != 0 {
				t.Fatalf("rerun: vmid %v changed %v %v %v", again["vmid"], again["changed"], msg(again), writes(w.sim))
			}
			reads := 0
			for _, r := range w.sim.Requests() {
				if r.Path != "/access/ticket" {
					reads++
				}
			}
			if reads > 3 {
				t.Errorf("the rerun made %d requests, want three reads", reads)
			}
			// absent by name within the range.
			gone := w.run(with(args, "state", "absent"), false)
			if failed(gone) || gone["changed"] != true || vmidOf(gone) != 2001 {
				t.Fatalf("absent: %v %v", gone["vmid"], msg(gone))
			}
			for _, g := range w.guests() {
				if g.VMID == 2001 {
					t.Errorf("VM 2001 left after absent")
				}
			}
			if again := w.run(with(args, "state", "absent"), false); failed(again) || again["changed"] != false {
				t.Errorf("absent again: %v", msg(again))
			}
		})
	}
}

// Two guests of one name in the range: fail listing them, before anything
// is written. A full range fails with it, nothing changed.
func TestVMIDAutoAmbiguousAndFull(t *testing.T) {
	w := newWorld(t, 8)
	for _, g := range []struct {
		id   int
		node string
	}{{2100, "pve02"}, {2101, "pve03"}} {
		if err := w.sim.AddGuest(g.node, pvesim.GuestSpec{VMID: g.id, Config: map[string]string{"name": "twin"}}); err != nil {
			t.Fatal(err)
		}
	}
	w.sim.ResetRequests()
	res := w.run(autoArgs("twin", "2100-2109"), false)
	if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), `2 guests are named "twin" in vmid_range 2100-2109 (2100 on pve02, 2101 on pve03)`) {
		t.Errorf("two of one name: %v", msg(res))
	}
	full := w.run(autoArgs("web-z", "2100-2101"), false)
	if !failed(full) || full["changed"] != false || !strings.Contains(msg(full), "vmid_range: every VMID of 2100-2101 is taken") {
		t.Errorf("full range: %v", msg(full))
	}
	if m := writes(w.sim); len(m) != 0 {
		t.Errorf("wrote %+v", m)
	}
}

// The claim is the clone call itself: a VMID the module's token cannot
// see (K19: the guest list is filtered by VM.Audit; the token may still
// allocate it, so PVE's permission check passes) is refused by PVE as
// taken ("config file already exists"), a proven non-change, and the next
// free one is claimed. The lab's request log shows both clone calls, the
// first refused (K18: nextid reserves nothing).
func TestVMIDAutoRefusedIsRetried(t *testing.T) {
	// On the template's node clone_vm's own check refuses the VMID at once
	// (500 "config file already exists"); held by another node, the clone
	// worker fails writing its temporary config (pmxcfs: File exists).
	for _, tc := range []struct {
		node, refusal string
	}{{"pve01", "500"}, {"pve02", "task"}} {
		t.Run(tc.node, func(t *testing.T) {
			w := newWorld(t, 9)
			if err := w.sim.AddGuest(tc.node, pvesim.GuestSpec{VMID: 2200, Config: map[string]string{"name": "hidden"}}); err != nil {
				t.Fatal(err)
			}
			id, secret, err := w.sim.AddToken("pve01", pvesim.TokenSpec{User: "root@pam", Name: "blind", Privsep: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range []struct{ path, role string }{{"/", "Administrator"}, {"/vms/2200", "priv:VM.Allocate"}} {
				if err := w.sim.Grant("pve01", g.path, id, g.role, true); err != nil {
					t.Fatal(err)
				}
			}
			w.conn["api_token_id"], w.conn["api_token_secret"] = id, secret
			args := with(autoArgs("web-b", "2200-2209"), "node", nil) // the template's node
			w.sim.ResetRequests()
			res := w.run(args, false)
			if failed(res) || res["changed"] != true || vmidOf(res) != 2201 {
				t.Fatalf("vmid %v: %v", res["vmid"], msg(res))
			}
			var sent []string
			for _, r := range writes(w.sim) {
				if strings.HasSuffix(r.Path, "/clone") {
					sent = append(sent, fmt.Sprintf("%s %d", r.Params["newid"], r.Status))
				}
			}
			first := map[string]string{"500": "2200 500", "task": "2200 200"}[tc.refusal]
			if len(sent) != 2 || sent[0] != first || sent[1] != "2201 200" {
				t.Errorf("clone calls (newid status): %v, want [%s 2201 200]", sent, first)
			}
			if !strings.Contains(pveapi.String(res["warnings"]), "VMID 2200 was taken meanwhile") {
				t.Errorf("no warning on the refused VMID: %v", res["warnings"])
			}
			if c := w.config(tc.node, 2200, false); c.Values["name"] != "hidden" {
				t.Errorf("the hidden VM was touched: %v", c.Values)
			}
			if c := w.config("pve01", 2201, false); c.Values["name"] != "web-b" {
				t.Errorf("VM 2201: %v", c.Values)
			}
			n := 0
			for _, g := range w.guests() {
				if g.VMID == 2200 {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d guests hold VMID 2200", n)
			}
		})
	}
}

// K18 for vmid: auto: two runs with different names racing in one range
// end with two VMs of distinct VMIDs, each run reporting the one it
// claimed; each rerun changes nothing and returns the same vmid.
func TestK18VMIDAutoConcurrent(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			w.sim.ResetRequests()
			names := []string{"web-a", "web-b"}
			results := make(chan map[string]any, 2)
			for _, n := range names {
				go func() { results <- w.run(autoArgs(n, "2300-2309"), false) }()
			}
			got := map[string]int{}
			for range names {
				r := <-results
				if failed(r) || r["changed"] != true {
					t.Fatalf("a run failed: %v", msg(r))
				}
				got[cfgOf(r)["name"]] = vmidOf(r)
			}
			if got["web-a"] == got["web-b"] || got["web-a"] < 2300 || got["web-b"] < 2300 {
				t.Fatalf("K18: VMIDs %v", got)
			}
			t.Logf("K18 auto: %v; clone calls %d (a refused claim shows as a third)", got, len(clonesSent(w.sim)))
			inRange := map[int]string{}
			for _, g := range w.guests() {
				if g.VMID >= 2300 && g.VMID <= 2309 {
					inRange[g.VMID] = g.Name
				}
			}
			if len(inRange) != 2 || inRange[got["web-a"]] != "web-a" || inRange[got["web-b"]] != "web-b" {
				t.Errorf("K18: guests in the range %v, runs said %v", inRange, got)
			}
			for _, n := range names {
				w.sim.ResetRequests()
				again := w.run(autoArgs(n, "2300-2309"), false)
				if failed(again) || again["changed"] != false || vmidOf(again) != got[n] || len(writes(w.sim)) != 0 {
					t.Errorf("rerun %s: vmid %v changed %v %v", n, again["vmid"], again["changed"], msg(again))
				}
			}
		})
	}
}

// Ownership by origin, from what PVE keeps: a linked clone's disk names
// its template's base volume, so an existing VMID linked from another
// template, or linked when the task builds it bare or asks a full clone,
// fails before any write with what was found. A template at the VMID
// fails too. A full clone keeps no origin: it is accepted under any
// template (documented, not guessed). PVE 8 and 9. (K1: identity is the
// VMID, and the VM there must be ours.)
func TestOwnershipByOrigin(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			if err := w.sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9005, Template: true, Config: map[string]string{
				"name": "other-tpl", "scsi0": "local-lvm:1", "net0": "virtio,bridge=vmbr0"}}); err != nil {
				t.Fatal(err)
			}
			linked := map[string]any{"vmid": 202, "name": "thin-1", "template": "local-tpl", "full": false}
			if res := w.run(linked, false); failed(res) {
				t.Fatalf("linked clone: %v", msg(res))
			}
			// A full clone of debian-12 (shared storage): no origin kept.
			full := map[string]any{"vmid": 203, "name": "full-1", "template": "9000", "node": "pve01"}
			if res := w.run(full, false); failed(res) {
				t.Fatalf("full clone: %v", msg(res))
			}
			w.sim.ResetRequests()
			cases := []struct {
				args map[string]any
				want string
			}{
				{with(linked, "template", "other-tpl"), `template: VMID 202 (thin-1) is a linked clone of template 9001 (local-tpl): its scsi0 is local-lvm:base-9001-disk-0/vm-202-disk-0, not of "other-tpl"`},
				{with(linked, "template", "9005"), `is a linked clone of template 9001 (local-tpl): its scsi0 is local-lvm:base-9001-disk-0/vm-202-disk-0, not of "9005"`},
				{with(linked, "template", nil, "full", nil, "node", "pve01"), "template: VMID 202 (thin-1) is a linked clone of template 9001 (local-tpl): its scsi0 is local-lvm:base-9001-disk-0/vm-202-disk-0, but this task builds the VM bare"},
				{with(linked, "full", true), "full: VMID 202 (thin-1) is a linked clone of template 9001 (local-tpl)"},
				{map[string]any{"vmid": 9005, "name": "other-tpl", "template": "9000"}, "which is a template"},
			}
			for _, c := range cases {
				res := w.run(c.args, false)
				if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), c.want) || !strings.Contains(msg(res), "nothing was changed") {
					t.Errorf("%v: failed=%v changed=%v %q\nwant %q", c.args, failed(res), res["changed"], msg(res), c.want)
				}
				if m := writes(w.sim); len(m) != 0 {
					t.Fatalf("origin refusal wrote %+v", m)
				}
			}
			// What matches is accepted: the linked clone by its template's
			// VMID or name, the full clone under any template (PVE keeps no
			// origin for it).
			for _, args := range []map[string]any{linked, with(linked, "template", "9001"), full, with(full, "template", "local-tpl")} {
				if res := w.run(args, false); failed(res) || res["changed"] != false {
					t.Errorf("%v: %v %v", args, msg(res), res["changed"])
				}
			}
			if m := writes(w.sim); len(m) != 0 {
				t.Errorf("accepted reruns wrote %+v", m)
			}
		})
	}
}

// The same race for bare VMs: create_vm claims the VMID in
// create_and_lock_config (check_vmid_unused: "VM N already exists on node"),
// the loser's refusal changed nothing and it takes the next one.
func TestK18VMIDAutoConcurrentBare(t *testing.T) {
	w := newWorld(t, 9)
	bare := func(name, node string) map[string]any {
		return map[string]any{"vmid": "auto", "vmid_range": "2400-2409", "name": name, "node": node, "cores": 2,
			"disks": map[string]any{"scsi0": "local-lvm:1"}, "nets": map[string]any{"net0": "virtio,bridge=vmbr0"}}
	}
	results := make(chan map[string]any, 2)
	for _, a := range []map[string]any{bare("bare-a", "pve02"), bare("bare-b", "pve03")} {
		go func() { results <- w.run(a, false) }()
	}
	got := map[string]int{}
	for range 2 {
		r := <-results
		if failed(r) || r["changed"] != true {
			t.Fatalf("a run failed: %v", msg(r))
		}
		got[cfgOf(r)["name"]] = vmidOf(r)
	}
	if got["bare-a"] == got["bare-b"] {
		t.Fatalf("K18: VMIDs %v", got)
	}
	var creates []string
	for _, r := range writes(w.sim) {
		if strings.HasSuffix(r.Path, "/qemu") {
			creates = append(creates, fmt.Sprintf("%s %d", r.Path, r.Status))
		}
	}
	t.Logf("K18 bare auto: %v; create calls %v (a refused claim shows as a third)", got, creates)
	for name, node := range map[string]string{"bare-a": "pve02", "bare-b": "pve03"} {
		if c := w.config(node, got[name], false); c.Values["name"] != name {
			t.Errorf("VM %d on %s: %v", got[name], node, c.Values)
		}
		w.sim.ResetRequests()
		if again := w.run(bare(name, node), false); failed(again) || again["changed"] != false || vmidOf(again) != got[name] || len(writes(w.sim)) != 0 {
			t.Errorf("rerun %s: %v %v %v", name, again["vmid"], again["changed"], msg(again))
		}
	}
}

// A lost answer to the claiming clone is settled by the dispatch
// machinery (the node's task list), never re-sent nor taken for a refusal:
// one clone call, the VMID it claimed returned.
func TestVMIDAutoLostAnswer(t *testing.T) {
	w := newWorld(t, 8)
	if _, err := w.sim.Faults().Add(pvesim.Fault{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultLostAnswer, Count: 1}); err != nil {
		t.Fatal(err)
	}
	w.sim.ResetRequests()
	res := w.run(autoArgs("web-a", "2500-2509"), false)
	if n := len(clonesSent(w.sim)); n != 1 {
		t.Errorf("the clone was sent %d times", n)
	}
	if failed(res) || res["changed"] != true || vmidOf(res) != 2500 {
		t.Fatalf("lost answer: vmid %v %v", res["vmid"], msg(res))
	}
	if c := w.config("pve02", 2500, false); c.Values["name"] != "web-a" || c.Values["cores"] != "2" {
		t.Errorf("VM 2500 after the settled clone: %v", c.Values)
	}
}

// Whose VM is it (issue 23 §5, K1): a task with an explicit vmid and no
// name must not take over the VM another tenant has at that VMID — not its
// memory, NICs, sshkeys or ipconfig, not its power. Refused before any
// write, naming name and adopt, in check mode as in the real run; the
// request log shows no write and the VM's config reads back unchanged,
// still running. A nameless create is refused the same way (its rerun
// could not tell the VM from another's). adopt: true is the documented
// opt-in and converges the VM; with a name the name is still checked.
// PVE 8 and 9.
func TestNamelessVMIDNeverAdoptedSilentlyK1(t *testing.T) {
	for _, ver := range []int{8, 9} {
		t.Run(fmt.Sprintf("PVE%d", ver), func(t *testing.T) {
			w := newWorld(t, ver)
			if err := w.sim.AddGuest("pve03", pvesim.GuestSpec{VMID: 205, Running: true, Config: map[string]string{
				"name": "tenant-b-db", "memory": "1024", "cores": "1", "scsi0": "shared:2", "ide2": "shared:cloudinit",
				"net0": "virtio=BC:24:11:AA:BB:CC,bridge=vmbr0", "ipconfig0": "ip=192.0.2.7/24", "ciuser": "tenant-b"}}); err != nil {
				t.Fatal(err)
			}
			before := w.config("pve03", 205, false).Values
			nameless := with(webArgs(), "vmid", 205, "name", nil, "state", "stopped")
			cases := []struct {
				what  string
				args  map[string]any
				check bool
				want  string
			}{
				{"real run", nameless, false, `name: VMID 205 is held by VM "tenant-b-db" on node pve03 and this task gives no name to prove it is its own`},
				{"check mode", nameless, true, `name: VMID 205 is held by VM "tenant-b-db" on node pve03 and this task gives no name`},
				{"adopt false", with(nameless, "adopt", false), false, `give name: "tenant-b-db" if it is this task's VM, or adopt: true`},
				{"adopt with another name", with(nameless, "adopt", true, "name", "web-1"), false, `vmid: VMID 205 is held by VM "tenant-b-db" on node pve03, not "web-1"`},
				{"nameless create", with(nameless, "vmid", 206), false, "name: required to create VM 206"},
				{"nameless create, check mode", with(nameless, "vmid", 206), true, "name: required to create VM 206"},
			}
			for _, c := range cases {
				w.sim.ResetRequests()
				res := w.run(c.args, c.check)
				if !failed(res) || res["changed"] != false || !strings.Contains(msg(res), c.want) || !strings.Contains(msg(res), "nothing was changed") {
					t.Errorf("%s: failed=%v changed=%v %q\nwant %q", c.what, failed(res), res["changed"], msg(res), c.want)
				}
				if m := writes(w.sim); len(m) != 0 {
					t.Errorf("%s wrote %+v", c.what, m)
				}
			}
			after := w.config("pve03", 205, false).Values
			for k, v := range before {
				if k != "digest" && after[k] != v {
					t.Errorf("VM 205's %s changed: %q → %q", k, v, after[k])
				}
			}
			if len(after) != len(before) {
				t.Errorf("VM 205's config changed: %v → %v", before, after)
			}
			if w.hasGuest(206) {
				t.Errorf("a nameless create made VM 206")
			}
			for _, g := range w.guests() {
				if g.VMID == 205 && g.Status != "running" {
					t.Errorf("VM 205 is %s after the refusals", g.Status)
				}
			}
			// The opt-in: the task says it manages whatever VM holds 205.
			w.sim.ResetRequests()
			adopted := with(nameless, "adopt", true, "nets", nil, "state", "present")
			res := w.run(adopted, false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("adopt: true: failed=%v changed=%v %v", failed(res), res["changed"], msg(res))
			}
			if c := w.config("pve03", 205, false); c.Values["memory"] != "4096" || c.Values["name"] != "tenant-b-db" {
				t.Errorf("adopted VM 205: %v", c.Values)
			}
			if again := w.run(adopted, false); failed(again) || again["changed"] != false {
				t.Errorf("adopt rerun: changed=%v %v", again["changed"], msg(again))
			}
		})
	}
}

// hasGuest reports whether vmid exists anywhere in the cluster.
func (w *world) hasGuest(vmid int) bool {
	for _, g := range w.guests() {
		if g.VMID == vmid {
			return true
		}
	}
	return false
}

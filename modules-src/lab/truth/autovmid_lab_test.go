package truth

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// autoPlay clones the template into a VM found again by its name within a
// range (vmid: auto), on the node itself (local mode: the minted root@pam
// ticket, so both plays run as one principal, as two jobs of one AWX
// credential do). The clone's result is printed whatever it was, and the
// play goes on, so that both recaps can be read.
const autoPlay = `- hosts: pve01
  gather_facts: false
  tasks:
    - name: clone by name
      gopve.proxmox.pve_clone:
        vmid: auto
        vmid_range: 3000-3009
        name: "{{ vm_name }}"
        template: debian-12
        memory: 2048
        timeout: 120
      register: r
      ignore_errors: true
    - name: result
      ansible.builtin.debug:
        msg: "RESULT {{ vm_name }} failed={{ r.failed | default(false) }} changed={{ r.changed }} vmid={{ r.vmid | default('none') }} msg={{ r.msg | default('') }}"
`

var (
	resultRe = regexp.MustCompile(`RESULT (\S+) failed=(\S+) changed=(\S+) vmid=([^"\s]+) msg=(.*)"`)
	recapRe  = regexp.MustCompile(`pve01\s+: ok=\d+\s+changed=(\d+)\s+unreachable=0\s+failed=0`)
)

type autoResult struct {
	name, vmid, msg, out string
	failed, changed      bool
	recapChanged         int
}

// Issue 23 §1, K18: two plays clone from one template at once under
// vmid: auto, and the answers of both clone calls are lost. Each sends its
// clone once (the lab's request log); no name ends with two VMs; a play
// that says it made its VM holds it at the VMID it reports; one that
// cannot prove its clone is changed (its recap too: a write was sent) and
// says it was not sent again — never "nothing was changed". Reruns
// converge to one VM per name, and then change nothing.
func TestTruthTwoPlaysAutoVMIDLostAnswersPVE9(t *testing.T) { twoPlays(t, 9) }

func twoPlays(t *testing.T, pve int) {
	t.Parallel() // see suite
	lab, bin := labtest.Start(t, pve, 1)
	sim := lab.Sim()
	if err := sim.AddGuest("pve01", template); err != nil {
		t.Fatal(err)
	}
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	dir := t.TempDir()
	pb := filepath.Join(dir, "auto.yml")
	if err := os.WriteFile(pb, []byte(autoPlay), 0o644); err != nil {
		t.Fatal(err)
	}
	play := func(name string) autoResult {
		vars := filepath.Join(dir, name+".yml")
		if err := os.WriteFile(vars, []byte("vm_name: "+name+"\n"), 0o644); err != nil {
			t.Error(err)
			return autoResult{name: name}
		}
		out, err := labtest.Playbook(t, lab, coll, vars, pb)
		r := autoResult{name: name, out: out}
		m, rc := resultRe.FindStringSubmatch(out), recapRe.FindStringSubmatch(out)
		if err != nil || m == nil || rc == nil || m[1] != name {
			t.Errorf("play %s: %v\n%s", name, err, out)
			return r
		}
		r.failed, r.changed, r.vmid, r.msg = m[2] == "True", m[3] == "True", m[4], m[5]
		r.recapChanged, _ = strconv.Atoi(rc[1])
		return r
	}
	both := func() map[string]autoResult {
		var mu sync.Mutex
		var wg sync.WaitGroup
		res := map[string]autoResult{}
		for _, n := range []string{"web-a", "web-b"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := play(n)
				mu.Lock()
				res[n] = r
				mu.Unlock()
			}()
		}
		wg.Wait()
		return res
	}
	info, _ := sim.Node("pve01")
	id, secret := sim.LabToken()
	api, err := pveapi.Connect(context.Background(), pveapi.Connection{Host: info.Addr, Port: pvesim.DefaultPort,
		TokenID: id, TokenSecret: secret, ValidateCerts: true, Fingerprint: info.Fingerprint, Timeout: 10}, pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The VMs on the nodes, by name (the cluster's guest list).
	held := func() map[string][]int {
		out := map[string][]int{}
		guests, err := clusterguests.Guests(context.Background(), api)
		if err != nil {
			t.Fatalf("guest list: %v", err)
		}
		for _, g := range guests {
			if g.VMID >= 3000 && g.VMID <= 3009 {
				out[g.Name] = append(out[g.Name], g.VMID)
			}
		}
		return out
	}

	// The first clone call reaches PVE 5 s late, so the other play, which
	// read the same free VMID meanwhile, claims it first: the two collide
	// on one VMID (K18) whatever the start-up jitter of the two
	// ansible-playbook runs. PVE refuses the late call (config file already
	// exists), and the answers of both calls are lost: the refusal's and
	// the winner's.
	for _, f := range []pvesim.Fault{
		{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultLostAnswer, Delay: 5 * time.Second, Count: 1},
		{Method: "POST", Path: "/nodes/*/qemu/*/clone", Kind: pvesim.FaultLostAnswer, Count: 1},
	} {
		if _, err := sim.Faults().Add(f); err != nil {
			t.Fatal(err)
		}
	}
	sim.ResetRequests()
	start := time.Now()
	first := both()
	sim.WaitIdle()
	wall := time.Since(start)
	// Each play's clone calls, by the name they send: after a lost answer
	// a play sends nothing more (not the same call, not another VMID);
	// another VMID only after PVE answered a refusal.
	clones, lost := map[string][]pvesim.Request{}, 0
	for _, r := range sim.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/clone") {
			clones[r.Params["name"]] = append(clones[r.Params["name"]], r)
		}
	}
	for name, calls := range clones {
		for i, r := range calls {
			t.Logf("%s: clone call %d: newid %s, status %d, fault %q", name, i+1, r.Params["newid"], r.Status, r.Fault)
			switch {
			case r.Fault == string(pvesim.FaultLostAnswer):
				lost++
				if i != len(calls)-1 {
					t.Errorf("%s sent another clone after a lost answer (issue 23 §1)", name)
				}
			case i != len(calls)-1 && r.Status < 400:
				t.Errorf("%s claimed another VMID after an accepted clone call", name)
			}
		}
	}
	if lost != 2 || len(clones) != 2 {
		t.Errorf("%d lost answers over %d plays' clone calls, want 2 over 2: the faults did not bite", lost, len(clones))
	}
	vms := held()
	made := 0
	for _, n := range []string{"web-a", "web-b"} {
		r := first[n]
		t.Logf("%s: failed=%v changed=%v vmid=%s recap changed=%d", n, r.failed, r.changed, r.vmid, r.recapChanged)
		if !r.changed || r.recapChanged != 1 {
			t.Errorf("%s sent its clone (the request log) but reports changed=%v, recap changed=%d", n, r.changed, r.recapChanged)
		}
		switch {
		case !r.failed:
			made++
			if got := vms[n]; len(got) != 1 || strconv.Itoa(got[0]) != r.vmid {
				t.Errorf("%s says it made VM %s; the nodes hold %v", n, r.vmid, vms)
			}
		case strings.Contains(r.msg, "nothing was changed") || !strings.Contains(r.msg, "not sent again") ||
			strings.Contains(r.msg, "applied") || strings.Contains(r.out, "shows it happened"):
			// It may not claim the clone happened (another's task taken for
			// its own), nor that nothing did: a write was sent.
			t.Errorf("%s failed untruthfully: %s\n%s", n, r.msg, r.out)
		case len(vms[n]) != 0:
			t.Errorf("%s failed, yet VMs of its name exist: %v", n, vms)
		}
	}
	for name, ids := range vms {
		if len(ids) > 1 {
			t.Errorf("two VMs of one name (issue 23 §1): %s at %v", name, ids)
		}
	}
	if made == 0 {
		t.Errorf("neither play proved its clone; the nodes hold %v", vms)
	}
	t.Logf("two plays, lost answers: %v wall, VMs %v", wall.Round(time.Second), vms)

	// Reruns without faults: a play that could not prove its clone makes it
	// now; then both change nothing and send no write.
	for n, r := range both() {
		if r.failed {
			t.Errorf("rerun %s failed:\n%s", n, r.out)
		}
	}
	sim.ResetRequests()
	for n, r := range both() {
		if r.failed || r.changed || r.recapChanged != 0 {
			t.Errorf("converged rerun %s: failed=%v changed=%v recap %d", n, r.failed, r.changed, r.recapChanged)
		}
	}
	for _, r := range sim.Requests() {
		if r.Mutating() && r.Path != "/access/ticket" {
			t.Errorf("a converged rerun wrote: %s %s", r.Method, r.Path)
		}
	}
	final := held()
	for _, n := range []string{"web-a", "web-b"} {
		if len(final[n]) != 1 {
			t.Errorf("after the reruns %s is held by %v, want exactly one VM", n, final[n])
		}
	}
}

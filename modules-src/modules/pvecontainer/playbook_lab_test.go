package pvecontainer

// The container phase as users run it, on the lab's nodes (real
// ansible-playbook, real SSH, the first node's own API in local mode):
// playbooks/container.yml creates seed 003's runner container from a CT
// template file on the node's local storage (as `pveam download` leaves
// it), check mode first (no write by the request log nor on any node's
// disk, the prediction exactly what the real run reads back), the real
// run, a rerun with changed=0; a key changed by hand with `pct set` is
// reported and set back; then playbooks/ha.yml puts the CT under HA
// (ct:200) and the container phase still changes nothing.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// labVars is the phase's inventory for the test: the runner on local-lvm
// (the installer's lvmthin storage), HA without replication (targets: []:
// the lab's lvmthin is not replicable) and a home node.
const labVars = `pve_container_cts:
  - vmid: 200
    hostname: gitlab-runner
    node: pve01
    ostemplate: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
    cores: 2
    memory: 2048
    swap: 512
    rootfs: {storage: local-lvm, size: 4G}
    nets: {net0: {name: eth0, bridge: vmbr0, ip: dhcp}}
    features: {nesting: true}
    onboot: true
    tags: [runner, ci]
    password: Runner-Root-Pw-1
pve_ha_guests:
  - {vmid: 200, type: ct, targets: [], wait_first_sync: false, node_affinity: {pve01: 100}}
`

// PVE 9 only (issue 27 §3, CI time): the playbook takes no version-dependent
// path; pve_container's behaviour per version (the create, pct set, HA) is
// proven on PVE 8 and 9 against the in-process simulator (module_test.go,
// lifecycle_test.go), HA groups under the real playbook by
// TestLabHAPlaybookPVE8.
func TestLabContainerPlaybookPVE9(t *testing.T) {
	t.Parallel()
	testContainerPlaybook(t, 9)
}

func testContainerPlaybook(t *testing.T, pve int) {
	lab, bin := labtest.Start(t, pve, 2)
	sim := lab.Sim()
	labtest.FormCluster(t, lab)
	// The template as pveam download leaves it: a file in local's
	// template/cache, listed as local:vztmpl/… by the storage's content.
	if _, err := lab.SSH("pve01", "head -c 4096 /dev/urandom > /var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst"); err != nil {
		t.Fatal(err)
	}
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	vars := filepath.Join(t.TempDir(), "pve.yml")
	if err := os.WriteFile(vars, []byte(labVars), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := pveapi.Connect(context.Background(), labConn(lab), pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	config := func() map[string]string {
		t.Helper()
		var raw map[string]any
		if err := c.Get(context.Background(), "/nodes/pve01/lxc/200/config", nil, &raw); err != nil {
			t.Fatalf("config of CT 200: %v", err)
		}
		return qemu.ConfigFrom(raw).Values
	}
	ct := filepath.Join(repo, "playbooks", "container.yml")
	play := func(t *testing.T, pb, what string, args ...string) string {
		t.Helper()
		sim.ResetRequests()
		out, err := labtest.PlaybookEnv(t, lab, coll, vars, pb, []string{"ANSIBLE_STDOUT_CALLBACK=json"}, args...)
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(pb), what, err, out)
		}
		sim.WaitIdle()
		return out
	}
	ctPlay := func(t *testing.T, what string, args ...string) map[string]any {
		t.Helper()
		return containerResult(t, play(t, ct, what, args...))
	}

	var check map[string]any
	labtest.NoWrites(t, lab, "container.yml --check", func() { check = ctPlay(t, "--check", "--check") })
	if w := labWrites(sim); len(w) != 0 || check["changed"] != true {
		t.Fatalf("check run: changed=%v, wrote %v", check["changed"], w)
	}
	predicted := cfgOf(check)
	real := ctPlay(t, "real run")
	if w := labWrites(sim); real["changed"] != true || strings.Join(w, "; ") != "POST /nodes/pve01/lxc" {
		t.Errorf("real run: changed=%v, wrote %v (want the one vzcreate)", real["changed"], w)
	}
	got := config()
	mac, _ := real["mac"].(map[string]any)["net0"].(string)
	if !strings.HasPrefix(mac, "BC:24:11:") {
		t.Errorf("MAC %q", mac)
	}
	unpriv := map[int]string{8: "", 9: "1"}[pve]
	if got["rootfs"] != "local-lvm:vm-200-disk-0,size=4G" || got["unprivileged"] != unpriv {
		t.Errorf("pct create's rootfs and unprivileged on PVE %d: %v", pve, got)
	}
	for k, want := range predicted {
		want = strings.ReplaceAll(want, AssignedAtCreation, mac)
		if strings.TrimRight(got[k], "\n") != strings.TrimRight(want, "\n") {
			t.Errorf("%s: predicted %q, read back %q", k, want, got[k])
		}
	}
	for k := range got {
		if _, ok := predicted[k]; !ok {
			t.Errorf("%s=%q read back, not predicted", k, got[k])
		}
	}
	if conf, _ := lab.SSH("pve01", "cat /etc/pve/nodes/pve01/lxc/200.conf"); strings.Contains(conf, "Runner-Root-Pw-1") {
		t.Errorf("the password is in the CT's config:\n%s", conf)
	}
	if again := ctPlay(t, "rerun"); again["changed"] != false || len(labWrites(sim)) != 0 {
		t.Errorf("rerun: changed=%v, wrote %v", again["changed"], labWrites(sim))
	}

	// A key changed by hand is drift: reported, set back, read back.
	if out, err := lab.SSH("pve01", "pct set 200 --cores 4"); err != nil {
		t.Fatalf("pct set: %v %s", err, out)
	}
	if config()["cores"] != "4" {
		t.Fatalf("pct set did not change cores: %v", config())
	}
	if fix := ctPlay(t, "after pct set"); fix["changed"] != true || config()["cores"] != "2" ||
		strings.Join(labWrites(sim), "; ") != "PUT /nodes/pve01/lxc/200/config" {
		t.Errorf("after pct set: changed=%v, cores %q, wrote %v", fix["changed"], config()["cores"], labWrites(sim))
	}
	if again := ctPlay(t, "rerun after the fix"); again["changed"] != false || len(labWrites(sim)) != 0 {
		t.Errorf("rerun after the fix: changed=%v, wrote %v", again["changed"], labWrites(sim))
	}

	t.Run("ha", func(t *testing.T) { testContainerUnderHA(t, lab, repo, play, ctPlay) })
}

// testContainerUnderHA plays ha.yml over the container the phase made:
// check (no write), real (the HA resource ct:200 and its placement), rerun
// 0; then the container phase again changes nothing with HA managing it.
func testContainerUnderHA(t *testing.T, lab *labctl.Lab, repo string,
	play func(t *testing.T, pb, what string, args ...string) string,
	ctPlay func(t *testing.T, what string, args ...string) map[string]any) {
	sim := lab.Sim()
	ha := filepath.Join(repo, "playbooks", "ha.yml")
	labtest.NoWrites(t, lab, "ha.yml --check", func() {
		if out := play(t, ha, "--check", "--check"); statChanged(t, out, "pve01") != 1 {
			t.Errorf("ha.yml --check predicts nothing:\n%s", out)
		}
	})
	if w := labWrites(sim); len(w) != 0 {
		t.Fatalf("ha.yml --check wrote %v", w)
	}
	play(t, ha, "real run")
	w := strings.Join(labWrites(sim), "\n")
	want := map[bool]string{true: "POST /cluster/ha/rules", false: "POST /cluster/ha/groups"}[pve9(sim)]
	if !strings.Contains(w, "POST /cluster/ha/resources") || !strings.Contains(w, want) || strings.Contains(w, "/cluster/replication") {
		t.Errorf("ha.yml for ct:200 sent %v", w)
	}
	var res []map[string]any
	c, _ := pveapi.Connect(context.Background(), labConn(lab), pveapi.Options{})
	if err := c.Get(context.Background(), "/cluster/ha/resources", nil, &res); err != nil || len(res) != 1 || res[0]["sid"] != "ct:200" {
		t.Errorf("HA resources: %v %v", res, err)
	}
	if out := play(t, ha, "rerun"); statChanged(t, out, "pve01") != 0 || len(labWrites(sim)) != 0 {
		t.Errorf("ha.yml rerun wrote %v", labWrites(sim))
	}
	if again := ctPlay(t, "under HA"); again["changed"] != false || len(labWrites(sim)) != 0 {
		t.Errorf("container.yml under HA: changed=%v, wrote %v", again["changed"], labWrites(sim))
	}
}

func pve9(sim *pvesim.Sim) bool { return sim.Version() >= 9 }

func labConn(lab *labctl.Lab) pveapi.Connection {
	sim := lab.Sim()
	info, _ := sim.Node("pve01")
	id, secret := sim.LabToken()
	return pveapi.Connection{Host: info.Addr, Port: pvesim.DefaultPort, TokenID: id, TokenSecret: secret,
		ValidateCerts: true, Fingerprint: info.Fingerprint, Timeout: 10}
}

// labWrites are the request log's writes, the login aside.
func labWrites(sim *pvesim.Sim) []string {
	var out []string
	for _, r := range writes(sim) {
		out = append(out, r.Method+" "+r.Path)
	}
	return out
}

// jsonDoc is the json callback's output.
type jsonDoc struct {
	Plays []struct {
		Tasks []struct {
			Task struct {
				Name string `json:"name"`
			} `json:"task"`
			Hosts map[string]map[string]any `json:"hosts"`
		} `json:"tasks"`
	} `json:"plays"`
	Stats map[string]map[string]any `json:"stats"`
}

func parseJSON(t *testing.T, out string) jsonDoc {
	t.Helper()
	var doc jsonDoc
	i := strings.Index(out, "{")
	if i < 0 || json.Unmarshal([]byte(out[i:]), &doc) != nil {
		t.Fatalf("no json callback output:\n%s", out)
	}
	return doc
}

// containerResult is the module's result for the list's one container.
func containerResult(t *testing.T, out string) map[string]any {
	t.Helper()
	for _, p := range parseJSON(t, out).Plays {
		for _, tk := range p.Tasks {
			if !strings.HasSuffix(tk.Task.Name, "Containers of the list, one at a time") {
				continue
			}
			for _, h := range tk.Hosts {
				if rs, _ := h["results"].([]any); len(rs) == 1 {
					r, _ := rs[0].(map[string]any)
					return r
				}
			}
		}
	}
	t.Fatalf("no result of the container task:\n%s", out)
	return nil
}

// statChanged is the json callback's changed count of host, failing the
// test when the host failed or was unreachable.
func statChanged(t *testing.T, out, host string) int {
	t.Helper()
	st := parseJSON(t, out).Stats[host]
	if st == nil || st["failures"] != float64(0) || st["unreachable"] != float64(0) {
		t.Fatalf("%s: stats %v\n%s", host, st, out)
	}
	n, _ := st["changed"].(float64)
	return int(n)
}

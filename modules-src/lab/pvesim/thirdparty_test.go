package pvesim

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/qemuserver"
)

// The lab against a client nobody here wrote: Debian 12's `ansible`
// (community.general 6.6.2: proxmox_kvm, proxmox_nic, proxmox_disk) over
// `python3-proxmoxer`, run by the real ansible-playbook. Each step asserts
// what real PVE answers that client — the expected answer cited from PVE's
// code — and, where the client is known to misbehave, the misbehaviour
// itself (K1: identity by name; K15: no check mode; a failed task read as
// a timeout; c.p#404: an existing newid answers the source VMID). If the
// lab stopped behaving like PVE on these calls, the client would do
// something else and the test would fail.

const debianPython = "/usr/bin/python3"

// thirdParty runs one-play playbooks against a lab node.
type thirdParty struct {
	t      *testing.T
	s      *Sim
	dir    string
	vars   string // the play's module_defaults
	python string
}

// needThirdParty stops the test unless Debian's ansible collections and
// proxmoxer are installed (hack/deps.sh installs them).
func needThirdParty(t *testing.T) {
	t.Helper()
	testenv.NeedTools(t, "ansible-playbook", "ansible-doc")
	// Debian's interpreter: the one its packages install into (a python3
	// first on PATH, e.g. pyenv's, would not see them).
	if out, err := exec.Command(debianPython, "-c", "import proxmoxer, requests").CombinedOutput(); err != nil {
		testenv.Skipf(t, "python3-proxmoxer is missing (make deps): %v %s", err, out)
	}
	for _, m := range []string{"community.general.proxmox_kvm", "community.general.proxmox_nic", "community.general.proxmox_disk"} {
		if out, err := exec.Command("ansible-doc", "-t", "module", "-j", m).CombinedOutput(); err != nil || !strings.Contains(string(out), `"module"`) {
			testenv.Skipf(t, "%s is missing (Debian's ansible package, make deps): %v", m, err)
		}
	}
}

func newThirdParty(t *testing.T, s *Sim, node string) *thirdParty {
	info, _ := s.Node(node)
	u, _ := url.Parse(info.URL)
	id, secret := s.LabToken()
	user, name, _ := strings.Cut(id, "!")
	defaults := fmt.Sprintf("api_host: %q\n      api_user: %q\n      api_token_id: %q\n      api_token_secret: %q\n      validate_certs: false",
		u.Hostname(), user, name, secret)
	var b strings.Builder
	for _, m := range []string{"proxmox_kvm", "proxmox_nic", "proxmox_disk"} {
		fmt.Fprintf(&b, "    community.general.%s:\n      %s\n", m, defaults)
	}
	return &thirdParty{t: t, s: s, dir: t.TempDir(), vars: b.String(), python: debianPython}
}

// stepResult is one task's result as the json callback reports it, and
// what the lab saw during the run.
type stepResult struct {
	res      map[string]any
	requests []Request
}

func (r stepResult) changed() bool { b, _ := r.res["changed"].(bool); return b }
func (r stepResult) failed() bool  { b, _ := r.res["failed"].(bool); return b }
func (r stepResult) skipped() bool { b, _ := r.res["skipped"].(bool); return b }
func (r stepResult) msg() string   { s, _ := r.res["msg"].(string); return s }
func (r stepResult) mutating() []string {
	var out []string
	for _, q := range r.requests {
		if q.Mutating() {
			out = append(out, q.Method+" "+q.Path)
		}
	}
	return out
}

// run plays one task (YAML, indented as a list item under tasks) and
// returns its result; extra are ansible-playbook flags (--check).
func (p *thirdParty) run(name, task string, extra ...string) stepResult {
	p.t.Helper()
	play := fmt.Sprintf("- hosts: localhost\n  gather_facts: false\n  module_defaults:\n%s  tasks:\n    - name: %s\n%s", p.vars, name, task)
	file := filepath.Join(p.dir, strings.ReplaceAll(name, " ", "_")+".yml")
	if err := os.WriteFile(file, []byte(play), 0o600); err != nil {
		p.t.Fatal(err)
	}
	before := len(p.s.Requests())
	args := append([]string{"-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + p.python, file}, extra...)
	cmd := exec.Command("ansible-playbook", args...)
	cmd.Env = append(os.Environ(), "ANSIBLE_STDOUT_CALLBACK=ansible.posix.json", "ANSIBLE_NOCOLOR=1",
		"ANSIBLE_LOCAL_TEMP="+filepath.Join(p.dir, "tmp"), "ANSIBLE_HOME="+filepath.Join(p.dir, "home"))
	out, _ := cmd.Output() // a failed task exits 2; the JSON says which
	var doc struct {
		Plays []struct {
			Tasks []struct {
				Hosts map[string]map[string]any `json:"hosts"`
			} `json:"tasks"`
		} `json:"plays"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Plays) != 1 || len(doc.Plays[0].Tasks) != 1 {
		p.t.Fatalf("%s: no JSON result (%v):\n%s", name, err, out)
	}
	return stepResult{res: doc.Plays[0].Tasks[0].Hosts["localhost"], requests: p.s.Requests()[before:]}
}

func TestCommunityGeneralProxmoxK1K15(t *testing.T) {
	testenv.NeedLong(t, "about 20 ansible-playbook runs per PVE version")
	needThirdParty(t)
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s, a, b := twoNodes(t, simOpts{Version: v, TaskDuration: 30 * time.Millisecond, RestartWindow: 200 * time.Millisecond})
			a.Call("POST", "/storage", url.Values{"storage": {"shared"}, "type": {"nfs"}, "server": {"10.0.0.9"},
				"export": {"/srv"}, "path": {"/mnt/pve/shared"}, "content": {"images"}}).Must(t, "nfs storage")
			makeTemplate(t, a, 9000, url.Values{"name": {"tmpl-debian"}, "scsi0": {"shared:1"}})
			createVM(t, b, 150, url.Values{"name": {"web-01"}}) // another tenant's VM on pve02
			a.Call("POST", "/pools", url.Values{"poolid": {"tenant"}}).Must(t, "pool")
			p := newThirdParty(t, s, "pve01")
			cfg := func(node string, vmid int) map[string]any {
				return a.Call("GET", fmt.Sprintf("/nodes/%s/qemu/%d/config", node, vmid), nil).Must(t, "config").Obj()
			}

			// Clone by name, full, to the other node, into a pool: proxmox_kvm
			// POSTs …/nodes/pve01/qemu/9000/clone with target (Qemu.pm
			// clone_vm: the source node's URL, K2) and waits for the UPID.
			r := p.run("clone by name", `      community.general.proxmox_kvm:
        node: pve01
        clone: tmpl-debian
        name: web-02
        newid: 201
        target: pve02
        full: true
        storage: shared
        format: raw
        pool: tenant
        timeout: 60
`)
			if r.failed() || !r.changed() || r.res["vmid"] != float64(201) {
				t.Fatalf("clone by name: %v", r.res)
			}
			c201 := cfg("pve02", 201)
			if c201["name"] != "web-02" || !strings.HasPrefix(fmt.Sprint(c201["scsi0"]), "shared:201/vm-201-disk-0.raw") {
				t.Errorf("VM 201 on pve02: %v", c201)
			}
			pools := a.Call("GET", "/pools", url.Values{"poolid": {"tenant"}}).Must(t, "pool").List()
			if m, _ := pools[0]["members"].([]any); len(m) != 1 || m[0].(map[string]any)["id"] != "qemu/201" {
				t.Errorf("tenant pool after a clone with pool=: %v", pools)
			}

			// Linked clone by VMID on the template's node (format unspecified:
			// PVE refuses `format` on a linked clone).
			r = p.run("linked clone by vmid", `      community.general.proxmox_kvm:
        node: pve01
        vmid: 9000
        clone: anything
        name: web-03
        newid: 202
        full: false
        timeout: 60
`)
			if r.failed() || !r.changed() {
				t.Fatalf("linked clone: %v", r.res)
			}
			if got := fmt.Sprint(cfg("pve01", 202)["scsi0"]); !strings.HasPrefix(got, "shared:9000/base-9000-disk-0.raw/202/vm-202-disk-0.qcow2") {
				t.Errorf("linked clone's disk: %s", got)
			}

			// Linked clone by VMID across nodes: the template's disk is on
			// shared storage, so clone_vm lets target through
			// ($check_storage_access_clone) and the overlay lands under the
			// base on the shared storage; the config ends on pve02.
			r = p.run("linked clone by vmid across nodes", `      community.general.proxmox_kvm:
        node: pve01
        vmid: 9000
        clone: anything
        name: web-05
        newid: 205
        target: pve02
        full: false
        timeout: 60
`)
			if r.failed() || !r.changed() {
				t.Fatalf("linked clone across nodes: %v", r.res)
			}
			if got := fmt.Sprint(cfg("pve02", 205)["scsi0"]); !strings.HasPrefix(got, "shared:9000/base-9000-disk-0.raw/205/vm-205-disk-0.qcow2") {
				t.Errorf("linked clone across nodes, disk: %s", got)
			}

			// K1: a VM of the same name elsewhere (web-01, VMID 150 on pve02)
			// makes proxmox_kvm answer ok with THAT VM's id and clone nothing.
			r = p.run("clone onto a taken name", `      community.general.proxmox_kvm:
        node: pve01
        clone: tmpl-debian
        name: web-01
        newid: 203
        timeout: 60
`)
			if r.failed() || r.changed() || r.res["vmid"] != float64(150) || len(r.mutating()) != 0 {
				t.Errorf("K1 misbehaviour not reproduced: %v, writes %v", r.res, r.mutating())
			}
			if _, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/203.conf"); ok {
				t.Error("K1: a clone happened")
			}
			// c.p#404: a taken newid answers ok with the SOURCE's VMID.
			r = p.run("clone onto a taken vmid", `      community.general.proxmox_kvm:
        node: pve01
        clone: tmpl-debian
        name: web-09
        newid: 201
`)
			if r.failed() || r.changed() || r.res["vmid"] != float64(9000) || len(r.mutating()) != 0 {
				t.Errorf("taken newid: %v, writes %v", r.res, r.mutating())
			}

			// K15: no check mode — skipped, not a single request.
			r = p.run("clone in check mode", `      community.general.proxmox_kvm:
        node: pve01
        clone: tmpl-debian
        name: web-04
        newid: 204
`, "--check")
			if !r.skipped() || len(r.requests) != 0 {
				t.Errorf("K15: check mode: %v, %d requests", r.res, len(r.requests))
			}

			// update: a synchronous PUT config; always "changed", even when
			// nothing differs (c.p#24).
			for i := 0; i < 2; i++ {
				r = p.run(fmt.Sprintf("update %d", i), `      community.general.proxmox_kvm:
        node: pve02
        vmid: 201
        name: web-02
        cores: 4
        memory: 2048
        update: true
`)
				if r.failed() || !r.changed() {
					t.Errorf("update run %d: %v", i, r.res)
				}
			}
			if c := cfg("pve02", 201); c["cores"] != float64(4) || c["memory"] != "2048" && c["memory"] != float64(2048) {
				t.Errorf("after update: %v", c)
			}

			// proxmox_nic keeps the MAC (K16) and compares strings: the
			// second run is ok because the lab prints netN as print_net does.
			mac := qemuserver.NetMAC(fmt.Sprint(cfg("pve02", 201)["net0"]))
			for i, want := range []bool{true, false} {
				r = p.run(fmt.Sprintf("nic %d", i), `      community.general.proxmox_nic:
        vmid: 201
        interface: net0
        bridge: vmbr1
        tag: 10
`)
				if r.failed() || r.changed() != want {
					t.Errorf("proxmox_nic run %d: %v", i, r.res)
				}
			}
			if net := fmt.Sprint(cfg("pve02", 201)["net0"]); net != "virtio="+mac+",bridge=vmbr1,tag=10" {
				t.Errorf("K16: net0 %s, want the MAC %s kept", net, mac)
			}

			// proxmox_disk: resize (PUT resize: a task since 8.0 the client
			// does not wait for; grow only, K11), add a disk (POST config,
			// waited), detach it (unlink, force=0: unused0, the volume kept —
			// vmconfig_register_unused_drive) and remove unused0 (unlink
			// force=1: freed).
			r = p.run("disk resize", `      community.general.proxmox_disk:
        vmid: 201
        disk: scsi0
        size: 2G
        state: resized
`)
			if r.failed() || !r.changed() {
				t.Fatalf("resize: %v", r.res)
			}
			eventually(t, "resize task", func() bool { return strings.Contains(fmt.Sprint(cfg("pve02", 201)["scsi0"]), "size=2G") })
			r = p.run("disk add", `      community.general.proxmox_disk:
        vmid: 201
        disk: scsi1
        storage: shared
        size: 1
        state: present
`)
			if r.failed() || !r.changed() {
				t.Fatalf("add disk: %v", r.res)
			}
			r = p.run("disk detach", `      community.general.proxmox_disk:
        vmid: 201
        disk: scsi1
        state: detached
`)
			c := cfg("pve02", 201)
			if r.failed() || !r.changed() || c["scsi1"] != nil || c["unused0"] != "shared:201/vm-201-disk-1.raw" {
				t.Errorf("detach: %v config %v", r.res, c)
			}
			r = p.run("disk remove unused", `      community.general.proxmox_disk:
        vmid: 201
        disk: unused0
        state: absent
`)
			if got := a.Call("GET", "/nodes/pve02/storage/shared/content/shared:201/vm-201-disk-1.raw", nil); r.failed() || !r.changed() || got.Status != 500 {
				t.Errorf("remove unused0: %v; volume still answers %d", r.res, got.Status)
			}

			// start/stop by name, found through /cluster/resources on pve02.
			r = p.run("start", `      community.general.proxmox_kvm:
        name: web-02
        state: started
        timeout: 60
`)
			if r.failed() || !r.changed() {
				t.Errorf("start: %v", r.res)
			}
			r = p.run("stop", `      community.general.proxmox_kvm:
        name: web-02
        state: stopped
        timeout: 60
`)
			if r.failed() || !r.changed() {
				t.Errorf("stop: %v", r.res)
			}
			// A start that fails (a missing cicustom snippet, read at start:
			// S4) is seen as a timeout: api_task_ok waits for exitstatus OK.
			putConfig(t, b, 201, url.Values{"ide2": {"shared:cloudinit"}, "cicustom": {"vendor=shared:snippets/missing.yaml"}})
			r = p.run("start failing", `      community.general.proxmox_kvm:
        vmid: 201
        state: started
        timeout: 3
`)
			if !r.failed() || !strings.Contains(r.msg(), "Reached timeout while waiting for starting VM") {
				t.Errorf("a failed start task: %v", r.res)
			}

			// delete: DELETE …/qemu/201, a qmdestroy task; the VM's volumes
			// and its pool membership go with it (destroy_vm, remove_vm_access).
			r = p.run("delete", `      community.general.proxmox_kvm:
        vmid: 201
        state: absent
        timeout: 60
`)
			if r.failed() || !r.changed() {
				t.Errorf("delete: %v", r.res)
			}
			if got := volids(t, b, "shared"); strings.Contains(strings.Join(got, " "), "vm-201-") {
				t.Errorf("volumes of 201 left: %v", got)
			}
			if m, _ := a.Call("GET", "/pools", url.Values{"poolid": {"tenant"}}).Must(t, "pool").List()[0]["members"].([]any); len(m) != 0 {
				t.Errorf("destroyed VM still in its pool: %v", m)
			}
		})
	}
}

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
)

// The lab's containers against a client nobody here wrote: Debian 12's
// python3-proxmoxer, called as its users call it (create, config get/put,
// status start/stop, delete, each task waited for through
// nodes/{n}/tasks/{upid}/status). Each expected answer is PVE's, cited
// from pve-container; a refusal is ResourceException(500, die message).
const proxmoxerLxcScript = `
import json, sys, time
from proxmoxer import ProxmoxAPI
from proxmoxer.core import ResourceException
host, port, user, token, secret, tmpl = sys.argv[1:7]
px = ProxmoxAPI(host, port=int(port), user=user, token_name=token, token_value=secret, verify_ssl=False)
node = px.nodes("pve01")
ct = node.lxc(200)
out = {}
def call(step, f):
    try:
        out[step] = {"ok": True, "data": f()}
    except ResourceException as e:
        out[step] = {"ok": False, "status": e.status_code, "msg": str(e.content)}
def task(step, f):
    call(step, f)
    r = out[step]
    if r["ok"]:
        while True:
            st = node.tasks(r["data"]).status.get()
            if st["status"] == "stopped":
                r["exitstatus"] = st.get("exitstatus")
                break
            time.sleep(0.05)
task("create", lambda: node.lxc.post(vmid=200, hostname="runner", ostemplate=tmpl, rootfs="local-lvm:4",
    cores=1, memory=512, net0="name=eth0,bridge=vmbr0,ip=dhcp", password="Px-Secret-1"))
call("create again", lambda: node.lxc.post(vmid=200, hostname="other", ostemplate=tmpl, rootfs="local-lvm:4"))
task("create missing template", lambda: node.lxc.post(vmid=201, hostname="nt", ostemplate="local:vztmpl/none.tar.zst", rootfs="local-lvm:1"))
call("config", lambda: ct.config.get())
call("config put", lambda: ct.config.put(cores=2, description="ci runner", delete="swap"))
call("config put stale", lambda: ct.config.put(cores=3, digest="0" * 40))
call("config after put", lambda: ct.config.get())
task("start", lambda: ct.status.start.post())
call("start again", lambda: ct.status.start.post())
call("current running", lambda: ct.status.current.get())
call("delete running", lambda: ct.delete())
task("stop", lambda: ct.status.stop.post())
call("stop again", lambda: ct.status.stop.post())
call("current stopped", lambda: ct.status.current.get())
task("delete", lambda: ct.delete())
call("config deleted", lambda: ct.config.get())
call("list", lambda: node.lxc.get())
print(json.dumps(out))
`

type pxStep struct {
	OK         bool            `json:"ok"`
	Data       json.RawMessage `json:"data"`
	Status     int             `json:"status"`
	Msg        string          `json:"msg"`
	ExitStatus string          `json:"exitstatus"`
}

func TestProxmoxerContainers(t *testing.T) {
	testenv.NeedTools(t, debianPython)
	if out, err := exec.Command(debianPython, "-c", "import proxmoxer, requests").CombinedOutput(); err != nil {
		testenv.Skipf(t, "python3-proxmoxer is missing (make deps): %v %s", err, out)
	}
	const tmpl = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s, _, _ := twoNodes(t, simOpts{Version: v, TaskDuration: 30 * time.Millisecond}, func(c *Config) {
				c.StorageContent = func(node string, st StorageInfo) ([]Volume, error) {
					if st.ID != "local" {
						return nil, nil
					}
					return []Volume{{VolID: tmpl, Content: "vztmpl", Format: "tzst", Size: 120 << 20}}, nil
				}
			})
			res := runProxmoxer(t, s, proxmoxerLxcScript, tmpl)
			checkProxmoxerContainers(t, v, res)
			// Every call reached the lab as one request: the script's 11
			// writes, refusals included, and no password in the log.
			writes := 0
			for _, r := range s.Requests() {
				if r.Mutating() && r.Path != "/access/ticket" {
					writes++
				}
				if strings.Contains(fmt.Sprint(r.Params), "Px-Secret-1") {
					t.Errorf("the request log shows the password: %s %s", r.Method, r.Path)
				}
			}
			if writes != 11 {
				t.Errorf("the lab saw %d mutating requests, the script sent 11", writes)
			}
		})
	}
}

func runProxmoxer(t *testing.T, s *Sim, script string, args ...string) map[string]pxStep {
	t.Helper()
	info, _ := s.Node("pve01")
	u, _ := url.Parse(info.URL)
	id, secret := s.LabToken()
	user, name, _ := strings.Cut(id, "!")
	path := filepath.Join(t.TempDir(), "px.py")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	s.ResetRequests()
	raw, err := exec.Command(debianPython, append([]string{path, u.Hostname(), u.Port(), user, name, secret}, args...)...).Output()
	if err != nil {
		t.Fatalf("proxmoxer: %v\n%s", err, raw)
	}
	var res map[string]pxStep
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return res
}

func checkProxmoxerContainers(t *testing.T, v int, res map[string]pxStep) {
	ok := func(step string) json.RawMessage {
		t.Helper()
		if r, found := res[step]; !found || !r.OK {
			t.Errorf("%s: %+v, want success", step, r)
		}
		return res[step].Data
	}
	refused := func(step, msg string) {
		t.Helper()
		if r := res[step]; r.OK || r.Status != 500 || r.Msg != msg {
			t.Errorf("%s: %+v, want 500 %q", step, r, msg)
		}
	}
	task := func(step, typ, exit string) {
		t.Helper()
		var upid string
		_ = json.Unmarshal(ok(step), &upid)
		if !strings.HasPrefix(upid, "UPID:pve01:") || !strings.Contains(upid, ":"+typ+":200:") && !strings.Contains(upid, ":"+typ+":201:") {
			t.Errorf("%s: UPID %q, want a %s task", step, upid, typ)
		}
		if res[step].ExitStatus != exit {
			t.Errorf("%s: exit status %q, want %q", step, res[step].ExitStatus, exit)
		}
	}
	config := func(step string) map[string]any {
		t.Helper()
		var c map[string]any
		_ = json.Unmarshal(ok(step), &c)
		return c
	}
	// API2/LXC.pm create_vm: a vzcreate task (returns the UPID); the VMID
	// is checked before the task (check_vmid_unused, no "unable to create"
	// prefix); a template that is no file on its storage fails the task
	// (restore_archive: "$emsg can't find file").
	task("create", "vzcreate", "OK")
	refused("create again", "CT 200 already exists on node 'pve01'")
	task("create missing template", "vzcreate", "unable to create CT 201 - can't find file 'local:vztmpl/none.tar.zst'")
	// LXC/Config.pm vm_config: the config with its digest; the rootfs
	// allocated on lvmthin as vm-<vmid>-disk-<n>; unprivileged by the
	// version's default (pve-container 6.0: PVE 9 yes, PVE 8 no).
	c := config("config")
	if c["hostname"] != "runner" || fmt.Sprint(c["cores"]) != "1" || c["rootfs"] != "local-lvm:vm-200-disk-0,size=4G" ||
		c["digest"] == nil || c["arch"] != "amd64" || c["ostype"] != "debian" || !strings.Contains(fmt.Sprint(c["net0"]), "hwaddr=BC:24:11:") {
		t.Errorf("config: %v", c)
	}
	if _, has := c["unprivileged"]; has != (v >= 9) {
		t.Errorf("PVE %d unprivileged: %v", v, c["unprivileged"])
	}
	if _, has := c["password"]; has {
		t.Errorf("the config holds the password: %v", c)
	}
	// update_vm returns null; a stale digest is assert_if_modified's die.
	if d := ok("config put"); string(d) != "null" {
		t.Errorf("update_vm returns null, got %s", d)
	}
	refused("config put stale", "detected modified configuration - file changed by other user? Try again.")
	if c := config("config after put"); fmt.Sprint(c["cores"]) != "2" || c["description"] != "ci runner\n" && c["description"] != "ci runner" {
		t.Errorf("config after put: %v", c)
	}
	// API2/LXC/Status.pm: vzstart/vzstop tasks; "already running" and
	// "not running" are died before any task; vm_status' status.
	task("start", "vzstart", "OK")
	refused("start again", "CT 200 already running")
	if st := config("current running"); st["status"] != "running" || fmt.Sprint(st["vmid"]) != "200" {
		t.Errorf("current running: %v", st)
	}
	// destroy_vm: a running CT is refused before the task.
	refused("delete running", "unable to destroy CT 200 - container is running")
	task("stop", "vzstop", "OK")
	refused("stop again", "CT 200 not running")
	if st := config("current stopped"); st["status"] != "stopped" {
		t.Errorf("current stopped: %v", st)
	}
	task("delete", "vzdestroy", "OK")
	refused("config deleted", "Configuration file 'nodes/pve01/lxc/200.conf' does not exist")
	if d := ok("list"); string(d) != "[]" {
		t.Errorf("vmlist after delete: %s", d)
	}
}

package labctl

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// Issue 25 §4, on PVE 8 and 9, one one-node lab each:
//   - pvestatd: a storage's content subdirectories appear within a cycle of
//     the status daemon, with no API call (S4: an Ansible copy into
//     /var/lib/vz/snippets right after `pvesm set … snippets`), and only for
//     storages enabled on the node;
//   - uploads: python3-proxmoxer's multipart upload (ISO, CT template) is
//     taken as pveproxy takes it and lands in the storage's content, listed
//     with its volid and size.
func TestLabPvestatdAndUploadsS4(t *testing.T) {
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		testenv.Skipf(t, "python3 is missing: %v", err)
	}
	if out, err := exec.Command("/usr/bin/python3", "-c", "import proxmoxer, requests").CombinedOutput(); err != nil {
		testenv.Skipf(t, "python3-proxmoxer is missing (make deps): %v %s", err, out)
	}
	const statd = 300 * time.Millisecond
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			lab := startLab(t, v, func(o *Options) {
				o.Nodes = 1
				o.SimConfig = func(c *pvesim.Config) { c.StatdInterval, c.TaskDuration = statd, 50*time.Millisecond }
			})
			t.Run("pvestatd_activates", func(t *testing.T) { testPvestatd(t, lab, statd) })
			t.Run("proxmoxer_upload", func(t *testing.T) { testProxmoxerUpload(t, lab, v) })
		})
	}
}

// waitOnNode runs a shell test on the node every 50 ms until it holds
// (true) or within seconds have passed (false), in one SSH session.
func waitOnNode(t *testing.T, lab *Lab, cond string, within time.Duration) bool {
	t.Helper()
	n := int(within / (50 * time.Millisecond))
	out := onNode(t, lab, "pve01", fmt.Sprintf("i=0; while [ $i -lt %d ]; do if %s; then echo YES; exit 0; fi; sleep 0.05; i=$((i+1)); done; echo NO", n, cond))
	return strings.TrimSpace(out) == "YES"
}

func testPvestatd(t *testing.T, lab *Lab, statd time.Duration) {
	// S4: `pvesm set` writes storage.cfg and activates nothing (Config.pm
	// update); pvestatd's next storage_info does, with no API call.
	onNode(t, lab, "pve01", "test ! -e /var/lib/vz/snippets")
	lab.Sim().ResetRequests()
	onNode(t, lab, "pve01", "pvesm set local --content iso,vztmpl,backup,import,snippets")
	start := time.Now()
	if !waitOnNode(t, lab, "test -d /var/lib/vz/snippets", 20*statd) {
		t.Fatalf("no /var/lib/vz/snippets %s after pvesm set (pvestatd cycle %s)", time.Since(start).Round(time.Millisecond), statd)
	}
	for _, r := range lab.Sim().Requests() {
		if strings.HasPrefix(r.Path, "/nodes/") {
			t.Errorf("a %s %s ran meanwhile: the directory may come from the API, not pvestatd", r.Method, r.Path)
		}
	}
	// A storage disabled, or whose `nodes` leave this node out, is not
	// activated (storage_check_enabled with the local node); enabled again,
	// it is.
	onNode(t, lab, "pve01", "pvesm add dir extra --path /srv/extra --content iso && test -d /srv/extra/template/iso")
	for _, c := range []struct{ set, unset string }{
		{"--disable 1", "--disable 0"},
		{"--nodes pve07", "--delete nodes"},
	} {
		onNode(t, lab, "pve01", "pvesm set extra "+c.set+" && rm -rf /srv/extra")
		if waitOnNode(t, lab, "test -e /srv/extra", 4*statd) {
			t.Errorf("pvestatd activated storage extra with %s", c.set)
		}
		onNode(t, lab, "pve01", "pvesm set extra "+c.unset)
		if !waitOnNode(t, lab, "test -d /srv/extra/template/iso", 20*statd) {
			t.Errorf("pvestatd did not activate storage extra again after %s", c.unset)
		}
	}
}

// proxmoxerUploadScript uploads through proxmoxer 1.2 (requests' multipart
// encoding: the data fields in the order given, then the file part named
// after the keyword, filename="<basename>"), waits for each task and
// lists the storage's content.
const proxmoxerUploadScript = `
import json, sys, time
from proxmoxer import ProxmoxAPI
from proxmoxer.core import ResourceException
host, port, user, token, secret, node, d = sys.argv[1:8]
px = ProxmoxAPI(host, port=int(port), user=user, token_name=token, token_value=secret, verify_ssl=False)
st = px.nodes(node).storage("local")
out = {}
def wait(upid):
    for _ in range(600):
        s = px.nodes(node).tasks(upid).status.get()
        if s["status"] == "stopped":
            return {"upid": upid, "exitstatus": s.get("exitstatus"), "type": s.get("type"),
                    "log": [l["t"] for l in px.nodes(node).tasks(upid).log.get(limit=100)]}
        time.sleep(0.05)
    return {"upid": upid, "exitstatus": "timeout"}
def call(step, f):
    try:
        out[step] = {"ok": True, "data": f()}
    except ResourceException as e:
        out[step] = {"ok": False, "status": e.status_code, "msg": str(e.content)}
    except Exception as e:
        out[step] = {"ok": False, "status": 0, "msg": repr(e)}
def up(name, **kw):
    with open(d + "/" + name, "rb") as f:
        return wait(st.upload.post(filename=f, **kw))
call("iso", lambda: up("debian-13.iso", content="iso", **{"checksum-algorithm": "sha256", "checksum": sys.argv[8]}))
call("vztmpl", lambda: up("debian-12-standard_12.7-1_amd64.tar.zst", content="vztmpl"))
call("plain tar", lambda: up("alpine-3.22.tar", content="vztmpl"))
call("bad checksum", lambda: up("other.iso", content="iso", **{"checksum-algorithm": "md5", "checksum": "0" * 32}))
call("checksum first", lambda: up("other.iso", content="iso", **{"checksum": "0" * 32, "checksum-algorithm": "md5"}))
call("wrong extension", lambda: up("other.iso", content="vztmpl"))
call("content", lambda: st.content.get())
print(json.dumps(out))
`

func testProxmoxerUpload(t *testing.T, lab *Lab, v int) {
	dir := t.TempDir()
	iso := make([]byte, 1<<20+7) // several reads of the body, not a multiple of anything
	if _, err := rand.Read(iso); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(iso)
	files := map[string][]byte{"debian-13.iso": iso, "debian-12-standard_12.7-1_amd64.tar.zst": []byte("zstd frames\r\n--not a boundary--\r\n"),
		"alpine-3.22.tar": make([]byte, 10240), "other.iso": []byte("x")}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "up.py")
	if err := os.WriteFile(script, []byte(proxmoxerUploadScript), 0o600); err != nil {
		t.Fatal(err)
	}
	info, _ := lab.Sim().Node("pve01")
	creds := lab.Credentials()
	user, name, _ := strings.Cut(creds.TokenID, "!")
	host, port := strings.TrimPrefix(info.URL, "https://"), ""
	host, _, _ = strings.Cut(host, "/")
	host, port, _ = strings.Cut(host, ":")
	lab.Sim().ResetRequests()
	raw, err := exec.Command("/usr/bin/python3", script, host, port, user, name, creds.TokenSecret, "pve01", dir, hex.EncodeToString(sum[:])).Output()
	if err != nil {
		t.Fatalf("proxmoxer: %v\n%s", err, raw)
	}
	var res map[string]struct {
		OK     bool            `json:"ok"`
		Data   json.RawMessage `json:"data"`
		Status int             `json:"status"`
		Msg    string          `json:"msg"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	type task struct {
		UPID, ExitStatus, Type string
		Log                    []string
	}
	taskOf := func(step string) task {
		t.Helper()
		r := res[step]
		var tk task
		if !r.OK {
			t.Errorf("%s: %+v, want an accepted upload", step, r)
			return tk
		}
		_ = json.Unmarshal(r.Data, &tk)
		// Status.pm: fork_worker('imgcopy', undef, …) on the node that took
		// the file.
		if !strings.HasPrefix(tk.UPID, "UPID:pve01:") || !strings.HasSuffix(tk.UPID, ":imgcopy::"+creds.TokenID+":") {
			t.Errorf("%s: task %q, want an imgcopy task of pve01 without id", step, tk.UPID)
		}
		return tk
	}
	iso1 := taskOf("iso")
	if iso1.ExitStatus != "OK" || !strings.Contains(strings.Join(iso1.Log, "\n"),
		"calculating checksum...OK, checksum verified\ntarget node: pve01\ntarget file: /var/lib/vz/template/iso/debian-13.iso\nfile size is: 1048583\ncommand: cp -- /var/tmp/pveupload-") {
		t.Errorf("ISO upload task: %+v", iso1)
	}
	if tk := taskOf("vztmpl"); tk.ExitStatus != "OK" {
		t.Errorf("CT template upload task: %+v", tk)
	}
	// $VZTMPL_EXT_RE_1: plain .tar templates since pve-storage 9.1 ("allow
	// .tar container templates"); PVE 8 refuses them before any task.
	if v >= 9 {
		if tk := taskOf("plain tar"); tk.ExitStatus != "OK" {
			t.Errorf(".tar template upload task: %+v", tk)
		}
	} else if r := res["plain tar"]; r.OK || r.Status != 400 || r.Msg != "Parameter verification failed." {
		t.Errorf("PVE 8 .tar template: %+v, want 400 (filename: wrong file extension)", r)
	}
	// The worker's checksum check fails the task, nothing copied.
	if tk := taskOf("bad checksum"); !strings.HasPrefix(tk.ExitStatus, "checksum mismatch: got '9dd4e461268c8034f5c8564e155c67a6' != expect '") {
		t.Errorf("checksum mismatch: %+v", tk)
	}
	// file_upload_multipart takes content, checksum-algorithm, checksum in
	// that order, each only at the head of what is left: a checksum before
	// its algorithm makes the algorithm's regex span both parts, and
	// assert_form_disposition refuses it (a 500 from pveproxy, no task).
	if r := res["checksum first"]; r.OK || r.Status != 500 || !strings.HasPrefix(r.Msg, "wrong Content-Disposition 'form-data; name=\"checksum\"") {
		t.Errorf("checksum before its algorithm: %+v", r)
	}
	// raise_param_exc({filename => "wrong file extension"}): a 400 whose
	// errors proxmoxer 1.2 drops (it reads them from the null data).
	if r := res["wrong extension"]; r.OK || r.Status != 400 || r.Msg != "Parameter verification failed." {
		t.Errorf("an .iso as vztmpl: %+v, want 400 (filename: wrong file extension)", r)
	}
	var vols []map[string]any
	if r := res["content"]; !r.OK || json.Unmarshal(r.Data, &vols) != nil {
		t.Fatalf("content: %+v", r)
	}
	got := map[string]string{}
	for _, vol := range vols {
		got[fmt.Sprint(vol["volid"])] = fmt.Sprintf("%v %v %.0f", vol["content"], vol["format"], vol["size"])
	}
	want := map[string]string{"local:iso/debian-13.iso": "iso iso 1048583",
		"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst": "vztmpl tzst 33"}
	if v >= 9 {
		want["local:vztmpl/alpine-3.22.tar"] = "vztmpl tar 10240"
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("local's content after the uploads: %v\nwant %v", got, want)
	}
	// The bytes are the file's, and no temporary file is left behind.
	if out := onNode(t, lab, "pve01", "sha256sum /var/lib/vz/template/iso/debian-13.iso | cut -d' ' -f1"); strings.TrimSpace(out) != hex.EncodeToString(sum[:]) {
		t.Errorf("uploaded ISO's sha256 %s, want %x", out, sum)
	}
	if left, _ := filepath.Glob(filepath.Join(lab.Dir(), "pvesim", "uploads", "*")); len(left) != 0 {
		t.Errorf("temporary upload files left: %v", left)
	}
	// Each upload reached the lab once, as a POST whose logged parameters
	// are the form's (never the file's bytes).
	posts := 0
	for _, r := range lab.Sim().Requests() {
		if r.Method == "POST" && r.Path == "/nodes/pve01/storage/local/upload" {
			posts++
			if r.Status == 200 && r.Params["content"] == "" {
				t.Errorf("upload logged without its form fields: %+v", r.Params)
			}
		}
	}
	if posts != 6 {
		t.Errorf("the lab saw %d uploads, the script sent 6", posts)
	}
}

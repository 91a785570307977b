package pvesim

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// multipartBody builds an upload body with Go's multipart writer: the
// fields in order, then the file part under field (PVE wants "filename").
func multipartBody(t *testing.T, fields [][2]string, field, filename string, data []byte) (*bytes.Buffer, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, f := range fields {
		if err := w.WriteField(f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	fw, err := w.CreateFormFile(field, filename)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write(data)
	_ = w.Close()
	return &b, w.FormDataContentType()
}

// upload posts a multipart body to the node's upload endpoint of storage.
func upload(c *apiClient, storage string, body *bytes.Buffer, ctype string) resp {
	path := "/nodes/" + c.Node + "/storage/" + storage + "/upload"
	r := c.Send("POST", path, ctype, body)
	if r.Status == 200 {
		c.CheckReturns("POST", path, r.Data)
	}
	return r
}

// Issue 25 §4: the upload as pveproxy (AnyEvent.pm) and Status.pm take it,
// with a client that is not proxmoxer (Go's multipart writer: a
// Content-Type per file part, quoted names), on PVE 8 and 9.
func TestUploadAsPveproxyTakesIt(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			copied := map[string]string{}
			s := startSimWith(t, simOpts{Version: v, TaskDuration: 20 * time.Millisecond}, func(c *Config) {
				c.StorageUpload = func(node string, st StorageInfo, dest, src string) error {
					b, err := os.ReadFile(src)
					mu.Lock()
					copied[node+":"+dest] = string(b)
					mu.Unlock()
					return err
				}
			})
			c := newClient(t, s, "pve01").LabToken()

			// A file name is normalized (normalize_content_filename), the
			// checksum checked, the file copied by an imgcopy task.
			body, ct := multipartBody(t, [][2]string{{"content", "iso"}, {"checksum-algorithm", "sha1"}, {"checksum", "AAF4C61DDCC5E8A2DABEDE0F3B482CD9AEA9434D"}},
				"filename", "my disk (1).iso", []byte("hello"))
			r := upload(c, "local", body, ct)
			if r.Status != 200 {
				t.Fatalf("upload: %+v", r)
			}
			upid, _ := r.Data.(string)
			if !strings.Contains(upid, ":imgcopy::") {
				t.Errorf("upload task %q", upid)
			}
			if st := waitTask(t, c, upid); st["exitstatus"] != "OK" {
				t.Errorf("upload task ended %v", st)
			}
			mu.Lock()
			if got := copied["pve01:/var/lib/vz/template/iso/my_disk__1_.iso"]; got != "hello" {
				t.Errorf("copied %v", copied)
			}
			mu.Unlock()

			// Checks before any task, in Status.pm's order and words.
			for _, tc := range []struct {
				storage, content, field, name string
				status                        int
				want                          string
			}{
				{"local", "iso", "filename", "notes.txt", 400, "filename: wrong file extension"},
				{"local", "import", "filename", "disk.img", 400, "filename: invalid filename or wrong extension"},
				{"local-lvm", "iso", "filename", "a.iso", 500, "can't upload to storage type 'lvmthin'"},
				{"nosuch", "iso", "filename", "a.iso", 500, "storage 'nosuch' does not exist"},
				// file_upload_multipart: the file part must be "filename".
				{"local", "iso", "file", "a.iso", 500, "wrong field name 'file' for file upload, expected 'filename'"},
			} {
				body, ct := multipartBody(t, [][2]string{{"content", tc.content}}, tc.field, tc.name, []byte("x"))
				r := upload(c, tc.storage, body, ct)
				got := r.Reason
				for k, e := range r.Errs {
					got = fmt.Sprintf("%s: %v", k, e)
				}
				if r.Status != tc.status || got != tc.want {
					t.Errorf("%s %s %s: %d %q, want %d %q", tc.storage, tc.content, tc.name, r.Status, got, tc.status, tc.want)
				}
			}
			if v < 9 {
				// The PVE 8 default local storage has no import content;
				// plain .tar templates came with pve-storage 9.1.
				body, ct := multipartBody(t, [][2]string{{"content", "import"}}, "filename", "disk.qcow2", []byte("x"))
				if r := upload(c, "local", body, ct); r.Status != 500 || r.Reason != "storage 'local' does not support 'import' content" {
					t.Errorf("PVE 8 import upload: %+v", r)
				}
				body, ct = multipartBody(t, [][2]string{{"content", "vztmpl"}}, "filename", "alpine.tar", []byte("x"))
				if r := upload(c, "local", body, ct); r.Status != 400 || fmt.Sprint(r.Errs["filename"]) != "wrong file extension" {
					t.Errorf("PVE 8 .tar template: %+v", r)
				}
			}

			// Not multipart: pveproxy dies in its header callback and never
			// answers (the connection closes).
			if r := upload(c, "local", bytes.NewBufferString("content=iso&filename=a.iso"), "application/x-www-form-urlencoded"); r.Err == nil {
				t.Errorf("a form-encoded upload was answered: %+v", r)
			}
			// Authentication comes before the body: a bad token is a 401.
			body, ct = multipartBody(t, [][2]string{{"content", "iso"}}, "filename", "a.iso", []byte("x"))
			if r := upload(newClient(t, s, "pve01").WithToken("root@pam!lab", "wrong"), "local", body, ct); r.Status != 401 {
				t.Errorf("upload with a bad token: %+v", r)
			}
			// A ticket needs no CSRF token for an upload (HTTPServer.pm
			// skips it for isUpload), where any other write needs one.
			root := newClient(t, s, "pve01").Root()
			body, ct = multipartBody(t, [][2]string{{"content", "vztmpl"}}, "filename", "debian-12-standard_12.7-1_amd64.tar.zst", []byte("tmpl"))
			if r := upload(root, "local", body, ct); r.Status != 200 {
				t.Errorf("upload with a ticket and no CSRF token: %+v", r)
			} else {
				waitTask(t, root, r.Data.(string))
			}
		})
	}
}

// decode_urlencoded splits a form body on ';' as on '&': net/url's
// "invalid semicolon separator in query" is no PVE answer.
func TestFormBodySemicolonsAsPVE(t *testing.T) {
	s := startSim(t, simOpts{})
	c := newClient(t, s, "pve01").LabToken()
	if r := c.Send("POST", "/pools", "application/x-www-form-urlencoded", strings.NewReader("poolid=tenant;comment=a%3Bb")); r.Status != 200 {
		t.Fatalf("POST /pools with ';': %d %s", r.Status, r.Reason)
	}
	r := c.Call("GET", "/pools", url.Values{"poolid": {"tenant"}}).Must(t, "read pool")
	if l := r.List(); len(l) != 1 || l[0]["comment"] != "a;b" {
		t.Errorf("pool %v", r.Data)
	}
}

// pvestatd: every cycle activates each storage enabled on each node that
// is up — not a disabled one, not one whose nodes leave the node out, and
// nothing on a node that is down.
func TestPvestatdActivatesEnabledStorages(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	s := startSimWith(t, simOpts{Nodes: 2}, func(c *Config) {
		c.StatdInterval = 20 * time.Millisecond
		c.StorageActivate = func(node string, st StorageInfo) error {
			mu.Lock()
			seen[node+"/"+st.ID]++
			mu.Unlock()
			return nil
		}
	})
	c := newClient(t, s, "pve01").LabToken()
	c.Call("POST", "/storage", url.Values{"storage": {"off"}, "type": {"dir"}, "path": {"/srv/off"}, "disable": {"1"}}).Must(t, "add off")
	c.Call("POST", "/storage", url.Values{"storage": {"elsewhere"}, "type": {"dir"}, "path": {"/srv/e"}, "nodes": {"pve02"}}).Must(t, "add elsewhere")
	s.SetOnline("pve02", false)
	mu.Lock()
	clear(seen)
	mu.Unlock()
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if seen["pve01/local"] < 3 || seen["pve01/local-lvm"] < 3 {
		t.Errorf("pvestatd cycles on pve01: %v", seen)
	}
	for _, k := range []string{"pve01/off", "pve01/elsewhere", "pve02/local", "pve02/local-lvm"} {
		if seen[k] != 0 {
			t.Errorf("%s activated %d times: %v", k, seen[k], seen)
		}
	}
}

package storagesim

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/volumes"
)

// File uploads (ISO images, CT templates, import images):
// POST /nodes/{node}/storage/{storage}/upload with a multipart/form-data
// body, as pveproxy takes it (pve-http-server PVE/APIServer/AnyEvent.pm
// authenticate_and_handle_request + file_upload_multipart) and
// PVE::API2::Storage::Status's upload handles it (pve-storage
// src/PVE/API2/Storage/Status.pm, the same at 8.3.8 and 9.1).
//
// pveproxy's part before the body (which request is an upload, its
// authentication, no CSRF check, never a form) is core's (core/upload.go);
// the body's reception, registered with HandleUpload, and the API call are
// here. The body is parsed with AnyEvent.pm's regexes, in its order: `content`, `checksum-algorithm`,
// `checksum` (each optional, each only if it comes first among what is
// left), then the file part, whose field must be named `filename` and whose
// filename="…" is the `filename` parameter; its data goes to a temporary
// file (PVE: /var/tmp/pveupload-<md5>, here a file in the simulator's
// directory under that name), which the API call gets as `tmpfilename`.

// parseContentType is AnyEvent.pm parse_content_type: the type, and the
// boundary as written (quotes are not removed).
func parseContentType(ctype string) (ct, boundary string) {
	parts := regexp.MustCompile(`\s*[;,]\s*`).Split(ctype, -1)
	ct = parts[0]
	re := regexp.MustCompile(`^\s*boundary\s*=\s*(\S+?)\s*$`)
	for _, p := range parts[1:] {
		if m := re.FindStringSubmatch(p); m != nil {
			return ct, m[1]
		}
	}
	return ct, ""
}

// upload is a received file waiting for its API call.
type upload struct {
	tmpName  string // /var/tmp/pveupload-<md5>, as the API sees it
	hostPath string // where the lab keeps its bytes
}

// receiveUpload reads a multipart upload as file_upload_multipart does and
// returns the parameters for the API call (query parameters, the form
// fields, tmpfilename). Its error is pveproxy's 500 (core.ErrNoAnswer: none).
func (s *backend) receiveUpload(r *http.Request) (map[string]any, func(), error) {
	ctype := r.Header.Get("Content-Type")
	ct, boundary := parseContentType(ctype)
	if boundary == "" || ct != "multipart/form-data" {
		return nil, nil, core.ErrNoAnswer // "upload 'Content-Type '…' not implemented"
	}
	params := decodeURLEncoded(r.URL.RawQuery)
	if _, ok := params["tmpfilename"]; ok {
		return nil, nil, core.ErrNoAnswer // "'tmpfilename' query parameter is not allowed for file uploads"
	}
	s.Mu.Lock()
	s.uploadSeq++
	seq := s.uploadSeq
	s.Mu.Unlock()
	sum := md5.Sum([]byte(fmt.Sprintf("%d%d%d", seq, time.Now().Unix(), os.Getpid())))
	name := "pveupload-" + hex.EncodeToString(sum[:])
	dir := filepath.Join(s.Cfg.Dir, "pvesim", "uploads")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("unable to create temporary upload file '/var/tmp/%s'", name)
	}
	up := &upload{tmpName: "/var/tmp/" + name, hostPath: filepath.Join(dir, name)}
	out, err := os.OpenFile(up.hostPath, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("unable to create temporary upload file '%s'", up.tmpName)
	}
	fields, err := parseMultipart(r.Body, boundary, out)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write to temporary file failed - %v", cerr)
	}
	if err != nil {
		_ = os.Remove(up.hostPath)
		return nil, nil, err
	}
	for k, v := range fields {
		params[k] = v
	}
	params["tmpfilename"] = up.tmpName
	s.Mu.Lock()
	s.uploads[up.tmpName] = up
	s.Mu.Unlock()
	return params, func() {
		// cleanup_reqstate: a file no task took is removed.
		s.Mu.Lock()
		if s.uploads[up.tmpName] == up {
			delete(s.uploads, up.tmpName)
			_ = os.Remove(up.hostPath)
		}
		s.Mu.Unlock()
	}, nil
}

// parseMultipart is file_upload_multipart's phases over the body as it
// arrives: 0 drops what precedes the first delimiter, 1 takes the form
// fields it knows, 2 writes the file's data, 100 is the end. A body that
// ends before phase 100 is "upload failed".
func parseMultipart(body io.Reader, boundary string, out io.Writer) (map[string]string, error) {
	q := regexp.QuoteMeta(boundary)
	nl := `\r?\n`
	delim := `--` + q + nl
	phase0 := regexp.MustCompile(`(?s)^.*?(` + delim + `)`)
	untilData := regexp.MustCompile(`(?s)^.*?(?:` + nl + `){2}`)
	value := regexp.MustCompile(`(?s)^(.*?)(` + delim + `)`)
	filePart := regexp.MustCompile(`(?s)^` + delim + `Content-Disposition: (.*?); name="(.*?)"; filename="([^"]+)"`)
	closeDelim := []byte("--" + boundary + "--")
	boundlen := len(boundary) + 8 // \015?\012--$boundary--\015?\012
	fieldRes := map[string]*regexp.Regexp{}
	for _, f := range []string{"content", "checksum-algorithm", "checksum"} {
		fieldRes[f] = regexp.MustCompile(`(?s)^` + delim + `.*?Content-Disposition: (.*?); name="` + regexp.QuoteMeta(f) + `"(.*?` + delim + `)`)
	}
	assertFormData := func(d string) error {
		if d != "form-data" {
			return fmt.Errorf("wrong Content-Disposition '%s' in multipart, expected 'form-data'", d)
		}
		return nil
	}
	removeUntilData := func(buf []byte) []byte {
		if m := untilData.FindIndex(buf); m != nil {
			return buf[m[1]:]
		}
		return buf
	}
	params := map[string]string{}
	phase := 0
	var buf []byte
	chunk := make([]byte, 64<<10)
	for {
		n, rerr := body.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if phase == 0 {
			if m := phase0.FindSubmatchIndex(buf); m != nil {
				buf = buf[m[2]:]
				phase = 1
			}
		}
		if phase == 1 {
			for _, f := range []string{"content", "checksum-algorithm", "checksum"} {
				m := fieldRes[f].FindSubmatchIndex(buf)
				if m == nil {
					continue
				}
				if err := assertFormData(string(buf[m[2]:m[3]])); err != nil {
					return nil, err
				}
				buf = append(append([]byte{}, buf[m[4]:m[5]]...), buf[m[1]:]...)
				buf = removeUntilData(buf)
				if v := value.FindSubmatchIndex(buf); v != nil {
					params[f] = strings.TrimSpace(string(buf[v[2]:v[3]]))
					buf = buf[v[4]:]
				}
			}
			if m := filePart.FindSubmatchIndex(buf); m != nil {
				if err := assertFormData(string(buf[m[2]:m[3]])); err != nil {
					return nil, err
				}
				if field := string(buf[m[4]:m[5]]); field != "filename" {
					return nil, fmt.Errorf("wrong field name '%s' for file upload, expected 'filename'", field)
				}
				params["filename"] = strings.TrimSpace(string(buf[m[6]:m[7]]))
				phase = 2
				buf = removeUntilData(buf[m[1]:])
			}
		}
		if phase == 2 {
			var data []byte
			if i := bytes.Index(buf, closeDelim); i >= 0 {
				data = buf[:i]
				if d, ok := bytes.CutSuffix(data, []byte("\r\n")); ok {
					data = d
				} else if d, ok := bytes.CutSuffix(data, []byte("\n")); ok {
					data = d
				}
				buf = nil
				phase = 100
			} else if w := len(buf) - boundlen; w > 0 {
				data = buf[:w]
				buf = append([]byte{}, buf[w:]...)
			}
			if len(data) > 0 {
				if _, err := out.Write(data); err != nil {
					return nil, fmt.Errorf("write to temporary file failed - %v", err)
				}
			}
		}
		if phase == 100 {
			return params, nil
		}
		if rerr != nil {
			if rerr == io.EOF {
				return nil, errors.New("upload failed")
			}
			return nil, core.ErrNoAnswer // the client went away
		}
	}
}

// decodeURLEncoded is AnyEvent.pm decode_urlencoded: pairs split on '&'
// and ';', '+' and %XX decoded, a repeated key becomes a list.
// Reconstruction limits: Perl's split(/=/) keeps only the text up to a
// second '=' and makes "k=" a key without value; here the value is all
// after the first '=' and "k=" is an empty string, as net/url has it.
func decodeURLEncoded(data string) map[string]any {
	out := map[string]any{}
	if data == "" {
		return out
	}
	for _, kv := range regexp.MustCompile(`[&;]`).Split(data, -1) {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		k, v = unescapeForm(k), unescapeForm(v)
		switch old := out[k].(type) {
		case nil:
			out[k] = v
		case string:
			out[k] = []any{old, v}
		case []any:
			out[k] = append(old, v)
		}
	}
	return out
}

var pctRe = regexp.MustCompile(`%([0-9a-fA-F][0-9a-fA-F])`)

func unescapeForm(s string) string {
	s = strings.ReplaceAll(s, "+", " ")
	return pctRe.ReplaceAllStringFunc(s, func(m string) string {
		b, _ := hex.DecodeString(m[1:])
		return string(b)
	})
}

// postStorageUpload is Status.pm's upload: the checks before the task in
// its order, then an `imgcopy` task that verifies the checksum and copies
// the file into the storage's content directory on the node (cp there,
// scp to another node named by {node}: the upload has no proxyto, the
// node that received the file sends it on).
func (s *backend) postStorageUpload(rc *core.Req) (any, error) {
	db := rc.DB()
	node, id := rc.Str("node"), rc.Str("storage")
	st := db.Storage[id]
	switch {
	case st == nil:
		return nil, fmt.Errorf("storage '%s' does not exist", id)
	case st.Disabled():
		return nil, fmt.Errorf("storage '%s' is disabled", id)
	case !st.OnNode(node):
		return nil, fmt.Errorf("storage '%s' is not available on node '%s'", id, node)
	}
	base := st.Opt("path")
	if base == "" && (st.Type == "nfs" || st.Type == "cifs") {
		base = "/mnt/pve/" + st.ID // check_config's default, always stored on PVE
	}
	if base == "" {
		return nil, fmt.Errorf("can't upload to storage type '%s'", st.Type)
	}
	content := rc.Str("content")
	tmp := rc.Str("tmpfilename")
	if tmp == "" {
		return nil, errors.New("missing temporary file name")
	}
	up := s.uploads[tmp]
	var size int64 = -1
	if up != nil {
		if fi, err := os.Stat(up.hostPath); err == nil {
			size = fi.Size()
		}
	}
	if size < 0 {
		return nil, fmt.Errorf("temporary file '%s' does not exist", tmp)
	}
	filename := storage.NormalizeContentFilename(rc.Str("filename"))
	sub, err := storage.UploadDir(s.Cfg.Version, content, filename)
	if err != nil {
		return nil, volumes.StorageAPIError(err)
	}
	if !st.HasContent(content) {
		return nil, fmt.Errorf("storage '%s' does not support '%s' content", id, content)
	}
	dest := base + "/" + sub + "/" + filename
	local := node == rc.Node
	cmd := "cp -- " + tmp + " " + dest
	if !local {
		// Reconstruction of run_command's words for the ssh that runs
		// `pvesm status --storage` on the target (activation there).
		tn := s.State.Nodes[node]
		if tn == nil || tn.DB != s.State.Nodes[rc.Node].DB {
			//lint:ignore ST1005 PVE's own message (PVE::Cluster::remote_node_ip)
			return nil, fmt.Errorf("Unable to get IP for node '%s' - node offline?", node)
		}
		if !s.NodeUpLocked(node) {
			return nil, fmt.Errorf("can't activate storage '%s' on node '%s': command '/usr/bin/ssh -e none -o BatchMode=yes -o HostKeyAlias=%s %s -- /usr/sbin/pvesm status --storage %s' failed: exit code 255", id, node, node, tn.Addr, id)
		}
		if err := s.ActivateOn(node, st); err != nil {
			return nil, fmt.Errorf("can't activate storage '%s' on node '%s': %v", id, node, err)
		}
		cmd = fmt.Sprintf("/usr/bin/scp -o BatchMode=yes -o HostKeyAlias=%s -p -- %s [%s]:%s", node, tmp, tn.Addr, dest)
	} else if err := s.ActivateOn(node, st); err != nil {
		return nil, err
	}
	delete(s.uploads, tmp) // the task owns the file now
	info := core.StorageInfoOf(st)
	alg, want := rc.Str("checksum-algorithm"), rc.Str("checksum")
	return s.StartTaskLocked(rc, rc.Node, "imgcopy", "", func(t *core.TaskRun) string {
		defer os.Remove(up.hostPath)
		t.Logf("starting file import from: %s", tmp)
		if alg != "" {
			h := storage.NewHash(alg)
			f, err := os.Open(up.hostPath)
			if err == nil {
				_, err = io.Copy(h, f)
				f.Close()
			}
			if err != nil {
				t.Logf("calculating checksum...")
				return fmt.Sprintf("unable to read '%s' - %v", tmp, err)
			}
			got := hex.EncodeToString(h.Sum(nil))
			if !strings.EqualFold(got, want) {
				t.Logf("calculating checksum...")
				return fmt.Sprintf("checksum mismatch: got '%s' != expect '%s'", got, want)
			}
			t.Logf("calculating checksum...OK, checksum verified")
		}
		t.Logf("target node: %s", node)
		t.Logf("target file: %s", dest)
		t.Logf("file size is: %d", size)
		t.Logf("command: %s", cmd)
		var err error
		if s.Cfg.StorageUpload == nil {
			err = errors.New("the lab has no node filesystem to copy into (Config.StorageUpload)")
		} else {
			err = s.Cfg.StorageUpload(node, info, dest, up.hostPath)
		}
		if err != nil {
			return fmt.Sprintf("import failed: %v", err)
		}
		t.Logf("finished file import successfully")
		return ""
	}), nil
}

// uploadRoutes is pveproxy's upload endpoint (Status.pm upload, taken
// apart from the other storage endpoints because the body is a multipart
// file the HTTP layer receives first).
func (s *backend) uploadRoutes() map[string]core.Handler {
	return map[string]core.Handler{"POST " + core.UploadMethodPath: s.postStorageUpload}
}

package core

import (
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
)

// pveproxy's side of file uploads (pve-manager PVE/HTTPServer.pm
// auth_handler and pve-http-server PVE/APIServer/AnyEvent.pm): which
// request is an upload, its authentication before the body is read, and
// the hook that receives the body. The multipart body and the API call
// (pve-storage PVE/API2/Storage/Status.pm upload) are pvesim/storagesim's
// (upload.go there), registered with HandleUpload.
//
// pveproxy recognises an upload by its path alone (pve-manager
// PVE/HTTPServer.pm auth_handler: POST and
// m|^/nodes/([^/]+)/storage/([^/]+)/upload$|): it checks
// Datastore.AllocateTemplate on the storage at authentication, skips the
// CSRF check, and never parses the body as a form — so a multipart body
// is not refused as a malformed form (the lab once answered `400 malformed
// form request body: invalid semicolon separator in query`, Go's net/url
// meeting `Content-Disposition: form-data; name=…`).

// uploadPathRe is HTTPServer.pm's isUpload test.
var uploadPathRe = regexp.MustCompile(`^/nodes/([^/]+)/storage/([^/]+)/upload$`)

// UploadMethodPath is the upload endpoint as the schema names it.
const UploadMethodPath = "/nodes/{node}/storage/{storage}/upload"

// isUpload tells whether a request is an upload for pveproxy.
func isUpload(method, apiPath string) bool {
	return method == "POST" && uploadPathRe.MatchString(apiPath)
}

// ErrNoAnswer: pveproxy dies in its header callback (unshift_read_header
// only warns), so the client gets no answer and the connection closes
// when its idle timeout ends it (reconstruction: the lab closes it at once).
var ErrNoAnswer = errors.New("no answer")

// UploadReceiver receives an upload's body as pveproxy does
// (file_upload_multipart) and returns the parameters for the API call
// (query parameters, the form fields, tmpfilename) and done, which the
// HTTP layer runs once the request is answered (cleanup_reqstate). Its
// error is pveproxy's 500 (ErrNoAnswer: none). It runs outside Mu.
type UploadReceiver func(r *http.Request) (params map[string]any, done func(), err error)

// HandleUpload sets the upload's receiver (pvesim/storagesim, which also
// handles the API call). Without one an upload is read as any request.
func (s *Sim) HandleUpload(recv UploadReceiver) { s.receiveUpload = recv }

// uploadAuth is auth_handler for an upload, before the body is read: the
// ticket or token, then Datastore.AllocateTemplate on the storage named in
// the path (the CSRF token is not checked for uploads).
func (s *Sim) uploadAuth(node string, r *http.Request, apiPath string) *APIError {
	m := uploadPathRe.FindStringSubmatch(apiPath)
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	s.readFilesLocked(db)
	who, msg := s.authenticate(db, r)
	if who == nil {
		return ErrStatus(401, "%s", msg)
	}
	perm := json.RawMessage(`{"check":["perm","/storage/{storage}",["Datastore.AllocateTemplate"]]}`)
	if detail := checkPermissions(db, who, perm, map[string]any{"storage": m[2]}); detail != "" {
		return ErrPerm(detail)
	}
	return nil
}

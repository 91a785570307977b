package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/httpwire"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ticket"
)

// APIError is an error answer as PVE renders it: the status line's reason
// phrase is the message's first line, the body {"data":null,"message":…}
// plus "errors" per parameter for 400s.
type APIError struct {
	Status  int
	Message string
	Errors  map[string]string
	// wait delays the answer outside the state lock (e.g. a cfs lock that
	// times out after LockTimeout).
	wait time.Duration
}

func (e *APIError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// writeError answers e on the wire (pvesim/httpwire).
func writeError(w http.ResponseWriter, e *APIError) {
	httpwire.WriteError(w, e.Status, e.Message, e.Errors)
}

func ErrStatus(status int, format string, args ...any) *APIError {
	return &APIError{Status: status, Message: fmt.Sprintf(format, args...)}
}

// ErrParams is PVE's raise_param_exc: 400 "Parameter verification failed."
func ErrParams(errs map[string]string) *APIError {
	return &APIError{Status: 400, Message: "Parameter verification failed.", Errors: errs}
}

func ErrPerm(detail string) *APIError {
	if detail == access.PermNoDetail {
		return ErrStatus(403, "Permission check failed") // raise_perm_exc()
	}
	return ErrStatus(403, "Permission check failed (%s)", detail)
}

// Req is what a handler sees.
type Req struct {
	Sim    *Sim
	Node   string // node that handles the request (after proxyto)
	Origin string // node whose API was called
	Method *pveschema.Method
	Params map[string]any
	Who    *Principal
	Fault  *Fault // a task-level fault matched by this request
}

func (rc *Req) Str(k string) string {
	v, ok := rc.Params[k]
	if !ok {
		return ""
	}
	return pvecommon.ParamString(v)
}

func (rc *Req) Has(k string) bool { _, ok := rc.Params[k]; return ok }

func (rc *Req) Bool(k string) bool {
	v, ok := rc.Params[k]
	if !ok {
		return false
	}
	if b, ok := v.(bool); ok {
		return b
	}
	return pvecommon.ParamString(v) == "1"
}

func (rc *Req) Int(k string, def int) int {
	if !rc.Has(k) {
		return def
	}
	n, err := strconv.Atoi(rc.Str(k))
	if err != nil {
		return def
	}
	return n
}

// DB is the pmxcfs of the handling node.
func (rc *Req) DB() *ConfigDB { return rc.Sim.DBOf(rc.Node) }

// nodeHandler serves one node's /api2/json.
func (s *Sim) nodeHandler(node string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(node, s.routes, w, r)
	})
}

func (s *Sim) serve(node string, table map[string]Handler, w http.ResponseWriter, r *http.Request) {
	if !s.enter() {
		httpwire.ResetConn(w)
		return
	}
	defer s.reqWG.Done()
	defer s.inFlight.Add(-1)
	start := time.Now()
	apiPath, ok := strings.CutPrefix(r.URL.Path, "/api2/json")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if apiPath == "" {
		apiPath = "/"
	}
	entry := Request{Time: start, Node: node, Method: r.Method, Path: apiPath}
	var params map[string]any
	var perr error
	if isUpload(r.Method, apiPath) && r.ContentLength > 0 && s.receiveUpload != nil {
		// pveproxy authenticates an upload before it reads the body, then
		// takes the body as a multipart file upload (HandleUpload); without a
		// Content-Length it handles the request as any other.
		if aerr := s.uploadAuth(node, r, apiPath); aerr != nil {
			if aerr.Status == 401 {
				s.sleepCtx(r, s.Cfg.Dur(s.Cfg.AuthDelay, DefaultAuthDelay))
			}
			entry.Status, entry.Duration = aerr.Status, time.Since(start)
			s.log.Add(entry)
			writeError(w, aerr)
			return
		}
		var done func()
		params, done, perr = s.receiveUpload(r)
		if perr != nil {
			entry.Duration = time.Since(start)
			if errors.Is(perr, ErrNoAnswer) {
				s.log.Add(entry)
				httpwire.ResetConn(w)
				return
			}
			entry.Status = 500
			s.log.Add(entry)
			writeError(w, ErrStatus(500, "%v", perr))
			return
		}
		defer done()
	} else {
		params, perr = httpwire.ReadParams(r)
	}
	finish := func(status int) {
		entry.Status = status
		entry.Duration = time.Since(start)
		s.log.Record(entry, r, params, s.secrets())
	}

	fault := s.faults.Take(node, r.Method, apiPath)
	var taskFault *Fault
	loseAnswer := false
	if fault != nil {
		entry.Fault = string(fault.Kind)
		if fault.Before != nil {
			fault.Before()
		}
		switch fault.Kind {
		case FaultLatency:
			if !s.sleepCtx(r, fault.Delay) {
				// The client left (or the lab stops): no answer at all, never
				// the empty 200 net/http sends for a handler that wrote none.
				finish(0)
				httpwire.ResetConn(w)
				return
			}
		case FaultError:
			st := fault.Status
			if st == 0 {
				st = 500
			}
			msg := fault.Message
			if msg == "" {
				msg = "injected failure"
			}
			finish(st)
			writeError(w, &APIError{Status: st, Message: msg})
			return
		case FaultReset:
			finish(0)
			httpwire.ResetConn(w)
			return
		case FaultHang:
			select {
			case <-r.Context().Done():
			case <-s.ctx.Done():
			}
			finish(0)
			httpwire.ResetConn(w)
			return
		case FaultLock:
			d := fault.Delay
			if d == 0 {
				d = s.Cfg.Dur(s.Cfg.LockTimeout, DefaultLockTimeout)
			}
			s.sleepCtx(r, d)
			file := fault.LockFile
			if file == "" {
				file = "/var/lock/pve-manager/pve-simulated.lck"
			}
			finish(500)
			writeError(w, ErrStatus(500, "can't lock file '%s' - got timeout", file))
			return
		case FaultTaskFail, FaultSlowConfig, FaultSlowLocked, FaultMigrateAbort, FaultMigrateProblems:
			taskFault = fault
		case FaultLostAnswer:
			loseAnswer = true
			// A slow hop first (Delay): the request reaches PVE late, so a
			// concurrent call overtakes it (K18 races made exact).
			if fault.Delay > 0 && !s.sleepCtx(r, fault.Delay) {
				finish(0)
				httpwire.ResetConn(w)
				return
			}
		}
	}

	if perr != nil {
		finish(400)
		writeError(w, ErrStatus(400, "%v", perr))
		return
	}
	m, pathParams, err := s.schema.Lookup(r.Method, apiPath)
	if err != nil {
		finish(501)
		writeError(w, ErrStatus(501, "%s", err.Error()))
		return
	}
	for k, v := range pathParams {
		params[k] = v
	}

	status, data, who, aerr := s.dispatch(node, table, m, params, r, taskFault)
	if who != nil {
		entry.Auth = who.Full()
	}
	if aerr != nil {
		if aerr.wait > 0 {
			s.sleepCtx(r, aerr.wait)
		}
		if aerr.Status == 401 {
			s.sleepCtx(r, s.Cfg.Dur(s.Cfg.AuthDelay, DefaultAuthDelay))
		}
		finish(aerr.Status)
		if loseAnswer {
			// The handler refused (a synchronous die, e.g. clone_vm's
			// "config file already exists"), and that answer is lost too.
			httpwire.ResetConn(w)
			return
		}
		writeError(w, aerr)
		return
	}
	finish(status)
	if loseAnswer {
		httpwire.ResetConn(w)
		return
	}
	httpwire.WriteData(w, data)
}

// dispatch authenticates, validates and runs the handler under the state lock.
func (s *Sim) dispatch(node string, table map[string]Handler, m *pveschema.Method, params map[string]any, r *http.Request, taskFault *Fault) (int, any, *Principal, *APIError) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	s.readFilesLocked(db) // a file edited on a node is what the API shows
	var perms struct {
		User string `json:"user"`
	}
	_ = json.Unmarshal(m.Permissions, &perms)
	world := perms.User == "world"
	var who *Principal
	if !world {
		var msg string
		who, msg = s.authenticate(db, r)
		if who == nil {
			return 0, nil, who, ErrStatus(401, "%s", msg)
		}
		if ticket.CSRFChecked(who.Ticket, r.Method, m.HTTPMethod == "POST" && m.Path == UploadMethodPath) {
			if !s.verifyCSRFLocked(db, who.User, r.Header.Get("CSRFPreventionToken"), time.Now()) {
				return 0, nil, who, ErrStatus(401, "Permission denied - invalid csrf token")
			}
		}
		if who.TokenID != "" && !bool(m.AllowToken) {
			return 0, nil, who, ErrStatus(403, "Permission check failed (API tokens are not allowed for this method)")
		}
	}
	if errs := m.Validate(params); errs != nil {
		return 0, nil, who, ErrParams(errs)
	}
	target := node
	if m.ProxyTo != "" {
		if t := pvecommon.ParamString(params[m.ProxyTo]); t != "" && t != node {
			if aerr := s.proxyCheckLocked(node, t); aerr != nil {
				return 0, nil, who, aerr
			}
			target = t
		}
	}
	if who != nil {
		if detail := checkPermissions(db, who, m.Permissions, params); detail != "" {
			return 0, nil, who, ErrPerm(detail)
		}
	}
	h := table[m.HTTPMethod+" "+m.Path]
	if h == nil {
		// Real PVE has this method: say plainly that only the lab lacks it, so
		// no module mistakes it for a version difference (e.g. HA rules in 8).
		return 0, nil, who, ErrStatus(501, "Method '%s %s' not implemented (exists in PVE %d, not simulated by the lab)", m.HTTPMethod, m.Path, s.Cfg.Version)
	}
	rc := &Req{Sim: s, Node: target, Origin: node, Method: m, Params: params, Who: who, Fault: taskFault}
	data, err := s.runHandlerLocked(h, rc)
	if err != nil {
		var aerr *APIError
		if errors.As(err, &aerr) {
			return 0, nil, who, aerr
		}
		return 0, nil, who, ErrStatus(500, "%v", err)
	}
	return 200, data, who, nil
}

// proxyCheckLocked mirrors pveproxy forwarding to {node}: unknown nodes fail
// name resolution, offline members answer 595.
func (s *Sim) proxyCheckLocked(from, to string) *APIError {
	n := s.State.Nodes[to]
	if n == nil || n.DB != s.State.Nodes[from].DB {
		return ErrStatus(500, "hostname lookup '%s' failed - failed to get address info for: %s: Name or service not known", to, to)
	}
	if !n.Online || n.restarting {
		return ErrStatus(595, "Connection refused")
	}
	return nil
}

// sleepCtx waits d unless the client or the simulator goes away.
func (s *Sim) sleepCtx(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.ctx.Done():
		return false
	}
}

// secrets are the values the request log must never show.
func (s *Sim) secrets() []string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	out := []string{s.State.RootPassword, s.State.TokenSecret}
	for _, db := range s.State.DBs {
		for _, t := range db.Access.Tokens {
			out = append(out, t.Secret)
		}
		for _, u := range db.Access.Users {
			if u.Password != "" {
				out = append(out, u.Password)
			}
		}
	}
	return out
}

func (s *Sim) DBOf(node string) *ConfigDB {
	n := s.State.Nodes[node]
	if n == nil {
		return nil
	}
	return s.State.DBs[n.DB]
}

// VMID is the request's {vmid} path parameter.
func (rc *Req) VMID() int { n, _ := strconv.Atoi(rc.Str("vmid")); return n }

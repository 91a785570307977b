package pvesim

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestVersionPerMajor(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		s := startSim(t, simOpts{Version: v})
		c := newClient(t, s, "pve01").LabToken()
		r := c.Call("GET", "/version", nil).Must(t, "GET /version")
		rel, _ := r.Obj()["release"].(string)
		if !strings.HasPrefix(rel, map[int]string{8: "8.", 9: "9."}[v]) {
			t.Errorf("PVE %d: release %q", v, rel)
		}
	}
}

func TestSchemaValidationOverHTTP(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	c := newClient(t, s, "pve01").Root()
	tests := []struct {
		name     string
		method   string
		path     string
		params   url.Values
		json     map[string]any
		status   int
		errKeys  []string // keys that must be named in `errors`
		okKeys   []string // keys that must not be named
		inReason string
	}{
		{name: "unknown parameter", method: "POST", path: "/cluster/config",
			params: url.Values{"clustername": {"lab"}, "bogus": {"1"}}, status: 400, errKeys: []string{"bogus"}},
		{name: "missing required", method: "POST", path: "/cluster/config",
			params: url.Values{"link0": {"10.0.0.1"}}, status: 400, errKeys: []string{"clustername"}},
		{name: "link7 accepted, link8 rejected", method: "POST", path: "/cluster/config",
			params: url.Values{"clustername": {"lab"}, "link7": {"10.0.0.7"}, "link8": {"10.0.0.8"}}, status: 400,
			errKeys: []string{"link8"}, okKeys: []string{"link7", "clustername"}},
		{name: "wrong integer type", method: "POST", path: "/cluster/config",
			params: url.Values{"clustername": {"lab"}, "nodeid": {"one"}}, status: 400, errKeys: []string{"nodeid"}},
		{name: "enum", method: "GET", path: "/cluster/resources", params: url.Values{"type": {"vms"}}, status: 400, errKeys: []string{"type"}},
		{name: "boolean true as form string", method: "GET", path: "/nodes/pve01/storage",
			params: url.Values{"enabled": {"true"}}, status: 400, errKeys: []string{"enabled"}},
		{name: "boolean JSON true", method: "POST", path: "/pools",
			json: map[string]any{"poolid": "p1", "comment": true}, status: 400, errKeys: []string{"comment"}},
		{name: "JSON body integer as number", method: "POST", path: "/cluster/config",
			json: map[string]any{"clustername": "lab", "nodeid": 1, "bogus": 1}, status: 400, errKeys: []string{"bogus"}, okKeys: []string{"nodeid"}},
		{name: "path parameter format", method: "GET", path: "/nodes/bad_name/status", status: 400, errKeys: []string{"node"}},
		{name: "unknown path", method: "GET", path: "/no/such/thing", status: 501, inReason: "Method 'GET /no/such/thing' not implemented"},
		{name: "unknown method", method: "PUT", path: "/version", status: 501, inReason: "not implemented"},
		{name: "real but not simulated", method: "GET", path: "/cluster/sdn/vnets", status: 501, inReason: "not simulated by the lab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r resp
			if tt.json != nil {
				r = c.CallJSON(tt.method, tt.path, tt.json)
			} else {
				r = c.Call(tt.method, tt.path, tt.params)
			}
			if r.Status != tt.status {
				t.Fatalf("status %d %q, want %d (body %v)", r.Status, r.Reason, tt.status, r.Body)
			}
			if tt.status == 400 && r.Reason != "Parameter verification failed." {
				t.Errorf("reason %q", r.Reason)
			}
			for _, k := range tt.errKeys {
				if _, ok := r.Errs[k]; !ok {
					t.Errorf("errors %v do not name %q", r.Errs, k)
				}
			}
			for _, k := range tt.okKeys {
				if _, ok := r.Errs[k]; ok {
					t.Errorf("errors %v name valid %q", r.Errs, k)
				}
			}
			if tt.inReason != "" && !strings.Contains(r.Reason, tt.inReason) {
				t.Errorf("reason %q lacks %q", r.Reason, tt.inReason)
			}
			if msg, _ := r.Body["message"].(string); !strings.HasSuffix(msg, "\n") || r.Body["data"] != nil {
				t.Errorf("error body %v: want data null and a message ending in newline", r.Body)
			}
		})
	}
	// The exact pve-common wording for the commonest failures.
	r := c.Call("POST", "/cluster/config", url.Values{"bogus": {"1"}})
	if r.Errs["bogus"] != "property is not defined in schema and the schema does not allow additional properties" ||
		r.Errs["clustername"] != "property is missing and it is not optional" {
		t.Errorf("messages %v", r.Errs)
	}
	r = c.Call("GET", "/cluster/resources", url.Values{"type": {"vms"}})
	if r.Errs["type"] != "value 'vms' does not have a value in the enumeration 'vm, storage, node, sdn'" {
		t.Errorf("enum message %v", r.Errs)
	}
	// Nothing above may have changed state.
	if _, clustered := s.Cluster("pve01"); clustered {
		t.Error("an invalid request created a cluster")
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{AuthDelay: 150 * time.Millisecond})
	anon := newClient(t, s, "pve01")
	start := time.Now()
	r := anon.Call("GET", "/version", nil)
	if r.Status != 401 {
		t.Fatalf("no auth: %d", r.Status)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("401 came after %v, want the configured auth delay", el)
	}
	bad := newClient(t, s, "pve01").WithToken("root@pam!lab", "wrong")
	if r := bad.Call("GET", "/version", nil); r.Status != 401 {
		t.Errorf("bad token: %d", r.Status)
	}
	// K7: the token id must be the full user@realm!name.
	short := newClient(t, s, "pve01")
	_, secret := s.LabToken()
	short.WithToken("lab", secret)
	if r := short.Call("GET", "/version", nil); r.Status != 401 {
		t.Errorf("short token id: %d, want 401", r.Status)
	}
	if r := newClient(t, s, "pve01").Call("POST", "/access/ticket", url.Values{"username": {"root@pam"}, "password": {"nope"}}); r.Status != 401 {
		t.Errorf("wrong password: %d", r.Status)
	}
	// root password with username + realm split also works.
	split := newClient(t, s, "pve01")
	r = split.Call("POST", "/access/ticket", url.Values{"username": {"root"}, "realm": {"pam"}, "password": {s.RootPassword()}})
	if r.Status != 200 || r.Obj()["username"] != "root@pam" {
		t.Errorf("username+realm login: %d %v", r.Status, r.Body)
	}

	tk := newClient(t, s, "pve01").Root()
	tk.Call("GET", "/nodes", nil).Must(t, "GET /nodes with ticket")
	// A ticket write needs the CSRF token.
	noCSRF := *tk
	noCSRF.CSRF = "00000000:forged"
	if r := noCSRF.Call("POST", "/pools", url.Values{"poolid": {"p1"}}); r.Status != 401 || !strings.Contains(r.Reason, "csrf") {
		t.Errorf("write without valid CSRF: %d %q", r.Status, r.Reason)
	}
	tk.Call("POST", "/pools", url.Values{"poolid": {"p1"}}).Must(t, "POST /pools with ticket+CSRF")
	// A token needs no CSRF token.
	newClient(t, s, "pve01").LabToken().Call("POST", "/pools", url.Values{"poolid": {"p2"}}).Must(t, "POST /pools with token")
	// Renewing a ticket with the ticket as password.
	renew := newClient(t, s, "pve01")
	renew.Call("POST", "/access/ticket", url.Values{"username": {"root@pam"}, "password": {tk.Ticket}}).Must(t, "ticket renewal")
}

// Cluster create and join are root@pam-only methods (no permissions in the
// schema): a token, even root@pam's, gets 403.
func TestClusterCreateRefusesTokens(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	c := newClient(t, s, "pve01").LabToken()
	r := c.Call("POST", "/cluster/config", url.Values{"clustername": {"lab"}})
	if r.Status != 403 || r.Reason != "Permission check failed (user != root@pam)" {
		t.Fatalf("token cluster create: %d %q", r.Status, r.Reason)
	}
	r = c.Call("POST", "/cluster/config/join", url.Values{"hostname": {"pve02"}, "password": {"x"},
		"fingerprint": {strings.TrimSuffix(strings.Repeat("AA:", 32), ":")}})
	if r.Status != 403 {
		t.Fatalf("token join: %d %q", r.Status, r.Reason)
	}
	if _, clustered := s.Cluster("pve01"); clustered {
		t.Fatal("refused create left a cluster behind")
	}
	// No POST reached a handler: the request log shows only the 403s.
	for _, e := range s.Requests() {
		if e.Mutating() && e.Status != 403 {
			t.Errorf("unexpected mutating request %+v", e)
		}
	}
}

// K19: a privilege-separated token without audit rights gets empty lists,
// not errors; /cluster/status (a hard permission check) is a 403.
func TestTokenPrivsepEmptyListsK19(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	admin := newClient(t, s, "pve01").LabToken()
	admin.Call("POST", "/pools", url.Values{"poolid": {"tenant"}}).Must(t, "create pool")
	id, secret, err := s.AddToken("pve01", TokenSpec{User: "ops@pve", Name: "ci", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	tok := newClient(t, s, "pve01").WithToken(id, secret)

	if n := len(tok.Call("GET", "/storage", nil).Must(t, "storage list").List()); n != 0 {
		t.Errorf("privsep token without ACL sees %d storages, want 0", n)
	}
	if n := len(tok.Call("GET", "/pools", nil).Must(t, "pools").List()); n != 0 {
		t.Errorf("sees %d pools, want 0", n)
	}
	res := tok.Call("GET", "/cluster/resources", nil).Must(t, "resources").List()
	for _, e := range res {
		if e["type"] == "storage" {
			t.Errorf("storage resource visible without Datastore.Audit: %v", e)
		}
		if _, has := e["maxmem"]; has {
			t.Errorf("node stats visible without Sys.Audit: %v", e)
		}
	}
	if len(res) != 1 {
		t.Errorf("resources %v: want the node entry only", res)
	}
	if r := tok.Call("GET", "/cluster/status", nil); r.Status != 403 || !strings.Contains(r.Reason, "Sys.Audit") {
		t.Errorf("cluster status without Sys.Audit: %d %q", r.Status, r.Reason)
	}

	// The token alone is not enough: privileges are the intersection with its user's.
	if err := s.Grant("pve01", "/", id, "PVEAuditor", true); err != nil {
		t.Fatal(err)
	}
	if n := len(tok.Call("GET", "/storage", nil).Must(t, "storage list").List()); n != 0 {
		t.Errorf("token ACL without user ACL: %d storages, want 0", n)
	}
	if err := s.Grant("pve01", "/", "ops@pve", "PVEAuditor", true); err != nil {
		t.Fatal(err)
	}
	if n := len(tok.Call("GET", "/storage", nil).Must(t, "storage list").List()); n != 2 {
		t.Errorf("with both ACLs: %d storages, want local and local-lvm", n)
	}
	if n := len(tok.Call("GET", "/pools", nil).Must(t, "pools").List()); n != 1 {
		t.Errorf("with Pool.Audit: %d pools, want 1", n)
	}
	tok.Call("GET", "/cluster/status", nil).Must(t, "cluster status with Sys.Audit")
	// Auditor may not allocate: 403 naming path and privilege.
	r := tok.Call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}})
	if r.Status != 403 || r.Reason != "Permission check failed (/storage, Datastore.Allocate)" {
		t.Errorf("auditor creating storage: %d %q", r.Status, r.Reason)
	}
}

// The schema is the lab version's: token-coefficient exists only in PVE 9.
func TestValidationFollowsLabVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version int
		status  int
	}{{8, 400}, {9, 200}} {
		s := startSim(t, simOpts{Version: tc.version})
		c := newClient(t, s, "pve01").Root()
		r := c.Call("POST", "/cluster/config", url.Values{"clustername": {"lab"}, "token-coefficient": {"150"}})
		if r.Status != tc.status {
			t.Errorf("PVE %d token-coefficient: %d %q %v, want %d", tc.version, r.Status, r.Reason, r.Errs, tc.status)
		}
		if tc.status == 200 {
			waitTask(t, c, r.Data.(string))
			info, _ := s.Cluster("pve01")
			if !strings.Contains(info.CorosyncConf, "token_coefficient: 150") {
				t.Errorf("corosync.conf lacks the coefficient:\n%s", info.CorosyncConf)
			}
		}
	}
}

// Query parameters are merged into the body's and win (pve-http-server).
func TestQueryParamsMergeAndWin(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	c := newClient(t, s, "pve01").LabToken()
	r := c.CallCtx(context.Background(), "POST", "/pools?poolid=from-query", url.Values{"poolid": {"from-body"}, "comment": {"c"}}, "")
	r.Must(t, "POST with query and body")
	pools := c.Call("GET", "/pools", nil).Must(t, "pools").List()
	if len(pools) != 1 || pools[0]["poolid"] != "from-query" || pools[0]["comment"] != "c" {
		t.Errorf("pools %v: want from-query with the body's comment", pools)
	}
}

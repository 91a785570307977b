package core

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
		s := startSim(t, simOpts{version: v})
		c := newClient(t, s, "pve01").labToken()
		r := c.call("GET", "/version", nil).must(t, "GET /version")
		rel, _ := r.obj()["release"].(string)
		if !strings.HasPrefix(rel, map[int]string{8: "8.", 9: "9."}[v]) {
			t.Errorf("PVE %d: release %q", v, rel)
		}
	}
}

func TestSchemaValidationOverHTTP(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	c := newClient(t, s, "pve01").root()
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
				r = c.callJSON(tt.method, tt.path, tt.json)
			} else {
				r = c.call(tt.method, tt.path, tt.params)
			}
			if r.status != tt.status {
				t.Fatalf("status %d %q, want %d (body %v)", r.status, r.reason, tt.status, r.body)
			}
			if tt.status == 400 && r.reason != "Parameter verification failed." {
				t.Errorf("reason %q", r.reason)
			}
			for _, k := range tt.errKeys {
				if _, ok := r.errs[k]; !ok {
					t.Errorf("errors %v do not name %q", r.errs, k)
				}
			}
			for _, k := range tt.okKeys {
				if _, ok := r.errs[k]; ok {
					t.Errorf("errors %v name valid %q", r.errs, k)
				}
			}
			if tt.inReason != "" && !strings.Contains(r.reason, tt.inReason) {
				t.Errorf("reason %q lacks %q", r.reason, tt.inReason)
			}
			if msg, _ := r.body["message"].(string); !strings.HasSuffix(msg, "\n") || r.body["data"] != nil {
				t.Errorf("error body %v: want data null and a message ending in newline", r.body)
			}
		})
	}
	// The exact pve-common wording for the commonest failures.
	r := c.call("POST", "/cluster/config", url.Values{"bogus": {"1"}})
	if r.errs["bogus"] != "property is not defined in schema and the schema does not allow additional properties" ||
		r.errs["clustername"] != "property is missing and it is not optional" {
		t.Errorf("messages %v", r.errs)
	}
	r = c.call("GET", "/cluster/resources", url.Values{"type": {"vms"}})
	if r.errs["type"] != "value 'vms' does not have a value in the enumeration 'vm, storage, node, sdn'" {
		t.Errorf("enum message %v", r.errs)
	}
	// Nothing above may have changed state.
	if _, clustered := s.Cluster("pve01"); clustered {
		t.Error("an invalid request created a cluster")
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{authDelay: 150 * time.Millisecond})
	anon := newClient(t, s, "pve01")
	start := time.Now()
	r := anon.call("GET", "/version", nil)
	if r.status != 401 {
		t.Fatalf("no auth: %d", r.status)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Errorf("401 came after %v, want the configured auth delay", el)
	}
	bad := newClient(t, s, "pve01").withToken("root@pam!lab", "wrong")
	if r := bad.call("GET", "/version", nil); r.status != 401 {
		t.Errorf("bad token: %d", r.status)
	}
	// K7: the token id must be the full user@realm!name.
	short := newClient(t, s, "pve01")
	_, secret := s.LabToken()
	short.token = "lab=" + secret
	if r := short.call("GET", "/version", nil); r.status != 401 {
		t.Errorf("short token id: %d, want 401", r.status)
	}
	if r := newClient(t, s, "pve01").call("POST", "/access/ticket", url.Values{"username": {"root@pam"}, "password": {"nope"}}); r.status != 401 {
		t.Errorf("wrong password: %d", r.status)
	}
	// root password with username + realm split also works.
	split := newClient(t, s, "pve01")
	r = split.call("POST", "/access/ticket", url.Values{"username": {"root"}, "realm": {"pam"}, "password": {s.RootPassword()}})
	if r.status != 200 || r.obj()["username"] != "root@pam" {
		t.Errorf("username+realm login: %d %v", r.status, r.body)
	}

	tk := newClient(t, s, "pve01").root()
	tk.call("GET", "/nodes", nil).must(t, "GET /nodes with ticket")
	// A ticket write needs the CSRF token.
	noCSRF := *tk
	noCSRF.csrf = "00000000:forged"
	if r := noCSRF.call("POST", "/pools", url.Values{"poolid": {"p1"}}); r.status != 401 || !strings.Contains(r.reason, "csrf") {
		t.Errorf("write without valid CSRF: %d %q", r.status, r.reason)
	}
	tk.call("POST", "/pools", url.Values{"poolid": {"p1"}}).must(t, "POST /pools with ticket+CSRF")
	// A token needs no CSRF token.
	newClient(t, s, "pve01").labToken().call("POST", "/pools", url.Values{"poolid": {"p2"}}).must(t, "POST /pools with token")
	// Renewing a ticket with the ticket as password.
	renew := newClient(t, s, "pve01")
	renew.call("POST", "/access/ticket", url.Values{"username": {"root@pam"}, "password": {tk.ticket}}).must(t, "ticket renewal")
}

// Cluster create and join are root@pam-only methods (no permissions in the
// schema): a token, even root@pam's, gets 403.
func TestClusterCreateRefusesTokens(t *testing.T) {
	t.Parallel()
	s := startSim(t, simOpts{})
	c := newClient(t, s, "pve01").labToken()
	r := c.call("POST", "/cluster/config", url.Values{"clustername": {"lab"}})
	if r.status != 403 || r.reason != "Permission check failed (user != root@pam)" {
		t.Fatalf("token cluster create: %d %q", r.status, r.reason)
	}
	r = c.call("POST", "/cluster/config/join", url.Values{"hostname": {"pve02"}, "password": {"x"},
		"fingerprint": {strings.TrimSuffix(strings.Repeat("AA:", 32), ":")}})
	if r.status != 403 {
		t.Fatalf("token join: %d %q", r.status, r.reason)
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
	admin := newClient(t, s, "pve01").labToken()
	admin.call("POST", "/pools", url.Values{"poolid": {"tenant"}}).must(t, "create pool")
	id, secret, err := s.AddToken("pve01", TokenSpec{User: "ops@pve", Name: "ci", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	tok := newClient(t, s, "pve01").withToken(id, secret)

	if n := len(tok.call("GET", "/storage", nil).must(t, "storage list").list()); n != 0 {
		t.Errorf("privsep token without ACL sees %d storages, want 0", n)
	}
	if n := len(tok.call("GET", "/pools", nil).must(t, "pools").list()); n != 0 {
		t.Errorf("sees %d pools, want 0", n)
	}
	res := tok.call("GET", "/cluster/resources", nil).must(t, "resources").list()
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
	if r := tok.call("GET", "/cluster/status", nil); r.status != 403 || !strings.Contains(r.reason, "Sys.Audit") {
		t.Errorf("cluster status without Sys.Audit: %d %q", r.status, r.reason)
	}

	// The token alone is not enough: privileges are the intersection with its user's.
	if err := s.Grant("pve01", "/", id, "PVEAuditor", true); err != nil {
		t.Fatal(err)
	}
	if n := len(tok.call("GET", "/storage", nil).must(t, "storage list").list()); n != 0 {
		t.Errorf("token ACL without user ACL: %d storages, want 0", n)
	}
	if err := s.Grant("pve01", "/", "ops@pve", "PVEAuditor", true); err != nil {
		t.Fatal(err)
	}
	if n := len(tok.call("GET", "/storage", nil).must(t, "storage list").list()); n != 2 {
		t.Errorf("with both ACLs: %d storages, want local and local-lvm", n)
	}
	if n := len(tok.call("GET", "/pools", nil).must(t, "pools").list()); n != 1 {
		t.Errorf("with Pool.Audit: %d pools, want 1", n)
	}
	tok.call("GET", "/cluster/status", nil).must(t, "cluster status with Sys.Audit")
	// Auditor may not allocate: 403 naming path and privilege.
	r := tok.call("POST", "/storage", url.Values{"storage": {"d1"}, "type": {"dir"}, "path": {"/srv/d1"}})
	if r.status != 403 || r.reason != "Permission check failed (/storage, Datastore.Allocate)" {
		t.Errorf("auditor creating storage: %d %q", r.status, r.reason)
	}
}

// The schema is the lab version's: token-coefficient exists only in PVE 9.
func TestValidationFollowsLabVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		version int
		status  int
	}{{8, 400}, {9, 200}} {
		s := startSim(t, simOpts{version: tc.version})
		c := newClient(t, s, "pve01").root()
		r := c.call("POST", "/cluster/config", url.Values{"clustername": {"lab"}, "token-coefficient": {"150"}})
		if r.status != tc.status {
			t.Errorf("PVE %d token-coefficient: %d %q %v, want %d", tc.version, r.status, r.reason, r.errs, tc.status)
		}
		if tc.status == 200 {
			waitTask(t, c, r.data.(string))
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
	c := newClient(t, s, "pve01").labToken()
	r := c.callCtx(context.Background(), "POST", "/pools?poolid=from-query", url.Values{"poolid": {"from-body"}, "comment": {"c"}}, "")
	r.must(t, "POST with query and body")
	pools := c.call("GET", "/pools", nil).must(t, "pools").list()
	if len(pools) != 1 || pools[0]["poolid"] != "from-query" || pools[0]["comment"] != "c" {
		t.Errorf("pools %v: want from-query with the body's comment", pools)
	}
}

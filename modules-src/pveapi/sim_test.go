package pveapi_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

func connect(t *testing.T, conn pveapi.Connection) *pveapi.Client {
	t.Helper()
	c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry})
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	return c
}

// Against the simulator, for both PVE versions: every auth variant reaches
// the API, and the answers decode.
func TestSimAuthVariants(t *testing.T) {
	for _, v := range []int{8, 9} {
		s := pveapitest.Start(t, v, 1)
		token := pveapitest.TokenConn(t, s, "pve01")
		info, _ := s.Node("pve01")

		short := token
		short.User, short.TokenID = "root@pam", strings.TrimPrefix(token.TokenID, "root@pam!")
		password := token
		password.TokenID, password.TokenSecret, password.User, password.Password = "", "", "root@pam", s.RootPassword()
		caFile := filepath.Join(t.TempDir(), "pve-root-ca.pem")
		os.WriteFile(caFile, info.CAPEM, 0o600)
		withCA := token
		withCA.Fingerprint, withCA.CAPath = "", caFile

		for name, conn := range map[string]pveapi.Connection{"full token id": token, "short token id": short, "password": password, "ca_path": withCA} {
			got, err := connect(t, conn).Version(context.Background())
			if err != nil || got.Major != v {
				t.Errorf("PVE %d %s: %+v %v", v, name, got, err)
			}
		}
		// K14: the lab's CA is not in the system pool.
		unverified := token
		unverified.Fingerprint = ""
		_, err := connect(t, unverified).Version(context.Background())
		if pveapi.KindOf(err) != pveapi.KindTLS || !strings.Contains(err.Error(), info.Fingerprint) {
			t.Errorf("PVE %d unverified: %v", v, err)
		}
		wrongSecret := token
		wrongSecret.TokenSecret = "00000000-0000-4000-a000-000000000000"
		_, err = connect(t, wrongSecret).Version(context.Background())
		if pveapi.KindOf(err) != pveapi.KindAuth || strings.Contains(err.Error(), wrongSecret.TokenSecret) {
			t.Errorf("PVE %d wrong secret: %v", v, err)
		}
		for _, r := range s.Requests() {
			for k, val := range r.Params {
				if strings.Contains(val, s.RootPassword()) || strings.Contains(val, token.TokenSecret) {
					t.Errorf("secret in request log param %s", k)
				}
			}
		}
	}
}

// K19: a privilege-separated token without audit rights sees an empty
// storage list; RequireAny turns that into a permission error, and a direct
// read is a 403, never "absent".
func TestSimTokenWithoutAudit(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	id, secret, err := s.AddToken("pve01", pvesim.TokenSpec{User: "ci@pve", Name: "blind", Privsep: true})
	if err != nil {
		t.Fatal(err)
	}
	conn := pveapitest.TokenConn(t, s, "pve01")
	conn.TokenID, conn.TokenSecret = id, secret
	c := connect(t, conn)
	var list []map[string]any
	if err := c.Get(context.Background(), "/storage", nil, &list); err != nil || len(list) != 0 {
		t.Fatalf("list as a blind token: %v %v", list, err)
	}
	err = c.RequireAny(context.Background(), "/storage", "Datastore.Audit", "Datastore.AllocateSpace")
	if !pveapi.IsPermission(err) || !strings.Contains(err.Error(), "Datastore.Audit") {
		t.Errorf("RequireAny: %v", err)
	}
	err = c.Get(context.Background(), "/storage/local", nil, nil)
	if !pveapi.IsPermission(err) || pveapi.IsNotFound(err) {
		t.Errorf("direct read: %v (kind %s)", err, pveapi.KindOf(err))
	}
	if err := connect(t, pveapitest.TokenConn(t, s, "pve01")).RequireAny(context.Background(), "/storage", "Datastore.Audit"); err != nil {
		t.Errorf("the lab token has audit rights: %v", err)
	}
}

// Faults: reads survive 5xx and resets; a write whose answer is lost is
// reported unanswered and was made once; lock contention is retried.
func TestSimFaults(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	c := connect(t, pveapitest.TokenConn(t, s, "pve01"))
	ctx := context.Background()
	f := s.Faults()
	f.Add(pvesim.Fault{Method: "GET", Path: "/storage/local", Kind: pvesim.FaultError, Status: 500, Message: "got timeout", Count: 1})
	f.Add(pvesim.Fault{Method: "GET", Path: "/storage/local", Kind: pvesim.FaultReset, Count: 1})
	var st map[string]any
	if err := c.Get(ctx, "/storage/local", nil, &st); err != nil || st["path"] != "/var/lib/vz" {
		t.Fatalf("read through a 500 and a reset: %v %v", st, err)
	}

	f.Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultLostAnswer, Count: 1})
	var settles int
	out, err := c.Dispatch(ctx, pveapi.Write{Method: "POST", Path: "/storage", Params: url.Values{"storage": {"backup"}, "type": {"dir"}, "path": {"/srv/backup"}},
		What: "create storage backup", Settle: func(ctx context.Context) (bool, error) {
			settles++
			err := c.Get(ctx, "/storage/backup", nil, nil)
			return err == nil, nil
		}})
	if err != nil || out.Lost == "" || settles != 1 {
		t.Fatalf("lost answer, settled by one read: %+v %v (%d reads)", out, err, settles)
	}
	posts := 0
	for _, r := range pveapitest.Mutating(s) {
		if r.Method == "POST" && r.Path == "/storage" {
			posts++
		}
	}
	if posts != 1 {
		t.Errorf("the lost create was sent %d times, want 1", posts)
	}
	if err := c.Get(ctx, "/storage/backup", nil, &st); err != nil {
		t.Errorf("the lost create did happen, re-reading shows it: %v", err)
	}

	f.Add(pvesim.Fault{Method: "PUT", Path: "/storage/backup", Kind: pvesim.FaultLock, Delay: time.Millisecond,
		LockFile: "/var/lock/pve-manager/pve-storage-backup", Count: 2})
	if _, err := c.Dispatch(ctx, pveapi.Write{Method: "PUT", Path: "/storage/backup", Params: url.Values{"content": {"backup"}},
		What: "update storage backup", Settle: func(context.Context) (bool, error) { return false, nil }}); err != nil {
		t.Errorf("PUT through two lock timeouts: %v", err)
	}
	puts := 0
	for _, r := range s.Requests() {
		if r.Method == "PUT" && r.Path == "/storage/backup" {
			puts++
		}
	}
	if puts != 3 {
		t.Errorf("PUT sent %d times, want 3 (two lock timeouts, then success)", puts)
	}
	gets := 0
	for _, r := range s.Requests() {
		if r.Method == "GET" && r.Path == "/storage/local" {
			gets++
		}
	}
	if gets != 3 {
		t.Errorf("GET /storage/local sent %d times, want 3 (500, reset, answer)", gets)
	}
}

// Tasks in the simulator: cluster create (root ticket) ends OK; with a
// task-fail fault it ends in a TaskError carrying the log.
func TestSimWaitTask(t *testing.T) {
	for _, fail := range []bool{false, true} {
		s := pveapitest.Start(t, 9, 1)
		conn := pveapitest.TokenConn(t, s, "pve01")
		conn.TokenID, conn.TokenSecret, conn.User, conn.Password = "", "", "root@pam", s.RootPassword()
		c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if fail {
			s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/cluster/config", Kind: pvesim.FaultTaskFail, ExitStatus: "corosync-keygen failed"})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := c.Dispatch(ctx, pveapi.Write{Method: "POST", Path: "/cluster/config", Params: url.Values{"clustername": {"lab"}},
			What: "create cluster lab", Task: &pveapi.TaskWrite{Node: "pve01", Types: []string{"clustercreate"}, ID: "lab"}})
		cancel()
		var res *pveapi.TaskResult
		if out != nil {
			res = out.Task
		}
		var te *pveapi.TaskError
		switch {
		case !fail && (err != nil || res.ExitStatus != "OK"):
			t.Errorf("cluster create: %+v %v", res, err)
		case fail && (!errors.As(err, &te) || te.ExitStatus != "corosync-keygen failed"):
			t.Errorf("failed cluster create: %v", err)
		}
	}
}

package pveapi_test

import (
	"context"
	"errors"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// clientMethods classifies every exported method of *Client by what it
// sends. Dispatch is the only one that writes; a new method must be added
// here, which makes its author decide. A raw Post/Put/Delete/Do would
// reopen the door to blind re-sends (issue 16) and fails this test.
var clientMethods = map[string]string{
	"Calls": "none", "Local": "none", "Pvesh": "none", "Warnings": "none", "Target": "none", "ReadOnly": "none", "ReadOnlyClient": "none",
	"Get": "read", "Version": "read", "Privileges": "read", "RequireAny": "read", "WaitTask": "read",
	"Dispatch": "write",
}

func TestOnlyDispatchWrites(t *testing.T) {
	typ := reflect.TypeOf(&pveapi.Client{})
	for i := 0; i < typ.NumMethod(); i++ {
		name := typ.Method(i).Name
		if _, ok := clientMethods[name]; !ok {
			t.Errorf("*pveapi.Client.%s is not classified: say whether it reads or writes (only Dispatch may write)", name)
		}
	}
}

func dirStorage(id string) url.Values {
	return url.Values{"storage": {id}, "type": {"dir"}, "path": {"/srv/" + id}}
}

func storageExists(c *pveapi.Client, id string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, "/storage/"+id, nil, nil)
		if pveapi.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
}

// posts counts the POSTs to path the simulator logged. A request is logged
// when its handler returns, so a create still inside its lock is counted
// once it ends: posts waits for the simulator to be idle first.
func posts(s *pvesim.Sim, path string) int {
	s.WaitIdle()
	n := 0
	for _, r := range pveapitest.Mutating(s) {
		if r.Method == "POST" && r.Path == path {
			n++
		}
	}
	return n
}

// Check mode's client: every write fails as a bug before anything is
// sent, reads work, and a password client still logs in (POST
// /access/ticket is the one non-GET it sends).
func TestReadOnlyClientSendsNoWrite(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	conn.TokenID, conn.TokenSecret, conn.User, conn.Password = "", "", "root@pam", s.RootPassword()
	c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{ReadOnly: true, Retry: &pveapitest.FastRetry})
	if err != nil {
		t.Fatalf("read-only client with a password must log in: %v", err)
	}
	writable, _ := pveapi.Connect(context.Background(), pveapitest.TokenConn(t, s, "pve01"), pveapi.Options{})
	s.ResetRequests()
	for _, ro := range []*pveapi.Client{c, writable.ReadOnlyClient()} {
		if _, err := ro.Version(context.Background()); err != nil {
			t.Fatalf("reads work: %v", err)
		}
		for _, m := range []string{"POST", "PUT", "DELETE"} {
			_, err := ro.Dispatch(context.Background(), pveapi.Write{Method: m, Path: "/storage", Params: dirStorage("x"),
				What: "create storage x", Settle: storageExists(ro, "x"), Creates: true})
			var roe *pveapi.ReadOnlyError
			if !errors.As(err, &roe) || !strings.Contains(err.Error(), "bug:") {
				t.Errorf("%s through the read-only client: %v", m, err)
			}
		}
	}
	if m := pveapitest.Mutating(s); len(m) != 0 {
		t.Errorf("the read-only client sent writes: %+v", m)
	}
	if writable.ReadOnly() || !writable.ReadOnlyClient().ReadOnly() {
		t.Errorf("ReadOnlyClient must not change the client it derives from")
	}
}

// Issue 15 item 3: a create whose answer is lost while PVE is still inside
// its lock (the NFS mount takes seconds, storage.cfg is written at the
// end). It is sent once; the read-back settles it once the storage shows.
func TestLostCreateSettledByReadBack(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	conn.Timeout = 1 // the answer is lost: the client gives up after 1 s
	c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry, SettlePoll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultSlowLocked, Delay: 2500 * time.Millisecond, Count: 1})
	s.ResetRequests()
	start := time.Now()
	out, err := c.Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/storage", Params: dirStorage("slow"),
		What: "create storage slow", Settle: storageExists(c, "slow"), Creates: true})
	if err != nil || out.Lost == "" {
		t.Fatalf("settled create: %+v %v", out, err)
	}
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("settled after %s, before the create could have ended (the fault did not hold the lock?)", d)
	}
	if n := posts(s, "/storage"); n != 1 {
		t.Errorf("POST /storage sent %d times, want 1", n)
	}
}

// The same create when nothing settles it within the settle time: changed,
// unverified — never "nothing was changed" — and still sent once. The
// create then does end: the storage appears after the error was reported.
func TestLostCreateUnverifiedWhenNothingSettles(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	conn.Timeout = 1
	c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry, SettlePoll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/storage", Kind: pvesim.FaultSlowLocked, Delay: 4 * time.Second, Count: 1})
	s.ResetRequests()
	_, err = c.Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/storage", Params: dirStorage("slow"),
		What: "create storage slow", Settle: storageExists(c, "slow"), Creates: true, SettleWithin: time.Second})
	if !pveapi.IsUnverified(err) || pveapi.NothingDone(err) || !strings.Contains(err.Error(), "not sent again") {
		t.Fatalf("unsettled create: %v (unverified %v, nothing done %v)", err, pveapi.IsUnverified(err), pveapi.NothingDone(err))
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ok, _ := storageExists(c, "slow")(context.Background()); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the create never ended: the fault must finish it, as PVE does")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := posts(s, "/storage"); n != 1 {
		t.Errorf("POST /storage sent %d times, want 1", n)
	}
}

// A task write whose answer is lost (the cluster create is handled, its
// UPID never arrives): the task is found in the node's task list and
// waited out; the POST was sent once.
func TestLostTaskAnswerFoundInTaskList(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	conn.TokenID, conn.TokenSecret, conn.User, conn.Password = "", "", "root@pam", s.RootPassword()
	c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry,
		TaskPoll: 20 * time.Millisecond, SettlePoll: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/cluster/config", Kind: pvesim.FaultLostAnswer, Count: 1})
	s.ResetRequests()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := c.Dispatch(ctx, pveapi.Write{Method: "POST", Path: "/cluster/config", Params: url.Values{"clustername": {"lab"}},
		What: "create cluster lab", Task: &pveapi.TaskWrite{Node: "pve01", Types: []string{"clustercreate"}, ID: "lab"}})
	if err != nil || out.Lost == "" || out.Task == nil || out.Task.ExitStatus != "OK" {
		t.Fatalf("lost task answer: %+v %v", out, err)
	}
	if n := posts(s, "/cluster/config"); n != 1 {
		t.Errorf("POST /cluster/config sent %d times, want 1", n)
	}
	found := false
	for _, r := range s.Requests() {
		if r.Method == "GET" && r.Path == "/nodes/pve01/tasks" && r.Params["typefilter"] == "clustercreate" && r.Params["source"] == "all" && r.Params["since"] != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("the task was not looked up in the node's task list: %+v", s.Requests())
	}
}

// A task write PVE answered with a failure and no task in the list:
// nothing was done (one read proves it); no second POST.
func TestAnsweredTaskFailureWithoutTaskIsNothingDone(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	conn.TokenID, conn.TokenSecret, conn.User, conn.Password = "", "", "root@pam", s.RootPassword()
	c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	s.Faults().Add(pvesim.Fault{Method: "POST", Path: "/cluster/config", Kind: pvesim.FaultError, Status: 500, Message: "got no worker upid - start worker failed", Count: 1})
	s.ResetRequests()
	_, err = c.Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/cluster/config", Params: url.Values{"clustername": {"lab"}},
		What: "create cluster lab", Task: &pveapi.TaskWrite{Node: "pve01", Types: []string{"clustercreate"}, ID: "lab"}})
	if !pveapi.NothingDone(err) || !strings.Contains(err.Error(), "not made") {
		t.Errorf("answered failure, no task: %v", err)
	}
	if n := posts(s, "/cluster/config"); n != 1 {
		t.Errorf("POST sent %d times, want 1", n)
	}
}

// An update PVE answered with a 500 whose effect a read does not show is
// changed, unverified: a read cannot prove a partial change absent.
func TestAnsweredUpdateFailureIsUnverified(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	c, err := pveapi.Connect(context.Background(), pveapitest.TokenConn(t, s, "pve01"), pveapi.Options{Retry: &pveapitest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	s.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/storage/local", Kind: pvesim.FaultError, Status: 500, Message: "unexpected failure", Count: 1})
	_, err = c.Dispatch(context.Background(), pveapi.Write{Method: "PUT", Path: "/storage/local", Params: url.Values{"disable": {"1"}},
		What: "disable storage local", Settle: func(context.Context) (bool, error) { return false, nil }})
	if !pveapi.IsUnverified(err) || pveapi.NothingDone(err) {
		t.Errorf("answered update failure: %v", err)
	}
	_, err = c.Dispatch(context.Background(), pveapi.Write{Method: "GET", Path: "/storage/local", What: "x", Settle: func(context.Context) (bool, error) { return false, nil }})
	if err == nil || !strings.Contains(err.Error(), "bug:") {
		t.Errorf("a GET is no write: %v", err)
	}
	_, err = c.Dispatch(context.Background(), pveapi.Write{Method: "PUT", Path: "/storage/local", What: "x"})
	if err == nil || !strings.Contains(err.Error(), "neither Settle nor Task") {
		t.Errorf("a write that cannot be settled is a bug: %v", err)
	}
}

// A write no read can settle (Write.Unreadable: a password) whose answer is
// lost: unverified at once with that reason — not polled for, never
// "nothing done" — and sent once; the lab did make it.
func TestLostUnreadableAnswerUnverifiedAtOnce(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	conn.TokenID, conn.TokenSecret, conn.User, conn.Password = "", "", "root@pam", s.RootPassword()
	c, err := pveapi.Connect(context.Background(), conn, pveapi.Options{Retry: &pveapitest.FastRetry})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/access/users",
		Params: url.Values{"userid": {"bob@pve"}, "password": {"bob-pass-1"}}, What: "create user bob@pve",
		Settle: func(context.Context) (bool, error) { return true, nil }}); err != nil {
		t.Fatal(err)
	}
	s.Faults().Add(pvesim.Fault{Method: "PUT", Path: "/access/password", Kind: pvesim.FaultLostAnswer, Count: 1})
	s.ResetRequests()
	start := time.Now()
	_, err = c.Dispatch(context.Background(), pveapi.Write{Method: "PUT", Path: "/access/password",
		Params: url.Values{"userid": {"bob@pve"}, "password": {"bob-pass-2"}}, What: "set the password of bob@pve",
		Unreadable: "PVE shows no password"})
	if !pveapi.IsUnverified(err) || pveapi.NothingDone(err) || !strings.Contains(err.Error(), "PVE shows no password") {
		t.Fatalf("lost unreadable write: %v (unverified %v, nothing done %v)", err, pveapi.IsUnverified(err), pveapi.NothingDone(err))
	}
	if took := time.Since(start); took > pveapi.DefaultSettle/4 {
		t.Errorf("took %v: an unreadable write is not polled for", took)
	}
	n := 0
	for _, r := range s.Requests() {
		if r.Method == "PUT" && r.Path == "/access/password" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("PUT /access/password sent %d times, want 1", n)
	}
	if _, err := pveapi.Connect(context.Background(), pveapi.Connection{Host: conn.Host, Port: conn.Port, Fingerprint: conn.Fingerprint,
		User: "bob@pve", Password: "bob-pass-2", Timeout: conn.Timeout}, pveapi.Options{Retry: &pveapitest.FastRetry}); err != nil {
		t.Errorf("the lost write did happen in the lab, yet bob cannot log in with it: %v", err)
	}
}

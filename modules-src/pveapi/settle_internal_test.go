package pveapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNode answers a lost POST, a task list and task status reads, so the
// settle rules can be driven exactly.
type fakeNode struct {
	mu    sync.Mutex
	tasks []TaskEntry // the node's list
	lost  error       // what the POST gets
	// onPost adds the tasks the POST starts (before its answer is lost).
	onPost func()
	posts  int
}

func (f *fakeNode) do(ctx context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case method == http.MethodPost:
		f.posts++
		if f.onPost != nil {
			f.onPost()
		}
		return nil, f.lost
	case strings.HasSuffix(path, "/tasks"):
		return json.Marshal(f.tasks)
	case strings.HasSuffix(path, "/status"):
		return json.RawMessage(`{"status":"stopped","exitstatus":"OK"}`), nil
	}
	return nil, newError(method, path, 404, "no such path", nil, nil)
}

func upidOf(node, typ, id, user string, start int64) string {
	return fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, 4242, 1, start, typ, id, user)
}

func (f *fakeNode) task(typ, id, user string) {
	now := time.Now().Unix()
	f.tasks = append(f.tasks, TaskEntry{UPID: upidOf("pve01", typ, id, user, now), Node: "pve01", Type: typ, ID: id,
		User: user, StartTime: now})
}

// Issue 23 §1: a task found by a read is ours only if it ran as our
// principal (the token id, as PVE writes it in the UPID), and a create is
// made only if its Proof shows the object is ours.
func TestSettleNeedsOurPrincipalAndProof(t *testing.T) {
	lost := newError(http.MethodPost, "/nodes/pve01/qemu/9000/clone", 0, "", nil, errors.New("read: connection reset by peer"))
	lost.Unanswered = true
	clone := func(ours bool) Write {
		return Write{Method: http.MethodPost, Path: "/nodes/pve01/qemu/9000/clone", What: "clone 9000 into 2000", Creates: true,
			SettleWithin: 150 * time.Millisecond, Task: &TaskWrite{Node: "pve01", Types: []string{"qmclone"}, ID: "9000"},
			Proof: func(context.Context) (Evidence, error) {
				if ours {
					return Evidence{Ours: true, Read: "VM 2000 is named web-a"}, nil
				}
				return Evidence{Read: "no VM 2000"}, nil
			}}
	}
	for _, c := range []struct {
		name      string
		taskUser  string // who the task the POST starts runs as
		principal string
		proofOurs bool
		made      bool
	}{
		{"our token, object ours", "root@pam!lab", "root@pam!lab", true, true},
		{"another token of the same user", "root@pam!tenant2", "root@pam!lab", true, false},
		{"the user, not its token", "root@pam", "root@pam!lab", true, false},
		{"our token, object not shown", "root@pam!lab", "root@pam!lab", false, false},
		{"local mode: root@pam", "root@pam", "root@pam", true, true},
		{"unknown principal", "root@pam!lab", "", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeNode{lost: lost}
			f.onPost = func() { f.task("qmclone", "9000", c.taskUser) }
			cl := &Client{t: f, retry: fastRetry, logf: func(string, ...any) {}, principal: c.principal,
				settlePoll: 20 * time.Millisecond, taskPoll: time.Millisecond}
			out, err := cl.Dispatch(context.Background(), clone(c.proofOurs))
			switch {
			case c.made && (err != nil || out == nil || out.Lost == "" || out.Task == nil):
				t.Errorf("our own task not settled as made: %+v %v", out, err)
			case !c.made && (!IsUnverified(err) || NothingDone(err) || out != nil):
				t.Errorf("settled without proof: %+v %v", out, err)
			}
			if f.posts != 1 {
				t.Errorf("sent %d times", f.posts)
			}
		})
	}
}

// A task of ours that was in the list before the write was sent is not
// the write's own, though it matches type, id and user within the clock
// slack (another clone of the same template a moment ago).
func TestSettleSkipsTasksFromBeforeTheWrite(t *testing.T) {
	lost := newError(http.MethodPost, "/nodes/pve01/qemu/9000/clone", 0, "", nil, errors.New("read: connection reset by peer"))
	f := &fakeNode{lost: lost}
	f.task("qmclone", "9000", "root@pam!lab") // a moment ago, before the write
	cl := &Client{t: f, retry: fastRetry, logf: func(string, ...any) {}, principal: "root@pam!lab",
		settlePoll: 20 * time.Millisecond, taskPoll: time.Millisecond}
	w := Write{Method: http.MethodPost, Path: "/nodes/pve01/qemu/9000/clone", What: "clone 9000 into 2001", Creates: true,
		SettleWithin: 150 * time.Millisecond, Task: &TaskWrite{Node: "pve01", Types: []string{"qmclone"}, ID: "9000"},
		Proof: func(context.Context) (Evidence, error) {
			return Evidence{Ours: true, Read: "VM 2001 is named web-b"}, nil
		}}
	if out, err := cl.Dispatch(context.Background(), w); !IsUnverified(err) || out != nil {
		t.Errorf("an earlier task was taken as this write's: %+v %v", out, err)
	}
}

// "The answer was lost" only when no answer came. A pvesh killed by a
// signal, or whose ssh proxy to another node exited 255, is a lost
// answer (settled by polling, never one read taken as proof of nothing);
// a pvesh that printed PVE's die message is PVE's answer, quoted.
func TestPveshLostOrAnswered(t *testing.T) {
	exitErr := func(script string) error {
		err := exec.Command("/bin/sh", "-c", script).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", script, err)
		}
		return err
	}
	proxied := "proxy handler failed: command 'ssh -o BatchMode=yes root@10.0.0.2 pvesh --noproxy set /nodes/pve02/storage/x' failed: exit code 255\n"
	for _, c := range []struct {
		name, stderr string
		err          error
		lost         bool
		want         string
	}{
		{"killed by a signal", "", exitErr("kill -9 $$"), true, "pvesh was killed by signal 9"},
		{"ssh proxy 255", proxied, exitErr("exit 255"), true, "ssh failed before an answer came"},
		{"PVE's die, exit 255", "storage 'x' is not online\n", exitErr("exit 255"), false, "PVE answered"},
		{"PVE's 500 die", "500 mount error: mount.nfs: Connection timed out\n", exitErr("exit 2"), false, "PVE answered PUT /nodes/pve02/storage/x: 500 mount error"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pt := &pveshTransport{bin: "pvesh", run: func(context.Context, string, []string) ([]byte, []byte, error) {
				return nil, []byte(c.stderr), c.err
			}}
			cl := &Client{t: pt, retry: fastRetry, logf: func(string, ...any) {}, local: true, pvesh: true, principal: "root@pam",
				settlePoll: 20 * time.Millisecond}
			reads := 0
			w := Write{Method: http.MethodPut, Path: "/nodes/pve02/storage/x", What: "update storage x", SettleWithin: 100 * time.Millisecond,
				Settle: func(context.Context) (bool, error) { reads++; return false, nil }}
			_, err := cl.Dispatch(context.Background(), w)
			if !IsUnverified(err) || NothingDone(err) {
				t.Fatalf("%v", err)
			}
			if got := strings.Contains(err.Error(), "the answer was lost"); got != c.lost {
				t.Errorf("lost=%v, message %q", c.lost, err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("message lacks %q: %v", c.want, err)
			}
			if c.lost && reads < 2 || !c.lost && reads != 1 {
				t.Errorf("%d settle reads (a lost answer polls, an answer is read once)", reads)
			}
		})
	}
}

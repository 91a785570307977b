package pveapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// K3: the task is polled at the node written in the UPID, and only
// stopped+OK (or WARNINGS: N) is success.
func TestWaitTask(t *testing.T) {
	const (
		ok    = "UPID:pve02:0000ABCD:00112233:65A0B1C2:qmclone:100:root@pam!ci:"
		warn  = "UPID:pve02:0000ABCD:00112233:65A0B1C3:vzdump:100:root@pam!ci:"
		fail  = "UPID:pve02:0000ABCD:00112233:65A0B1C4:qmclone:101:root@pam!ci:"
		noex  = "UPID:pve02:0000ABCD:00112233:65A0B1C5:qmclone:102:root@pam!ci:"
		never = "UPID:pve02:0000ABCD:00112233:65A0B1C6:qmclone:103:root@pam!ci:"
	)
	var polls atomic.Int32
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) bool {
		p := strings.TrimPrefix(r.URL.Path, "/api2/json")
		if !strings.HasPrefix(p, "/nodes/pve02/tasks/") {
			pveError(w, 500, "wrong node", nil)
			return true
		}
		upid := strings.Split(strings.TrimPrefix(p, "/nodes/pve02/tasks/"), "/")[0]
		if strings.HasSuffix(p, "/log") {
			var lines []map[string]any
			for i := 1; i <= 30; i++ {
				lines = append(lines, map[string]any{"n": i, "t": "line " + string(rune('a'+i%26))})
			}
			lines = append(lines, map[string]any{"n": 31, "t": "WARN: storage is almost full"}, map[string]any{"n": 32, "t": "TASK ERROR: clone failed: no space left"})
			pveData(w, lines)
			return true
		}
		switch upid {
		case ok:
			// Transient trouble first: "no such task" (400) just after the
			// start, then a proxy error, then running, then done.
			switch polls.Add(1) {
			case 1:
				pveError(w, 400, "Parameter verification failed.", map[string]string{"upid": "no such task"})
			case 2:
				pveError(w, 596, "Connection timed out", nil)
			case 3:
				pveData(w, map[string]any{"status": "running"})
			default:
				pveData(w, map[string]any{"status": "stopped", "exitstatus": "OK"})
			}
		case warn:
			pveData(w, map[string]any{"status": "stopped", "exitstatus": "WARNINGS: 1"})
		case fail:
			pveData(w, map[string]any{"status": "stopped", "exitstatus": "clone failed: no space left"})
		case noex:
			pveData(w, map[string]any{"status": "stopped"})
		case never:
			pveData(w, map[string]any{"status": "running"})
		}
		return true
	})
	c, err := Connect(context.Background(), f.conn(t), Options{Retry: &fastRetry, TaskPoll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if res, err := c.WaitTask(ctx, ok); err != nil || res.ExitStatus != "OK" {
		t.Errorf("ok task: %+v %v", res, err)
	}
	res, err := c.WaitTask(ctx, warn)
	if err != nil || len(res.Warnings) != 1 || res.Warnings[0] != "WARN: storage is almost full" {
		t.Errorf("warnings task: %+v %v", res, err)
	}
	_, err = c.WaitTask(ctx, fail)
	var te *TaskError
	if !errors.As(err, &te) || len(te.Log) != LogTail || !strings.Contains(err.Error(), "TASK ERROR: clone failed") || !strings.Contains(err.Error(), "qmclone on pve02 failed") {
		t.Errorf("failed task: %v", err)
	}
	if _, err := c.WaitTask(ctx, noex); !errors.As(err, &te) {
		t.Errorf("a stopped task without exit status must fail: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, 60*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := c.WaitTask(dctx, never); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Errorf("deadline: %v after %s", err, time.Since(start))
	}
	if _, err := c.WaitTask(ctx, "UPID:pve02:short"); err == nil {
		t.Errorf("malformed UPID accepted")
	}
}

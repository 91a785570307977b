package pveapi

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// UPID is a parsed task id: UPID:<node>:<pid>:<pstart>:<starttime>:<type>:<id>:<user>:
type UPID struct {
	Raw, Node, Type, ID, User string
}

// ParseUPID reads a task id; the node in it is the only node that can
// answer for the task (PVE checks the task log file locally).
func ParseUPID(s string) (UPID, error) {
	f := strings.Split(s, ":")
	if len(f) < 9 || f[0] != "UPID" || f[1] == "" {
		return UPID{}, fmt.Errorf("%q is not a PVE task id (UPID:node:pid:pstart:starttime:type:id:user:)", s)
	}
	return UPID{Raw: s, Node: f[1], Type: f[5], ID: f[6], User: f[7]}, nil
}

// TaskResult is a task that ended well: OK, or with warnings (PVE's
// "WARNINGS: N"; the change was made).
type TaskResult struct {
	UPID       UPID
	ExitStatus string
	Warnings   []string // the task log's warning lines
}

// TaskError is a task that ended badly; Log holds the tail of its log.
type TaskError struct {
	UPID       UPID
	ExitStatus string
	Log        []string
	// Found is set when the task was found by a read after the write's
	// answer was lost (or failed), not named by PVE's answer to it: its
	// failure is then no answer to this request, and a caller must not
	// take it for PVE refusing it (vmid: auto never claims another VMID
	// after one).
	Found bool
}

func (e *TaskError) Error() string {
	msg := fmt.Sprintf("task %s on %s failed: %s", e.UPID.Type, e.UPID.Node, e.ExitStatus)
	if len(e.Log) > 0 {
		msg += "\ntask log (end):\n" + strings.Join(e.Log, "\n")
	}
	return msg
}

// DefaultTaskPoll is how often WaitTask asks (Options.TaskPoll overrides
// it); LogTail is how many log lines a failure carries.
const (
	DefaultTaskPoll = time.Second
	LogTail         = 20
)

var warningsRe = regexp.MustCompile(`^WARNINGS: \d+$`)

type taskStatus struct {
	Status     string `json:"status"`
	ExitStatus string `json:"exitstatus"`
}

type logLine struct {
	N int    `json:"n"`
	T string `json:"t"`
}

// WaitTask polls the task's status at the node named in the UPID until it
// stops or ctx ends. Success is stopped with OK or "WARNINGS: N" (a missing
// exit status is a failure). Errors while polling — a node restarting, a
// proxy 5xx, "no such task" just after the start — are tolerated until the
// deadline; the last one is reported if time runs out.
func (c *Client) WaitTask(ctx context.Context, upid string) (*TaskResult, error) {
	u, err := ParseUPID(upid)
	if err != nil {
		return nil, err
	}
	statusPath := Path("/nodes/%s/tasks/%s/status", u.Node, u.Raw)
	var lastErr error
	for {
		var st taskStatus
		err := c.Get(ctx, statusPath, nil, &st)
		switch {
		case err == nil && st.Status == "stopped":
			return c.taskEnded(ctx, u, st.ExitStatus)
		case err == nil:
			lastErr = nil
		case IsPermission(err) || KindOf(err) == KindAuth:
			return nil, err
		default:
			lastErr = err // tolerated: the task may not be visible yet, or the node is busy
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return nil, fmt.Errorf("waiting for task %s on %s: %w (last error: %v)", u.Type, u.Node, ctx.Err(), lastErr)
			}
			return nil, fmt.Errorf("waiting for task %s on %s: %w", u.Type, u.Node, ctx.Err())
		case <-time.After(c.taskPoll):
		}
	}
}

func (c *Client) taskEnded(ctx context.Context, u UPID, exit string) (*TaskResult, error) {
	switch {
	case exit == "OK":
		return &TaskResult{UPID: u, ExitStatus: exit}, nil
	case warningsRe.MatchString(exit):
		lines, _ := c.taskLog(ctx, u)
		var warns []string
		for _, l := range lines {
			if strings.HasPrefix(l, "WARN") {
				warns = append(warns, l)
			}
		}
		if len(warns) == 0 {
			warns = []string{fmt.Sprintf("task %s on %s ended with %s", u.Type, u.Node, exit)}
		}
		return &TaskResult{UPID: u, ExitStatus: exit, Warnings: warns}, nil
	}
	if exit == "" {
		exit = "no exit status"
	}
	lines, _ := c.taskLog(ctx, u)
	if len(lines) > LogTail {
		lines = lines[len(lines)-LogTail:]
	}
	return nil, &TaskError{UPID: u, ExitStatus: exit, Log: lines}
}

func (c *Client) taskLog(ctx context.Context, u UPID) ([]string, error) {
	var lines []logLine
	q := url.Values{"start": {"0"}, "limit": {"50000"}}
	if err := c.Get(ctx, Path("/nodes/%s/tasks/%s/log", u.Node, u.Raw), q, &lines); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, l.T)
	}
	return out, nil
}

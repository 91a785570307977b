package pvesim

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
)

// upidRe parses UPID:node:pid:pstart:starttime:type:id:user: (pve-common UPID.pm).
var upidRe = regexp.MustCompile(`^UPID:([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?):([0-9A-Fa-f]{8}):([0-9A-Fa-f]{8,9}):([0-9A-Fa-f]{8}):([^:\s]+):([^:\s]*):([^:\s]+):$`)

// ParseUPID returns the node a task runs on (where it must be polled).
func ParseUPID(upid string) (node string, ok bool) {
	m := upidRe.FindStringSubmatch(upid)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// taskWorker is the body of a task. It runs without the state lock; it
// takes s.mu itself to touch state. logf appends to the task log. It
// returns "" for OK, "WARNINGS: N", or an error text.
type taskWorker func(t *taskRun) string

// taskRun is a worker's handle on its task.
type taskRun struct {
	s    *Sim
	task *Task
	// effects run (under s.mu) when the worker succeeds; a slow-config
	// fault runs them Delay after the task already reported OK (K4).
	effects []func()
	// node runs the task; lossesAtStart is its power-loss count then.
	node          *Node
	lossesAtStart int
}

// diedLocked tells (under s.mu) whether the task's node lost power since
// the task started: its worker died with the node.
func (t *taskRun) diedLocked() bool {
	return t != nil && t.node != nil && t.node.powerLosses != t.lossesAtStart
}

func (t *taskRun) logf(format string, args ...any) {
	t.s.mu.Lock()
	t.task.Log = append(t.task.Log, fmt.Sprintf(format, args...))
	t.s.mu.Unlock()
}

// commit registers a state change that becomes visible when the task ends
// successfully.
func (t *taskRun) commit(f func()) { t.effects = append(t.effects, f) }

// startTaskLocked creates a running task on node and starts its worker. The
// caller holds s.mu. A task-fail fault on the request overrides the result.
func (s *Sim) startTaskLocked(rc *reqCtx, node, typ, id string, work taskWorker) string {
	n := s.st.Nodes[node]
	now := time.Now()
	s.st.NextPID++
	pid := s.st.NextPID
	pstart := int(n.BootTime % 100000000)
	user := "root@pam"
	if rc != nil && rc.who != nil {
		user = rc.who.taskUser()
	}
	upid := fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, pid, pstart, now.Unix(), typ, id, user)
	task := &Task{UPID: upid, Node: node, PID: pid, PStart: pstart, StartTime: now.Unix(),
		Type: typ, ID: id, User: user, Status: "running"}
	n.Tasks = append(n.Tasks, task)
	s.saveLocked()
	var fault *Fault
	if rc != nil {
		fault = rc.fault
	}
	run := &taskRun{s: s, task: task, node: n, lossesAtStart: n.powerLosses}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		var exit string
		if fault != nil && fault.Kind == FaultTaskFail && !strings.HasPrefix(fault.ExitStatus, "WARNINGS: ") {
			// An injected failure: the worker never gets to change anything.
			run.logf("simulated failure")
			s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration))
			exit = fault.ExitStatus
		} else {
			exit = work(run)
			if exit == "" && fault != nil && fault.Kind == FaultTaskFail {
				exit = fault.ExitStatus // WARNINGS: N — done, with warnings
			}
		}
		if exit == "" {
			exit = "OK"
		}
		s.mu.Lock()
		died := run.diedLocked()
		if died {
			// The node lost power while the task ran: the worker died with it,
			// its last steps never happened and its log has no TASK line;
			// after boot the task is one whose process is gone ("unexpected
			// status", as a lab restart records it). Reconstruction of what
			// PVE's task list shows for a worker that vanished.
			exit = "unexpected status"
		}
		ok := exit == "OK" || strings.HasPrefix(exit, "WARNINGS: ")
		delayed := fault != nil && fault.Kind == FaultSlowConfig
		if ok && !delayed {
			for _, f := range run.effects {
				f()
			}
		}
		switch {
		case died:
		case ok:
			task.Log = append(task.Log, "TASK "+exit)
		default:
			task.Log = append(task.Log, "TASK ERROR: "+exit)
		}
		task.Status, task.ExitStatus, task.EndTime = "stopped", exit, time.Now().Unix()
		s.saveLocked()
		s.mu.Unlock()
		if ok && delayed {
			if s.sleep(fault.Delay) {
				s.mu.Lock()
				for _, f := range run.effects {
					f()
				}
				s.saveLocked()
				s.mu.Unlock()
			}
		}
	}()
	return upid
}

// simpleTask is a worker that just takes the lab's task duration.
func (s *Sim) simpleTask(lines ...string) taskWorker {
	return func(t *taskRun) string {
		for _, l := range lines {
			t.logf("%s", l)
		}
		if !s.sleep(s.cfg.dur(s.cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		return ""
	}
}

func (s *Sim) findTaskLocked(node, upid string) *Task {
	n := s.st.Nodes[node]
	if n == nil {
		return nil
	}
	for _, t := range n.Tasks {
		if t.UPID == upid {
			return t
		}
	}
	return nil
}

// taskStatusView renders a task like read_task_status: a token's task shows
// user and tokenid separately.
func taskStatusView(t *Task) map[string]any {
	v := map[string]any{
		"upid": t.UPID, "node": t.Node, "pid": t.PID, "pstart": t.PStart, "starttime": t.StartTime,
		"type": t.Type, "id": t.ID, "status": t.Status,
	}
	user, tok, isTok := strings.Cut(t.User, "!")
	v["user"] = user
	if isTok {
		v["tokenid"] = tok
	}
	if t.Status == "stopped" {
		v["exitstatus"] = t.ExitStatus
	}
	return v
}

func (s *Sim) getTaskStatus(rc *reqCtx) (any, error) {
	upid := rc.str("upid")
	if _, ok := ParseUPID(upid); !ok {
		return nil, errParams(map[string]string{"upid": "unable to parse worker upid '" + upid + "'"})
	}
	t := s.findTaskLocked(rc.node, upid)
	if t == nil {
		return nil, errParams(map[string]string{"upid": "no such task"})
	}
	if aerr := s.taskAccess(rc, t); aerr != nil {
		return nil, aerr
	}
	return taskStatusView(t), nil
}

// taskAccess: a user may read own tasks, others need Sys.Audit on the node.
func (s *Sim) taskAccess(rc *reqCtx, t *Task) *APIError {
	owner, _, _ := strings.Cut(t.User, "!")
	if rc.who.User == owner {
		return nil
	}
	if !hasPriv(rc.db(), rc.who, "/nodes/"+t.Node, []string{"Sys.Audit"}, false) {
		return errPerm("/nodes/" + t.Node + ", Sys.Audit")
	}
	return nil
}

func (s *Sim) getTaskLog(rc *reqCtx) (any, error) {
	upid := rc.str("upid")
	if _, ok := ParseUPID(upid); !ok {
		return nil, errParams(map[string]string{"upid": "unable to parse worker upid '" + upid + "'"})
	}
	t := s.findTaskLocked(rc.node, upid)
	if t == nil {
		return nil, errParams(map[string]string{"upid": "no such task"})
	}
	if aerr := s.taskAccess(rc, t); aerr != nil {
		return nil, aerr
	}
	start, limit := rc.integer("start", 0), rc.integer("limit", 50)
	out := []map[string]any{}
	for i, l := range t.Log {
		if i < start || len(out) >= limit {
			continue
		}
		out = append(out, map[string]any{"n": i + 1, "t": l})
	}
	if len(t.Log) == 0 && t.Status == "running" {
		out = append(out, map[string]any{"n": 1, "t": "no content"})
	}
	return out, nil
}

func (s *Sim) getTasks(rc *reqCtx) (any, error) {
	n := s.st.Nodes[rc.node]
	source := rc.str("source")
	if source == "" {
		source = "archive"
	}
	canAudit := hasPriv(rc.db(), rc.who, "/nodes/"+rc.node, []string{"Sys.Audit"}, false)
	typeFilter, userFilter := rc.str("typefilter"), rc.str("userfilter")
	onlyErrors := rc.boolean("errors")
	var list []*Task
	for _, t := range n.Tasks {
		if source == "archive" && t.Status == "running" || source == "active" && t.Status != "running" {
			continue
		}
		owner, _, _ := strings.Cut(t.User, "!")
		if !canAudit && owner != rc.who.User {
			continue
		}
		if typeFilter != "" && t.Type != typeFilter || userFilter != "" && !strings.Contains(t.User, userFilter) {
			continue
		}
		if onlyErrors && (t.Status == "running" || t.ExitStatus == "OK" || strings.HasPrefix(t.ExitStatus, "WARNINGS: ")) {
			continue
		}
		if rc.has("vmid") && t.ID != rc.str("vmid") {
			continue
		}
		// pve-manager API2/Tasks.pm node_tasks: since/until bound the
		// start time, both inclusive.
		if rc.has("since") && t.StartTime < int64(rc.integer("since", 0)) || rc.has("until") && t.StartTime > int64(rc.integer("until", 0)) {
			continue
		}
		list = append(list, t)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].StartTime > list[j].StartTime })
	start, limit := rc.integer("start", 0), rc.integer("limit", 50)
	out := []map[string]any{}
	for i, t := range list {
		if i < start || len(out) >= limit {
			continue
		}
		v := map[string]any{"upid": t.UPID, "node": t.Node, "pid": t.PID, "pstart": t.PStart,
			"starttime": t.StartTime, "type": t.Type, "id": t.ID, "user": t.User}
		if t.Status == "stopped" {
			v["endtime"] = t.EndTime
			v["status"] = t.ExitStatus
		}
		out = append(out, v)
	}
	return out, nil
}

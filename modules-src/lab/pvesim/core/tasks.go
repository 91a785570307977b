package core

import (
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/tasks"
)

// Worker tasks: starting a worker, its handle, and the task endpoints;
// the task's model — UPID, how it ends, the views and the list's filters —
// is pvesim/tasks'.

// TaskWorker is the body of a task. It runs without the state lock; it
// takes s.Mu itself to touch state. Logf appends to the task log. It
// returns "" for OK, "WARNINGS: N", or an error text.
type TaskWorker func(t *TaskRun) string

// TaskRun is a worker's handle on its task.
type TaskRun struct {
	s    *Sim
	Task *tasks.Task
	// effects run (under s.Mu) when the worker succeeds; a slow-config
	// fault runs them Delay after the task already reported OK (K4).
	effects []func()
	// node runs the task; lossesAtStart is its power-loss count then.
	node          *Node
	lossesAtStart int
}

// DiedLocked tells (under s.Mu) whether the task's node lost power since
// the task started: its worker died with the node.
func (t *TaskRun) DiedLocked() bool {
	return t != nil && t.node != nil && t.node.powerLosses != t.lossesAtStart
}

func (t *TaskRun) Logf(format string, args ...any) {
	t.s.Mu.Lock()
	t.Task.Logf(format, args...)
	t.s.Mu.Unlock()
}

// Commit registers a state change that becomes visible when the task ends
// successfully.
func (t *TaskRun) Commit(f func()) { t.effects = append(t.effects, f) }

// StartTaskLocked creates a running task on node and starts its worker. The
// caller holds s.Mu. A task-fail fault on the request overrides the result.
func (s *Sim) StartTaskLocked(rc *Req, node, typ, id string, work TaskWorker) string {
	n := s.State.Nodes[node]
	now := time.Now()
	s.State.NextPID++
	pid := s.State.NextPID
	pstart := int(n.BootTime % 100000000)
	user := "root@pam"
	if rc != nil && rc.Who != nil {
		user = rc.Who.taskUser()
	}
	task := tasks.New(node, pid, pstart, now.Unix(), typ, id, user)
	n.Tasks = append(n.Tasks, task)
	s.SaveLocked()
	var fault *Fault
	if rc != nil {
		fault = rc.Fault
	}
	run := &TaskRun{s: s, Task: task, node: n, lossesAtStart: n.powerLosses}
	s.Workers.Add(1)
	go func() {
		defer s.Workers.Done()
		var exit, injected string
		if fault != nil && fault.Kind == FaultTaskFail {
			injected = fault.ExitStatus
		}
		if fault != nil && fault.Kind == FaultTaskFail && !tasks.IsWarnings(fault.ExitStatus) {
			// An injected failure: the worker never gets to change anything.
			run.Logf("simulated failure")
			s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration))
			exit = fault.ExitStatus
		} else {
			exit = work(run) // WARNINGS: N injected — done, with warnings
		}
		s.Mu.Lock()
		died := run.DiedLocked()
		exit = tasks.Result(exit, injected, died)
		ok := tasks.Succeeded(exit)
		delayed := fault != nil && fault.Kind == FaultSlowConfig
		if ok && !delayed {
			for _, f := range run.effects {
				f()
			}
		}
		task.Finish(exit, died, time.Now().Unix())
		s.SaveLocked()
		s.Mu.Unlock()
		if ok && delayed {
			if s.Sleep(fault.Delay) {
				s.Mu.Lock()
				for _, f := range run.effects {
					f()
				}
				s.SaveLocked()
				s.Mu.Unlock()
			}
		}
	}()
	return task.UPID
}

// simpleTask is a worker that just takes the lab's task duration.
func (s *Sim) simpleTask(lines ...string) TaskWorker {
	return func(t *TaskRun) string {
		for _, l := range lines {
			t.Logf("%s", l)
		}
		if !s.Sleep(s.Cfg.Dur(s.Cfg.TaskDuration, DefaultTaskDuration)) {
			return "unexpected status"
		}
		return ""
	}
}

// requestedTask is the task the request's upid names, if the caller may
// read it: Tasks.pm's upid check, its lookup and $check_task_access.
func (s *Sim) requestedTask(rc *Req) (*tasks.Task, error) {
	var list []*tasks.Task
	if n := s.State.Nodes[rc.Node]; n != nil {
		list = n.Tasks
	}
	t, perr := tasks.Find(list, rc.Str("upid"))
	if perr != nil {
		return nil, ErrParams(perr)
	}
	if aerr := s.taskAccess(rc, t); aerr != nil {
		return nil, aerr
	}
	return t, nil
}

func (s *Sim) getTaskStatus(rc *Req) (any, error) {
	t, err := s.requestedTask(rc)
	if err != nil {
		return nil, err
	}
	return t.StatusView(), nil
}

// taskAccess: a user may read own tasks, others need Sys.Audit on the node.
func (s *Sim) taskAccess(rc *Req, t *tasks.Task) *APIError {
	if rc.Who.User == t.Owner() {
		return nil
	}
	if !HasPriv(rc.DB(), rc.Who, "/nodes/"+t.Node, []string{"Sys.Audit"}, false) {
		return ErrPerm("/nodes/" + t.Node + ", Sys.Audit")
	}
	return nil
}

func (s *Sim) getTaskLog(rc *Req) (any, error) {
	t, err := s.requestedTask(rc)
	if err != nil {
		return nil, err
	}
	return t.LogPage(rc.Int("start", 0), rc.Int("limit", 50)), nil
}

// GET /nodes/{node}/tasks (node_tasks).
func (s *Sim) getTasks(rc *Req) (any, error) {
	f := tasks.Filter{
		Source:     rc.Str("source"),
		Auditor:    HasPriv(rc.DB(), rc.Who, "/nodes/"+rc.Node, []string{"Sys.Audit"}, false),
		User:       rc.Who.User,
		TypeFilter: rc.Str("typefilter"),
		UserFilter: rc.Str("userfilter"),
		Errors:     rc.Bool("errors"),
	}
	if rc.Has("vmid") {
		vmid := rc.Str("vmid")
		f.VMID = &vmid
	}
	// pve-manager API2/Tasks.pm node_tasks: since/until bound the start
	// time, both inclusive.
	if rc.Has("since") {
		since := int64(rc.Int("since", 0))
		f.Since = &since
	}
	if rc.Has("until") {
		until := int64(rc.Int("until", 0))
		f.Until = &until
	}
	return tasks.List(s.State.Nodes[rc.Node].Tasks, f, rc.Int("start", 0), rc.Int("limit", 50)), nil
}

// taskRoutes are the task endpoints.
func (s *Sim) taskRoutes() map[string]Handler {
	return map[string]Handler{
		"GET /nodes/{node}/tasks":               s.getTasks,
		"GET /nodes/{node}/tasks/{upid}/status": s.getTaskStatus,
		"GET /nodes/{node}/tasks/{upid}/log":    s.getTaskLog,
	}
}

// LogfLocked appends to the log when the caller already holds s.Mu.
func (t *TaskRun) LogfLocked(format string, args ...any) {
	t.Task.Logf(format, args...)
}

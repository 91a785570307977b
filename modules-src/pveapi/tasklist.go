package pveapi

import (
	"context"
	"net/url"
	"strconv"
	"time"
)

// TaskQuery filters GET /nodes/{node}/tasks (pve-manager
// PVE/API2/Tasks.pm node_tasks). A lost write is settled by looking for
// its task there: typefilter (qmclone, qmcreate, …), vmid, since.
type TaskQuery struct {
	TypeFilter   string    // task type, e.g. "qmclone"
	VMID         int       // 0 = any
	Since        time.Time // only tasks started at or after; zero = any
	Source       string    // "active", "archive", "all" (PVE's default: archive)
	UserFilter   string
	StatusFilter string // e.g. "ok,error"
	Errors       bool   // only failed tasks
	Limit        int    // PVE's default is 50
}

// Params renders the query.
func (q TaskQuery) Params() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("typefilter", q.TypeFilter)
	if q.VMID > 0 {
		v.Set("vmid", strconv.Itoa(q.VMID))
	}
	if !q.Since.IsZero() {
		v.Set("since", strconv.FormatInt(q.Since.Unix(), 10))
	}
	set("source", q.Source)
	set("userfilter", q.UserFilter)
	set("statusfilter", q.StatusFilter)
	if q.Errors {
		v.Set("errors", "1")
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	return v
}

// TaskEntry is one task of a node's list.
type TaskEntry struct {
	UPID      string `json:"upid"`
	Node      string `json:"node"`
	Type      string `json:"type"`
	ID        string `json:"id"` // the VMID for guest tasks
	User      string `json:"user"`
	StartTime int64  `json:"starttime"`
	EndTime   int64  `json:"endtime"`
	Status    string `json:"status"` // the exit status once ended ("OK", "WARNINGS: 1", an error); "" while running
}

// Running tells whether the task has not ended yet.
func (t TaskEntry) Running() bool { return t.EndTime == 0 && t.Status == "" }

// ListTasks reads a node's task list. With Source "" PVE lists finished
// tasks only; settling a write that may still run wants Source "all".
func ListTasks(ctx context.Context, g Getter, node string, q TaskQuery) ([]TaskEntry, error) {
	var out []TaskEntry
	if err := g.Get(ctx, Path("/nodes/%s/tasks", node), q.Params(), &out); err != nil {
		return nil, err
	}
	return out, nil
}

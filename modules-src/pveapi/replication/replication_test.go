package replication

import (
	"strings"
	"testing"
)

func TestParseJobID(t *testing.T) {
	for in, want := range map[string]string{"201-0": "201-0", "201-01": "201-1", "1000-12": "1000-12"} {
		id, err := ParseJobID(in)
		if err != nil || id.String() != want {
			t.Errorf("ParseJobID(%q) = %v %v, want %s", in, id, err, want)
		}
	}
	for in, msg := range map[string]string{"99-0": "guest IDs < 100 are reserved", "201": "invalid replication job id '201'",
		"vm:201-0": "invalid", "201-a": "invalid"} {
		if _, err := ParseJobID(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseJobID(%q) = %v, want %q", in, err, msg)
		}
	}
}

func TestJobsAndRequests(t *testing.T) {
	jobs := []Job{{ID: JobID{201, 0}, Target: "pve02"}, {ID: JobID{201, 2}, Target: "pve03"}, {ID: JobID{202, 0}, Target: "pve01"}}
	if n := NextNum(jobs, 201); n != 1 {
		t.Errorf("next job number %d", n)
	}
	if len(ForGuest(jobs, 201)) != 2 {
		t.Error("ForGuest")
	}
	if j := (Job{}).WithDefaults(); j.Schedule != "*/15" {
		t.Errorf("default schedule %q", j.Schedule)
	}
	c := Create(Job{ID: JobID{201, 1}, Target: "pve03", Rate: 50, Comment: "to pve03"})
	if c.Params.Get("type") != "local" || c.Params.Get("id") != "201-1" || c.Params.Get("rate") != "50" || c.Params.Has("schedule") {
		t.Errorf("%+v", c.Params)
	}
	u := Update(JobID{201, 1}, map[string]string{"schedule": "*/5"}, []string{"rate", "comment"}, "dg")
	if u.Path != "/cluster/replication/201-1" || u.Params.Get("delete") != "comment,rate" {
		t.Errorf("%+v", u)
	}
	for _, v := range []int{8, 9} {
		for _, r := range []interface{ Validate(int) error }{c, u, Delete(JobID{201, 1}, false, false), ScheduleNow("pve01", JobID{201, 1})} {
			if err := r.Validate(v); err != nil {
				t.Errorf("PVE %d: %v", v, err)
			}
		}
	}
	// The target of a job cannot be changed by an update (PVE's PUT has no target).
	if err := Update(JobID{201, 1}, map[string]string{"target": "pve02"}, nil, "").Validate(9); err == nil ||
		!strings.Contains(err.Error(), "parameter 'target'") {
		t.Errorf("target in an update: %v", err)
	}
}

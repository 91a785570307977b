package replication

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const minute = time.Second // a lab minute of 1000 ms

func env(states map[string]*State, online ...string) Env {
	return Env{
		Minute: minute,
		Online: func(n string) bool {
			for _, o := range online {
				if o == n {
					return true
				}
			}
			return false
		},
		State: func(id string) *State { return states[id] },
	}
}

// compute_next_event on the lab's minutes (a lab minute of 1000 ms is a
// virtual minute): a "*/N" fires at the next multiple of N lab minutes,
// every other calendar event at its real next time on the virtual clock;
// none, "0" (Perl's ||) and a schedule that does not parse count as */15.
func TestNextEvent(t *testing.T) {
	for _, c := range []struct {
		schedule string
		last     int64
		want     int64
	}{
		{"*/15", 0, 15000},
		{"*/15", 14999, 15000},
		{"*/15", 15000, 30000},
		{"*/1", 2500, 3000},
		{"*/5", 4000, 5000},
		{"", 0, 15000},
		{"mon 02:00", 0, (4*24*60 + 2*60) * 1000}, // Monday 1970-01-05 02:00 virtual
		{"*/0", 0, 15000},
		{"0", 0, 15000},
		{"every 15 minutes", 0, 15000},
		{"*/7", 56000, 67000},    // 0,7,…,56 in each hour; the crate skips :00 (see calendarevent)
		{"hourly", 59999, 60000}, // one lab hour
		{"2021-02-29", 0, 0},     // never: not scheduled
		{"1970-01-01 00:30", 1, 30000},
	} {
		if got := NextEvent(c.schedule, c.last, minute); got != c.want {
			t.Errorf("NextEvent(%q, %d) = %d, want %d", c.schedule, c.last, got, c.want)
		}
	}
	// "*/N" with N dividing an hour is what the lab computed before the
	// calendar events were real: the first multiple of N lab minutes after
	// the last try, for any lab minute.
	for _, m := range []time.Duration{time.Second, 250 * time.Millisecond, 7 * time.Millisecond, time.Minute} {
		ms := m.Milliseconds()
		for _, n := range []int64{1, 2, 5, 10, 15, 30} {
			for last := int64(0); last < 3*60*ms; last += ms/3 + 1 {
				want := (last/ms + n) / n * n * ms
				if got := NextEvent(fmt.Sprintf("*/%d", n), last, m); got != want {
					t.Fatalf("NextEvent(*/%d, %d) with a %v minute = %d, want %d", n, last, m, got, want)
				}
			}
		}
	}
}

// job_status's next_sync: a new job at the first event, a job marked for
// removal at once (1), after failures the last try plus 5, 10, 15, then
// 30 minutes — and not at all (0) while the target is offline (H5).
func TestNextSyncBackoffAndOfflineTarget(t *testing.T) {
	states := map[string]*State{
		"100-0": {LastTry: 100, LastSync: 100},
		"101-0": {LastTryMilli: 100500, FailCount: 1},
		"102-0": {LastTryMilli: 100500, FailCount: 3},
		"103-0": {LastTryMilli: 100500, FailCount: 7},
		"104-0": {LastTryMilli: 100500, FailCount: 2},
	}
	e := env(states, "pve02")
	for _, c := range []struct {
		j    *Job
		want int64
	}{
		{job("100-0", "target", "pve02", "schedule", "*/15"), 105000},
		{job("101-0", "target", "pve02"), 100500 + 5*1000},
		{job("102-0", "target", "pve02"), 100500 + 15*1000},
		{job("103-0", "target", "pve02"), 100500 + 30*1000},
		{job("104-0", "target", "pve03"), 0},
		{job("104-0", "target", "pve03", "remove_job", "full"), 1},
		{job("105-0", "target", "pve02", "schedule", "*/5"), 5000},
	} {
		if got := e.NextSync(c.j); got != c.want {
			t.Errorf("NextSync(%s %v) = %d, want %d", c.j.ID, c.j.Opts, got, c.want)
		}
	}
}

// get_next_job: the due job with the lowest next_sync, then guest, then
// id; not the disabled, the not yet due, the unscheduled, nor one this run
// did; with --id that one, due or not.
func TestNextJobOrder(t *testing.T) {
	states := map[string]*State{
		"100-0": {LastTryMilli: 1000, FailCount: 1}, // due at 6000
		"101-0": {LastTryMilli: 500, FailCount: 1},  // due at 5500
		"102-0": {LastTryMilli: 500, FailCount: 1},  // due at 5500, guest after 101
		"103-0": {LastTryMilli: 9000},               // */15: due at 15000
		"104-0": {LastTryMilli: 500, FailCount: 1},  // target offline
	}
	e := env(states, "pve02")
	jobs := []*Job{
		job("103-0", "target", "pve02"),
		job("100-0", "target", "pve02"),
		job("102-0", "target", "pve02"),
		job("101-1", "target", "pve02", "disable", "1"),
		job("101-0", "target", "pve02"),
		job("104-0", "target", "pve03"),
	}
	done := map[string]bool{}
	var order []string
	for {
		j := e.NextJob(jobs, 10000, done, "")
		if j == nil {
			break
		}
		done[j.ID] = true
		order = append(order, j.ID)
	}
	if fmt.Sprint(order) != "[101-0 102-0 100-0]" {
		t.Errorf("run order %v, want [101-0 102-0 100-0]", order)
	}
	if j := e.NextJob(jobs, 10000, map[string]bool{}, "103-0"); j == nil || j.ID != "103-0" {
		t.Errorf("--id 103-0 (not due): %v", j)
	}
	removal := job("101-1", "target", "pve02", "disable", "1", "remove_job", "full")
	if j := e.NextJob([]*Job{removal}, 10000, map[string]bool{}, ""); j != removal {
		t.Errorf("a disabled job marked for removal is not removed: %v", j)
	}
}

// $extract_job_status: the config plus the state; pid only while a run's
// process lives; next_sync in seconds.
func TestStatusView(t *testing.T) {
	states := map[string]*State{"100-0": {LastSync: 90, LastTry: 100, LastTryMilli: 100000, FailCount: 1,
		Error: "boom", Duration: 1.5, Running: true}}
	e := env(states, "pve02")
	v := e.StatusView(job("100-0", "target", "pve02"), "qemu")
	want := "map[duration:1.5 error:boom fail_count:1 guest:100 id:100-0 jobnum:0 last_sync:90 last_try:100 next_sync:105 pid:20005 target:pve02 type:local vmtype:qemu]"
	if fmt.Sprint(v) != want {
		t.Errorf("status %v\nwant %s", v, want)
	}
	fresh := e.StatusView(job("101-0", "target", "pve02"), "lxc")
	if fresh["last_sync"] != 0 || fresh["last_try"] != 0 || fresh["fail_count"] != 0 || fresh["next_sync"] != int64(15) ||
		fresh["pid"] != nil || fresh["error"] != nil || fresh["vmtype"] != "lxc" {
		t.Errorf("a job never run: %v", fresh)
	}
}

// record_job_start / record_job_end: a failure counts and keeps last_sync,
// a success clears; a start touches neither fail_count nor error (H5).
func TestRecordRun(t *testing.T) {
	r := &State{}
	t0 := time.Unix(1000, 0)
	r.Begin("100-0", 100, t0)
	if !r.Running || r.LastTry != 1000 || r.LastTryMs() != 1000000 || len(r.Log) != 2 {
		t.Errorf("after Begin: %+v", r)
	}
	r.Failed("100-0", "no target", t0)
	if r.FailCount != 1 || r.Error != "no target" || r.LastSync != 0 || !strings.HasSuffix(r.Log[2], "100-0: end replication job with error: no target") {
		t.Errorf("after Failed: %+v", r)
	}
	t1 := time.Unix(2000, 0)
	r.Begin("100-0", 100, t1)
	if r.FailCount != 1 || r.Error == "" {
		t.Errorf("Begin cleared the failure: %+v", r)
	}
	r.LogSync("100-0", "tank:vm-100-disk-0", t1, t1)
	r.Synced("100-0", t1, t1)
	if r.FailCount != 0 || r.Error != "" || r.LastSync != 2000 || !strings.Contains(r.Log[2], "full sync 'tank:vm-100-disk-0' (__replicate_100-0_2000__)") {
		t.Errorf("after Synced: %+v", r)
	}
	r.LogSync("100-0", "tank:vm-100-disk-0", t1, t1)
	if !strings.Contains(r.Log[len(r.Log)-1], "incremental sync") {
		t.Errorf("second sync: %v", r.Log)
	}
	r.ScheduleNow()
	if r.LastTry != 0 || r.LastTryMs() != 0 {
		t.Errorf("after ScheduleNow: %+v", r)
	}
	r.RemovalFailed("ssh", t1)
	if r.FailCount != 1 || r.Error != "ssh" || r.LastTry != 2000 {
		t.Errorf("after RemovalFailed: %+v", r)
	}
}

func TestMessagesAndLogPage(t *testing.T) {
	if got := PrepareFailed("pve02", "10.0.0.2", "100-0", "--scan tank --force"); got !=
		"command '/usr/bin/ssh -e none -o 'BatchMode=yes' -o 'HostKeyAlias=pve02' root@10.0.0.2 -- pvesr prepare-local-job 100-0 --scan tank --force' failed: exit code 255" {
		t.Errorf("PrepareFailed: %s", got)
	}
	if got := PrepareFailed("pve02", "10.0.0.2", "100-0", ""); !strings.HasSuffix(got, "-- pvesr prepare-local-job 100-0' failed: exit code 255") {
		t.Errorf("PrepareFailed without args: %s", got)
	}
	if got := SkippedWarning("100-0", errors.New("can't lock file 'x' - got timeout")); got != "100-0: got unexpected replication job error - can't lock file 'x' - got timeout" {
		t.Errorf("SkippedWarning: %s", got)
	}
	if got := fmt.Sprint(LogPage([]string{"a", "b", "c"}, 1, 1)); got != "[map[n:2 t:b]]" {
		t.Errorf("LogPage: %s", got)
	}
	scan := ScanArg([]string{"tank:vm-1-disk-0", "bad", "tank:vm-1-disk-1", "ssd:vm-1-disk-0"}, func(v string) (string, bool) {
		st, _, ok := strings.Cut(v, ":")
		return st, ok
	})
	if scan != "tank,ssd" {
		t.Errorf("ScanArg = %q", scan)
	}
}

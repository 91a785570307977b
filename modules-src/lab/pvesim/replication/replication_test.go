package replication

import (
	"fmt"
	"reflect"
	"testing"
)

func job(id string, opts ...string) *Job {
	j := &Job{Type: "local", ID: id, Opts: map[string]string{}}
	for i := 0; i+1 < len(opts); i += 2 {
		j.Opts[opts[i]] = opts[i+1]
	}
	return j
}

// parse_replication_job_id: <guest>-<n>, guests below 100 reserved.
func TestParseID(t *testing.T) {
	for id, want := range map[string]string{
		"100-0":  "100 <nil>",
		"4711-3": "4711 <nil>",
		"99-0":   "0 invalid replication job id '99-0' (guest IDs < 100 are reserved)",
		"100":    "0 invalid replication job id '100'",
		"100-a":  "0 invalid replication job id '100-a'",
		"x100-0": "0 invalid replication job id 'x100-0'",
	} {
		g, err := ParseID(id)
		if got := fmt.Sprint(g, " ", err); got != want {
			t.Errorf("ParseID(%q) = %s, want %s", id, got, want)
		}
	}
	if Guest("bad") != 0 || Guest("123-1") != 123 {
		t.Error("Guest")
	}
}

// H1: one job per guest and target; the id once.
func TestCheckNewH1(t *testing.T) {
	jobs := []*Job{job("100-0", "target", "pve02")}
	for _, c := range []struct {
		id     string
		guest  int
		target string
		want   string
	}{
		{"100-0", 100, "pve03", "replication job '100-0' already exists"},
		{"100-1", 100, "pve02", "replication job for guest '100' to target 'local/pve02' already exists"},
		{"100-1", 100, "pve03", "<nil>"},
		{"101-0", 101, "pve02", "<nil>"},
	} {
		if got := fmt.Sprint(CheckNew(jobs, c.id, c.guest, c.target)); got != c.want {
			t.Errorf("CheckNew(%s → %s) = %s, want %s", c.id, c.target, got, c.want)
		}
	}
}

// The target is fixed, the required options stay, only known options go.
func TestUpdate(t *testing.T) {
	params := func(kv ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1], true
				}
			}
			return "", false
		}
	}
	j := job("100-0", "target", "pve02", "rate", "5", "comment", "x")
	if err := Update(j, params("schedule", "*/5", "disable", "1"), []string{"comment"}); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"target": "pve02", "rate": "5", "schedule": "*/5", "disable": "1"}; !reflect.DeepEqual(j.Opts, want) {
		t.Errorf("after update: %v, want %v", j.Opts, want)
	}
	for _, c := range []struct {
		param func(string) (string, bool)
		del   []string
		want  string
	}{
		{params("target", "pve03"), nil, "can't change value of fixed parameter 'target'"},
		{params(), []string{"target"}, "unable to delete required option 'target'"},
		{params(), []string{"bogus"}, "no such option 'bogus'"},
	} {
		if err := Update(job("100-0", "target", "pve02"), c.param, c.del); fmt.Sprint(err) != c.want {
			t.Errorf("update: %v, want %s", err, c.want)
		}
	}
}

// ReplicationConfig.pm's job list: rate and disable typed, guest and jobnum
// from the id.
func TestView(t *testing.T) {
	v := View(job("102-3", "target", "pve02", "rate", "2.5", "disable", "1", "schedule", "*/5"), "abc")
	want := map[string]any{"id": "102-3", "type": "local", "target": "pve02", "rate": 2.5, "disable": 1,
		"schedule": "*/5", "guest": 102, "jobnum": 3, "digest": "abc"}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("View = %v, want %v", v, want)
	}
}

// A DELETE marks: full, or local with keep.
func TestMarkRemoval(t *testing.T) {
	j := job("100-0")
	MarkRemoval(j, false)
	k := job("100-1")
	MarkRemoval(k, true)
	if j.Opts["remove_job"] != "full" || k.Opts["remove_job"] != "local" {
		t.Errorf("remove_job %q, %q", j.Opts["remove_job"], k.Opts["remove_job"])
	}
}

// switch_replication_job_target_nolock as a migration pve01 → pve02 calls
// it (old target pve02, new pve01): the job to pve02 now targets pve01,
// every job of the guest gets source pve02; other guests stay.
func TestSwitchTarget(t *testing.T) {
	jobs := []*Job{job("100-0", "target", "pve02", "source", "pve01"), job("100-1", "target", "pve03", "source", "pve01"),
		job("101-0", "target", "pve02", "source", "pve01")}
	if !SwitchTarget(jobs, 100, "pve02", "pve01") {
		t.Fatal("nothing switched")
	}
	got := fmt.Sprint(jobs[0].Opts, jobs[1].Opts, jobs[2].Opts)
	want := "map[source:pve02 target:pve01] map[source:pve02 target:pve03] map[source:pve01 target:pve02]"
	if got != want {
		t.Errorf("after switch: %s, want %s", got, want)
	}
	if SwitchTarget(jobs, 102, "pve02", "pve01") {
		t.Error("a guest without jobs switched")
	}
}

// job_status on pve02 after HA recovered guest 100 there from pve01: its
// job to pve02 is switched to target pve01 and runs on pve02; a job to the
// node itself never runs there unless marked for removal; guests elsewhere
// are not pve02's.
func TestOnNodeSwitchesStolenGuests(t *testing.T) {
	jobs := []*Job{
		job("100-0", "target", "pve02", "source", "pve01"),
		job("101-0", "target", "pve02", "source", "pve02"),
		job("102-0", "target", "pve02", "source", "pve02", "remove_job", "full"),
		job("103-0", "target", "pve03", "source", "pve01"),
	}
	where := map[int]string{100: "pve02", 101: "pve02", 102: "pve02", 103: "pve01"}
	out, switched := OnNode(jobs, "pve02", func(g int) (string, bool) { n, ok := where[g]; return n, ok })
	var ids []string
	for _, j := range out {
		ids = append(ids, j.ID)
	}
	if !switched || fmt.Sprint(ids) != "[100-0 102-0]" {
		t.Errorf("OnNode: %v switched %v", ids, switched)
	}
	if jobs[0].Opts["target"] != "pve01" || jobs[0].Opts["source"] != "pve02" {
		t.Errorf("stolen guest's job: %v", jobs[0].Opts)
	}
	if _, switched := OnNode(jobs, "pve02", func(g int) (string, bool) { n, ok := where[g]; return n, ok }); switched {
		t.Error("switched again")
	}
}

func TestIDsOf(t *testing.T) {
	jobs := []*Job{job("100-0"), job("101-0"), job("100-2")}
	if got := IDsOf(jobs, 100); fmt.Sprint(got) != "[100-0 100-2]" {
		t.Errorf("IDsOf = %v", got)
	}
}

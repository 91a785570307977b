package backupsim_test

import (
	"fmt"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// uuidRe is UUID::uuid()'s form, the id create_job gives a job without one.
var uuidRe = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// The backup job endpoints as pve-manager's PVE/API2/Backup.pm answers
// them, on PVE 8 and 9: create_job needs a schedule ($schedule_param_check:
// a 400 naming it), defaults the id to a UUID and enabled to 1, and dies
// inside the jobs.cfg lock on an id in use (cfs_lock re-raises the code's
// own error as is: a 500 with the bare message); read_job and delete_job
// answer an unknown id with a 400 naming `id`; the index and read_job type
// booleans and integers as numbers, as the create schema types them.
func TestBackupJobEndpointsAsBackupPm(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprintf("pve%d", v), func(t *testing.T) {
			t.Parallel()
			s := simtest.Start(t, pvesim.New, simtest.Opts{Version: v, TaskDuration: 30 * time.Millisecond})
			c := simtest.NewClient(t, s, "pve01").LabToken()

			r := c.Call("POST", "/cluster/backup", url.Values{"id": {"b1"}, "storage": {"local"}, "all": {"1"}})
			if r.Status != 400 || r.Errs["schedule"] != "neither 'starttime' nor 'schedule' were set" {
				t.Fatalf("create without a schedule: %d %v", r.Status, r.Body)
			}
			if l := c.Call("GET", "/cluster/backup", nil).Must(t, "index").List(); len(l) != 0 {
				t.Fatalf("a refused create left a job: %v", l)
			}

			c.ExpectNull().Call("POST", "/cluster/backup", url.Values{"id": {"b1"}, "schedule": {"01:00"}, "storage": {"local"},
				"all": {"1"}, "exclude": {"100"}}).Must(t, "create b1")
			c.ExpectNull().Call("POST", "/cluster/backup", url.Values{"schedule": {"sat 02:00"}, "storage": {"local"},
				"vmid": {"101,102"}, "enabled": {"0"}}).Must(t, "create without an id")

			r = c.ExpectNull().Call("POST", "/cluster/backup", url.Values{"id": {"b1"}, "schedule": {"03:00"}, "storage": {"local"}, "all": {"1"}})
			if r.Status != 500 || r.Reason != "Job 'b1' already exists" {
				t.Fatalf("create over an id in use: %d %q %v", r.Status, r.Reason, r.Body)
			}

			jobs := map[string]map[string]any{}
			for _, j := range c.Call("GET", "/cluster/backup", nil).Must(t, "index").List() {
				jobs[j["id"].(string)] = j
			}
			b1 := jobs["b1"]
			if len(jobs) != 2 || b1 == nil || b1["enabled"] != float64(1) || b1["all"] != float64(1) ||
				b1["schedule"] != "01:00" || b1["exclude"] != "100" || b1["type"] != "vzdump" {
				t.Fatalf("index: %v", jobs)
			}
			var other string
			for id, j := range jobs {
				if id != "b1" {
					other = id
					if !uuidRe.MatchString(id) || j["enabled"] != float64(0) || j["vmid"] != "101,102" {
						t.Errorf("the job created without an id: %v", j)
					}
				}
			}

			if got := c.Call("GET", "/cluster/backup/b1", nil).Must(t, "read b1").Obj(); got["schedule"] != "01:00" || got["all"] != float64(1) {
				t.Errorf("read b1: %v", got)
			}
			for _, m := range []string{"GET", "DELETE"} {
				r := c.Call(m, "/cluster/backup/nope", nil)
				if r.Status != 400 || r.Errs["id"] != "No such job 'nope'" {
					t.Errorf("%s of an unknown job: %d %v", m, r.Status, r.Body)
				}
			}

			c.ExpectNull().Call("DELETE", "/cluster/backup/"+other, nil).Must(t, "delete")
			if l := c.Call("GET", "/cluster/backup", nil).Must(t, "index").List(); len(l) != 1 || l[0]["id"] != "b1" {
				t.Fatalf("after the delete: %v", l)
			}
		})
	}
}

// A guest's destroy with purge takes its VMID out of the backup jobs as
// pve-guest-common's remove_vmid_from_backup_jobs does: out of a job's vmid
// list, the job deleted when that list empties; out of an all-guests job's
// exclude list, the option dropped when it empties. A destroy without
// purge leaves the jobs alone.
func TestDestroyPurgeLeavesBackupJobs(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Version: 9, TaskDuration: 30 * time.Millisecond})
	c := simtest.NewClient(t, s, "pve01").LabToken()
	for _, id := range []int{100, 101, 102} {
		simtest.CreateVM(t, c, id, nil)
	}
	for id, p := range map[string]url.Values{
		"two":      {"vmid": {"100,101"}},
		"only100":  {"vmid": {"100"}},
		"excl":     {"all": {"1"}, "exclude": {"100"}},
		"excl2":    {"all": {"1"}, "exclude": {"100,102"}},
		"only102":  {"vmid": {"102"}},
		"untouch":  {"vmid": {"101"}},
		"allguest": {"all": {"1"}},
	} {
		p.Set("id", id)
		p.Set("schedule", "01:00")
		p.Set("storage", "local")
		c.ExpectNull().Call("POST", "/cluster/backup", p).Must(t, "create "+id)
	}
	jobs := func() map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, j := range c.Call("GET", "/cluster/backup", nil).Must(t, "index").List() {
			out[j["id"].(string)] = j
		}
		return out
	}

	// Without purge: every job as it was.
	if st := simtest.MustTask(t, c, "DELETE", "/nodes/pve01/qemu/102", nil); st["exitstatus"] != "OK" {
		t.Fatalf("destroy 102: %v", st)
	}
	if j := jobs(); len(j) != 7 || j["only102"]["vmid"] != "102" || j["excl2"]["exclude"] != "100,102" {
		t.Fatalf("a destroy without purge changed the jobs: %v", j)
	}

	if st := simtest.MustTask(t, c, "DELETE", "/nodes/pve01/qemu/100", url.Values{"purge": {"1"}}); st["exitstatus"] != "OK" {
		t.Fatalf("destroy 100 with purge: %v", st)
	}
	j := jobs()
	if _, ok := j["only100"]; ok {
		t.Errorf("the job whose vmid list held only 100 survived: %v", j["only100"])
	}
	if j["two"]["vmid"] != "101" {
		t.Errorf("two: vmid %v, want 101", j["two"]["vmid"])
	}
	if _, ok := j["excl"]["exclude"]; ok || j["excl"] == nil {
		t.Errorf("excl: the emptied exclude must be dropped, the job kept: %v", j["excl"])
	}
	if j["excl2"]["exclude"] != "102" {
		t.Errorf("excl2: exclude %v, want 102", j["excl2"]["exclude"])
	}
	if j["untouch"]["vmid"] != "101" || j["only102"]["vmid"] != "102" || j["allguest"] == nil {
		t.Errorf("jobs without 100 changed: %v", j)
	}
	if len(j) != 6 {
		t.Errorf("jobs after the purge: %d, want 6: %v", len(j), j)
	}
}

package clustersim_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/clustersim"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/simtest"
)

// C4, C5: a join is two halves (join.go). While the joiner finishes, the
// primary already lists it in corosync.conf and expects its vote (1 of 2:
// not quorate), and the join information fails for want of the joiner's
// certificate; once it finished, the join information carries its pve_fp.
func TestJoinInTwoHalvesC4C5(t *testing.T) {
	t.Parallel()
	s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 2, TaskDuration: 400 * time.Millisecond, RestartWindow: 1500 * time.Millisecond})
	if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
		t.Fatal(err)
	}
	p1 := simtest.NewClient(t, s, "pve01").Root()
	p2 := simtest.NewClient(t, s, "pve02").Root()
	n1, _ := s.Node("pve01")
	upid := p2.Call("POST", "/cluster/config/join", simtest.JoinParams(s, "pve01", n1.Fingerprint)).Must(t, "join").Data.(string)

	simtest.Eventually(t, "pve01 lists pve02 in corosync.conf", func() bool {
		conf, ok, _ := s.ReadPmxcfs("pve01", "corosync.conf")
		return ok && strings.Contains(conf, "name: pve02")
	})
	// in flight: listed, expected, not there
	info, _ := s.Cluster("pve01")
	if len(info.Nodes) != 2 || info.Quorate || info.ExpectedVotes != 2 || info.TotalVotes != 1 {
		t.Errorf("primary during the join: want 1 of 2 votes, not quorate; got %+v", info)
	}
	for _, m := range info.Nodes {
		if m.Name == "pve02" && m.Online {
			t.Errorf("pve02 online before it finished: %+v", m)
		}
	}
	r := p1.Call("GET", "/cluster/config/join", nil)
	if r.Status != 500 || !strings.Contains(r.Reason, "can't open '/etc/pve/nodes/pve02/pve-ssl.pem'") {
		t.Errorf("join info while pve02 finishes: %d %q, want get_node_fingerprint's failure", r.Status, r.Reason)
	}

	simtest.Eventually(t, "pve02 finished", func() bool {
		n, _ := s.Node("pve02")
		if !n.Serving {
			return false
		}
		obs := simtest.NewClient(t, s, "pve02").LabToken()
		obs.Pin = n.Fingerprint
		st := obs.Call("GET", "/nodes/pve02/tasks/"+url.PathEscape(upid)+"/status", nil)
		return st.Status == 200 && st.Obj()["status"] == "stopped"
	})
	simtest.Eventually(t, "2 nodes quorate", func() bool { return simtest.Quorate(p1, 2) })
	ji := p1.Call("GET", "/cluster/config/join", nil).Must(t, "join info after the join").Obj()
	n2, _ := s.Node("pve02")
	found := false
	for _, e := range ji["nodelist"].([]any) {
		e := e.(map[string]any)
		if e["name"] == "pve02" {
			found = true
			if e["pve_fp"] != n2.Fingerprint {
				t.Errorf("pve02's pve_fp %v, want its new certificate's %s", e["pve_fp"], n2.Fingerprint)
			}
		}
	}
	if !found {
		t.Errorf("join info lacks pve02: %v", ji["nodelist"])
	}
}

// The finish-join fault: the member's half done, the joiner's failed. The
// primary lists the joiner, which never comes: with three members listed and
// two up the cluster stays quorate (2 of 3), the join information fails, and
// the joiner's task ends with finish_join's error after "Join request OK".
func TestFinishJoinFaultLeavesHalfJoinC4(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"api", "control"} {
		t.Run(via, func(t *testing.T) {
			s := simtest.Start(t, pvesim.New, simtest.Opts{Nodes: 3, TaskDuration: 200 * time.Millisecond, RestartWindow: 300 * time.Millisecond})
			if _, err := s.CreateCluster("pve01", "lab", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := s.AddNode("pve01", "pve02", "", false); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Faults().Add(pvesim.Fault{Kind: pvesim.FaultFinishJoin, Node: "pve03"}); err != nil {
				t.Fatal(err)
			}
			if via == "api" {
				p3 := simtest.NewClient(t, s, "pve03").Root()
				n1, _ := s.Node("pve01")
				upid := p3.Call("POST", "/cluster/config/join", simtest.JoinParams(s, "pve01", n1.Fingerprint)).Must(t, "join").Data.(string)
				// the joiner's tickets died with its own /etc/pve: the lab token
				obs := simtest.NewClient(t, s, "pve03").LabToken()
				st := simtest.WaitTask(t, obs, upid)
				log := fmt.Sprint(obs.Call("GET", "/nodes/pve03/tasks/"+url.PathEscape(upid)+"/log", nil).Data)
				if st["exitstatus"] != clustersim.DefaultFinishJoinError || !strings.Contains(log, "Join request OK, finishing setup locally") {
					t.Errorf("half-done join task: %v\n%s", st["exitstatus"], log)
				}
			} else {
				if _, err := s.AddNodeEntry("pve01", "pve03", "", false); err != nil {
					t.Fatal(err)
				}
				if _, err := s.FinishJoin("pve03", nil); err == nil || err.Error() != clustersim.DefaultFinishJoinError {
					t.Errorf("finish join: %v", err)
				}
			}
			info, _ := s.Cluster("pve01")
			if len(info.Nodes) != 3 || !info.Quorate || info.TotalVotes != 2 {
				t.Errorf("primary after the half join: want 3 listed, 2 votes, quorate; got %+v", info)
			}
			// Each node's pmxcfs reports its own corosync's quorum (pve-cluster
			// quorum.c): the half-joined node, whose corosync does not run
			// with the cluster, says not quorate and itself offline, in
			// .members and /cluster/status alike; the members say quorate.
			if m := string(s.GeneratedPmxcfsFile("pve03", ".members")); !strings.Contains(m, `"quorate": 0`) || !strings.Contains(m, `"pve03": { "id": 3, "online": 0`) {
				t.Errorf("the half-joined node's .members:\n%s", m)
			}
			if m := string(s.GeneratedPmxcfsFile("pve01", ".members")); !strings.Contains(m, `"nodes": 3, "quorate": 1`) {
				t.Errorf("the primary's .members after the half join:\n%s", m)
			}
			p1 := simtest.NewClient(t, s, "pve01").Root()
			if r := p1.Call("GET", "/cluster/config/join", nil); r.Status != 500 || !strings.Contains(r.Reason, "pve03/pve-ssl.pem") {
				t.Errorf("join info after a half join: %d %q", r.Status, r.Reason)
			}
			// pvecm expected 1 style repair is possible: delnode on a quorate member
			p1.Call("DELETE", "/cluster/config/nodes/pve03", nil).Must(t, "delnode of the half-joined node")
			if r := p1.Call("GET", "/cluster/config/join", nil); r.Status != 200 {
				t.Errorf("join info once the half-joined node is removed: %d %q", r.Status, r.Reason)
			}
		})
	}
}

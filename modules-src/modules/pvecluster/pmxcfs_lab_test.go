package pvecluster

// Issue 24 §3 on a real lab (FUSE /etc/pve, real sshd, the lab's pvesh):
//
//   - the lab's /etc/pve/.members has pmxcfs's shape (pve-cluster
//     src/pmxcfs/status.c cfs_create_memberlist_msg, served by pmxcfs.c
//     create_dot_members_cb): {nodename, version} on a standalone node;
//     with a cluster also cluster {name, version, nodes, quorate} and
//     nodelist {NAME: {id, online, ip}}; it follows membership, power and
//     quorum, and says what GET /cluster/status says on that node
//     (pve-manager PVE/API2/Cluster.pm status projects the same record);
//   - the converged cluster task, on the primary and on a member, starts no
//     PVE tool on any node and makes no API request;
//   - C6 (corosync.conf naming another cluster, the running membership
//     still the right one) and C10 (a member that lost quorum: its
//     .members says quorate 0) are not reported ok, nothing changed.
//
// Not version-relevant (pmxcfs's files are the same in PVE 8 and 9): one
// PVE 9 lab; the playbook test counts the converged cluster phase on both.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
)

// strictMembers is .members with every field pmxcfs writes, and no other.
type strictMembers struct {
	Nodename *string `json:"nodename"`
	Version  *int    `json:"version"`
	Cluster  *struct {
		Name    *string `json:"name"`
		Version *int    `json:"version"`
		Nodes   *int    `json:"nodes"`
		Quorate *int    `json:"quorate"`
	} `json:"cluster"`
	Nodelist map[string]struct {
		ID     *int    `json:"id"`
		Online *int    `json:"online"`
		IP     *string `json:"ip"`
	} `json:"nodelist"`
}

func readMembers(t *testing.T, lab *labctl.Lab, node string) (string, strictMembers) {
	t.Helper()
	out, err := lab.SSH(node, "cat /etc/pve/.members")
	if err != nil {
		t.Fatalf("%s: cat /etc/pve/.members: %v %s", node, err, out)
	}
	var m strictMembers
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s: .members is not pmxcfs's shape: %v\n%s", node, err, out)
	}
	if m.Nodename == nil || *m.Nodename != node || m.Version == nil {
		t.Errorf("%s: .members nodename/version: %s", node, out)
	}
	// cfs_create_memberlist_msg's layout: "{\n", "\"nodename\": …,\n", …
	if !strings.HasPrefix(out, "{\n\"nodename\": \""+node+"\",\n\"version\": ") || !strings.HasSuffix(out, "}\n") {
		t.Errorf("%s: .members layout differs from pmxcfs's printf:\n%q", node, out)
	}
	return out, m
}

// checkMembers checks a clustered node's .members: cluster lab at the
// running config_version, the given members online or not, each with its
// address, and the same as the node's own /cluster/status.
func checkMembers(t *testing.T, lab *labctl.Lab, node string, quorate bool, online map[string]bool) {
	t.Helper()
	raw, m := readMembers(t, lab, node)
	cc, _ := lab.SSH(node, "cat /etc/pve/corosync.conf")
	conf, err := parseCorosyncConf(cc)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Cluster
	if c == nil || c.Name == nil || *c.Name != "lab" || c.Version == nil || *c.Version != conf.ConfigVersion || c.Nodes == nil || *c.Nodes != len(online) ||
		c.Quorate == nil || (*c.Quorate == 1) != quorate {
		t.Errorf("%s: .members cluster, want lab at config_version %d, %d nodes, quorate %v:\n%s", node, conf.ConfigVersion, len(online), quorate, raw)
	}
	if got := slices.Sorted(maps.Keys(m.Nodelist)); !slices.Equal(got, slices.Sorted(maps.Keys(online))) {
		t.Errorf("%s: .members nodelist %v, want %v", node, got, slices.Sorted(maps.Keys(online)))
	}
	for _, n := range lab.Nodes() {
		e, ok := m.Nodelist[n.Name]
		if !ok {
			continue
		}
		if e.ID == nil || e.Online == nil || (*e.Online == 1) != online[n.Name] || e.IP == nil || *e.IP != n.Addr {
			t.Errorf("%s: .members entry of %s, want online %v at %s:\n%s", node, n.Name, online[n.Name], n.Addr, raw)
		}
	}
	st, err := lab.SSH(node, "pvesh get /cluster/status --output-format json")
	if err != nil {
		t.Fatalf("%s: %v", node, err)
	}
	api, err := parseStatus(json.RawMessage(st))
	mv, _, merr := parseMembers([]byte(raw))
	if err != nil || merr != nil || api.self != mv.self || api.cluster.String() != mv.cluster.String() || fmt.Sprint(api.cluster.Members) != fmt.Sprint(mv.cluster.Members) {
		t.Errorf("%s: .members and /cluster/status disagree (%v %v):\n%v\n%v", node, err, merr, mv.cluster, api.cluster)
	}
}

// toolRuns is every PVE tool stand-in started on the nodes since the last
// call (their command logs, emptied), and the API requests meanwhile.
func toolRuns(t *testing.T, lab *labctl.Lab) (tools []string, requests []string) {
	t.Helper()
	for _, n := range lab.Nodes() {
		out, err := lab.SSH(n.Name, "cat /var/lib/gopve-lab/commands.log 2>/dev/null; : > /var/lib/gopve-lab/commands.log")
		if err != nil {
			t.Fatalf("%s: commands.log: %v", n.Name, err)
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if l != "" {
				tools = append(tools, n.Name+": "+l)
			}
		}
	}
	for _, r := range lab.Sim().Requests() {
		requests = append(requests, r.Node+": "+r.Method+" "+r.Path)
	}
	lab.Sim().ResetRequests()
	return tools, requests
}

func TestLabConvergedFromPmxcfs(t *testing.T) {
	t.Parallel()
	lab, _ := labtest.Start(t, 9, 3)
	nodes := lab.Nodes()
	labtest.FormClusterOf(t, lab, 2) // pve01 (created) and pve02; pve03 standalone
	both := map[string]bool{"pve01": true, "pve02": true}
	asPrimary := map[string]any{"cluster_name": "lab", "primary": "pve01", "prepare": []any{}, "wait_timeout": 3,
		"nodes": []any{map[string]any{"name": "pve01", "address": nodes[0].Addr}, map[string]any{"name": "pve02", "address": nodes[1].Addr}}}
	// pve01 as a member: pve02 is the primary it would have joined.
	asMember := maps.Clone(asPrimary)
	asMember["primary"] = "pve02"
	asMember["nodes"] = []any{asPrimary["nodes"].([]any)[1], asPrimary["nodes"].([]any)[0]}
	run := func(t *testing.T, args map[string]any) map[string]any {
		t.Helper()
		return labtest.Invoke(t, lab, labtest.NodeBinary, "pve_cluster", args, false)
	}

	t.Run("members-shape", func(t *testing.T) {
		for _, n := range []string{"pve01", "pve02"} {
			checkMembers(t, lab, n, true, both)
		}
		raw, m := readMembers(t, lab, "pve03")
		if m.Cluster != nil || m.Nodelist != nil || strings.Count(raw, "\n") != 4 {
			t.Errorf("standalone pve03: want only nodename and version:\n%s", raw)
		}
	})

	t.Run("converged-no-op", func(t *testing.T) {
		for _, c := range []struct {
			what string
			args map[string]any
		}{{"primary", asPrimary}, {"member", asMember}} {
			toolRuns(t, lab)
			res := run(t, c.args)
			tools, reqs := toolRuns(t, lab)
			t.Logf("converged cluster task on pve01 as %s: %d PVE tool processes %v, %d API requests %v, membership read from %v",
				c.what, len(tools), tools, len(reqs), reqs, res["membership_read"])
			if res["failed"] == true || res["changed"] != false {
				t.Fatalf("%s: %v %v", c.what, res["msg"], res["changes"])
			}
			if cl := clusterOf(res); cl == nil || !cl.Quorate || memberNames(cl) != "lab:pve01,pve02" {
				t.Errorf("%s: cluster %v", c.what, cl)
			}
			if len(tools) != 0 || len(reqs) != 0 || res["membership_read"] != membersFile {
				t.Errorf("%s: the converged task ran PVE tools %v and sent API requests %v (read from %v), want none", c.what, tools, reqs, res["membership_read"])
			}
		}
	})

	t.Run("C6-corosync.conf-names-another-cluster", func(t *testing.T) {
		orig, _ := lab.SSH("pve01", "cat /etc/pve/corosync.conf")
		// an older config_version: corosync keeps running cluster lab
		// (dcdb_sync_corosync_conf refuses it), .members still says lab
		if out, err := lab.SSH("pve01", `sed 's/cluster_name: lab/cluster_name: other/; s/config_version: .*/config_version: 1/' /etc/pve/corosync.conf > /tmp/cc && cat /tmp/cc > /etc/pve/corosync.conf`); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		checkMembersName(t, lab, "pve01", "lab")
		var res map[string]any
		labtest.NoWrites(t, lab, "C6", func() { res = run(t, asMember) })
		if res["failed"] != true || res["changed"] != false || !strings.Contains(fmt.Sprint(res["msg"]), `different cluster, "other", by its /etc/pve/corosync.conf`) {
			t.Errorf("C6: want a failure naming cluster other, nothing changed: %v %v", res["changed"], res["msg"])
		}
		if _, err := lab.Run(t.Context(), "pve01", "cat > /etc/pve/corosync.conf", bytes.NewReader([]byte(orig))); err != nil {
			t.Fatal(err)
		}
		if res := run(t, asMember); res["failed"] == true || res["membership_read"] != membersFile {
			t.Errorf("corosync.conf restored: %v read %v", res["msg"], res["membership_read"])
		}
	})

	t.Run("C10-member-without-quorum", func(t *testing.T) {
		labtest.PowerOff(t, lab, "pve02")
		checkMembers(t, lab, "pve01", false, map[string]bool{"pve01": true, "pve02": false})
		var res map[string]any
		labtest.NoWrites(t, lab, "C10", func() { res = run(t, asPrimary) })
		if res["failed"] != true || res["changed"] != false || !strings.Contains(fmt.Sprint(res["msg"]), "C10") || res["membership_read"] != "api" {
			t.Errorf("C10: want a failure naming the lost quorum, nothing changed: %v %v read %v", res["changed"], res["msg"], res["membership_read"])
		}
		labtest.PowerOn(t, lab, "pve02")
		checkMembers(t, lab, "pve01", true, both)
		if res := run(t, asMember); res["failed"] == true || res["membership_read"] != membersFile {
			t.Errorf("quorum back: %v read %v", res["msg"], res["membership_read"])
		}
	})
}

func checkMembersName(t *testing.T, lab *labctl.Lab, node, name string) {
	t.Helper()
	raw, m := readMembers(t, lab, node)
	if m.Cluster == nil || m.Cluster.Name == nil || *m.Cluster.Name != name {
		t.Errorf("%s: .members should still name cluster %s:\n%s", node, name, raw)
	}
}

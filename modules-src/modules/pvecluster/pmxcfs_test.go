package pvecluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mirrorPmxcfs copies what the simulator's pmxcfs shows node (.members,
// corosync.conf) into its root, as the lab's /etc/pve mount serves them.
func (l *lab) mirrorPmxcfs(node string) {
	l.t.Helper()
	dir := l.roots[node].Path("/etc/pve")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		l.t.Fatal(err)
	}
	l.writePmxcfs(node, ".members", string(l.sim.GeneratedPmxcfsFile(node, ".members")))
	conf, _, err := l.sim.ReadPmxcfs(node, "corosync.conf")
	if err != nil {
		l.t.Fatal(err)
	}
	l.writePmxcfs(node, "corosync.conf", conf)
}

func (l *lab) writePmxcfs(node, name, content string) {
	l.t.Helper()
	if err := os.WriteFile(filepath.Join(l.roots[node].Path("/etc/pve"), name), []byte(content), 0o640); err != nil {
		l.t.Fatal(err)
	}
}

// sshRun counts the module's remote reads (ssh … pvesh) in the runner's log.
func (l *lab) sshRuns() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.cmds {
		if strings.Contains(c, ": ssh ") {
			n++
		}
	}
	return n
}

// Issue 24 §3: a converged member proves membership and quorum from
// pmxcfs's files, with no API request and no remote read; every case the
// files do not prove goes the old way (the API, the primary over SSH), and
// none of C6, C8, C10 is reported ok.
func TestConvergedFromPmxcfs(t *testing.T) {
	t.Parallel()
	for _, v := range []int{8, 9} {
		t.Run(fmt.Sprint("pve", v), func(t *testing.T) {
			l := newLab(t, v, 3)
			l.role(false, nil)
			for _, n := range l.sim.NodeNames() {
				l.mirrorPmxcfs(n)
			}
			form := l.args(map[string]any{"prepare": []any{}})
			noop := func(node, what string) map[string]any {
				t.Helper()
				l.sim.ResetRequests()
				ssh := l.sshRuns()
				res := l.run(node, form, false)
				if failed(res) || res["changed"] != false || res["membership_read"] != membersFile {
					t.Fatalf("%s on %s: %v %v read %v", what, node, res["msg"], res["changes"], res["membership_read"])
				}
				if c := clusterOf(res); c == nil || !c.Quorate || len(c.Members) != 3 || c.Members[0].Address == "" {
					t.Errorf("%s on %s: cluster %v", what, node, c)
				}
				if r := l.sim.Requests(); len(r) != 0 || l.sshRuns() != ssh {
					t.Errorf("%s on %s: %d API requests (%+v), %d remote reads, want none", what, node, len(r), r, l.sshRuns()-ssh)
				}
				return res
			}
			noop("pve01", "the primary")
			noop("pve02", "a member")
			// the role's key pair task (form: false) alike
			l.sim.ResetRequests()
			if res := l.run("pve03", l.args(map[string]any{"prepare": []any{"ssh_key"}, "form": false}), false); failed(res) || res["membership_read"] != membersFile || len(l.sim.Requests()) != 0 {
				t.Errorf("key pair task: %v read %v, %d requests", res["msg"], res["membership_read"], len(l.sim.Requests()))
			}

			orig := string(l.sim.GeneratedPmxcfsFile("pve02", ".members"))
			conf, _, _ := l.sim.ReadPmxcfs("pve02", "corosync.conf")
			slow := func(what, members, cc string) map[string]any {
				t.Helper()
				l.writePmxcfs("pve02", ".members", members)
				l.writePmxcfs("pve02", "corosync.conf", cc)
				defer l.mirrorPmxcfs("pve02")
				ssh := l.sshRuns()
				res := l.run("pve02", form, false)
				if res["membership_read"] != "api" {
					t.Errorf("%s: membership read from %v, want the API", what, res["membership_read"])
				}
				if !failed(res) && l.sshRuns() == ssh {
					t.Errorf("%s: ok without reading the primary", what)
				}
				return res
			}
			// Not proven, so read as before (and ok, since the API and
			// the primary say so): the primary published another address
			// (C6: is the node at nodes' address the member called pve01?);
			// corosync.conf at another config_version than corosync runs.
			elsewhere := strings.Replace(orig, `"ip": "`+l.nodeAddr("pve01")+`"`, `"ip": "192.0.2.99"`, 1)
			if res := slow("primary at another address", elsewhere, conf); failed(res) {
				t.Errorf("primary at another address: %v", res["msg"])
			}
			newer := strings.Replace(conf, "config_version: ", "config_version: 1", 1)
			if res := slow("corosync.conf not applied", orig, newer); failed(res) {
				t.Errorf("corosync.conf not applied: %v", res["msg"])
			}
			if res := slow("corosync.conf this reader cannot follow", orig, conf+"}\n"); failed(res) {
				t.Errorf("unbalanced corosync.conf: %v", res["msg"])
			}
			// C10, a stale .members on a node cut off: corosync says not
			// quorate, the others' online flags are what pmxcfs last saw.
			// The API (the same record on PVE) says the same here: the task
			// waits for quorum and fails, nothing changed.
			for _, n := range []string{"pve01", "pve03"} {
				if err := l.sim.SetOnline(n, false); err != nil {
					t.Fatal(err)
				}
			}
			stale := strings.Replace(orig, `"quorate": 1`, `"quorate": 0`, 1)
			res := slow("C10 stale .members, not quorate", stale, conf)
			if !failed(res) || res["changed"] != false || !strings.Contains(fmt.Sprint(res["msg"]), "C10") {
				t.Errorf("C10: want a failure naming the lost quorum, nothing changed: %v %v", res["changed"], res["msg"])
			}
			for _, n := range []string{"pve01", "pve03"} {
				if err := l.sim.SetOnline(n, true); err != nil {
					t.Fatal(err)
				}
			}
			// C6: corosync.conf names another cluster; the running
			// membership still says lab. Refused, nothing changed.
			other := strings.Replace(conf, "cluster_name: lab", "cluster_name: other", 1)
			res = slow("C6 corosync.conf names another cluster", orig, other)
			if !failed(res) || res["changed"] != false || !strings.Contains(fmt.Sprint(res["msg"]), `different cluster, "other", by its /etc/pve/corosync.conf`) {
				t.Errorf("C6: want a failure naming cluster other: %v %v", res["changed"], res["msg"])
			}
			// C8: .members names another node: not proven; the API says
			// the same and fails.
			renamed := strings.Replace(orig, `"nodename": "pve02"`, `"nodename": "pve09"`, 1)
			if res := l.run("pve02", form, false); failed(res) {
				t.Fatalf("restored: %v", res["msg"])
			}
			l.writePmxcfs("pve02", ".members", renamed)
			if res := l.run("pve02", form, false); res["membership_read"] != "api" {
				t.Errorf("C8: .members of another node taken as proof")
			}
		})
	}
}

func (l *lab) nodeAddr(name string) string {
	info, _ := l.sim.Node(name)
	return info.Addr
}

func TestParseMembersShapes(t *testing.T) {
	// pve-cluster status.c cfs_create_memberlist_msg, both branches.
	v, _, err := parseMembers([]byte("{\n\"nodename\": \"pve\",\n\"version\": 0\n}\n"))
	if err != nil || v.self != "pve" || v.cluster != nil {
		t.Errorf("standalone: %+v %v", v, err)
	}
	raw := "{\n\"nodename\": \"b\",\n\"version\": 7,\n\"cluster\": { \"name\": \"lab\", \"version\": 3, \"nodes\": 2, \"quorate\": 1 },\n\"nodelist\": {\n  \"b\": { \"id\": 2, \"online\": 1, \"ip\": \"10.0.0.2\"},\n  \"a\": { \"id\": 1, \"online\": 0}\n  }\n}\n"
	v, ver, err := parseMembers([]byte(raw))
	if err != nil || ver != 3 || v.self != "b" || v.cluster == nil || v.cluster.String() != `cluster "lab", quorate, members: a (offline), b` || v.cluster.Members[1].Address != "10.0.0.2" {
		t.Errorf("cluster: %+v %v %v", v, ver, err)
	}
	if _, _, err := parseMembers([]byte(`{"nodename": "x"}`)); err == nil {
		t.Errorf("no version accepted")
	}
	cc, err := parseCorosyncConf("logging {\n  debug: off\n}\n\nnodelist {\n  node {\n    name: a\n    nodeid: 1\n  }\n  node {\n    name: b\n  }\n}\n\nquorum {\n  provider: corosync_votequorum\n}\n\ntotem {\n  cluster_name: lab\n  config_version: 3\n  interface {\n    linknumber: 0\n  }\n}\n")
	if err != nil || cc.ClusterName != "lab" || cc.ConfigVersion != 3 || strings.Join(cc.Nodes, ",") != "a,b" {
		t.Errorf("corosync.conf: %+v %v", cc, err)
	}
}

package pvecm

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
	"github.com/gopve/proxmox/modules-src/lab/tools/control"
	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
)

// fixed is a Cluster that always answers the same cluster (or none).
type fixed struct{ cl *control.Cluster }

func (f fixed) ClusterOf(context.Context, string) (*control.Cluster, error) {
	if f.cl == nil {
		return nil, &control.Error{Status: 404, Message: "standalone"}
	}
	return f.cl, nil
}
func (f fixed) CreateCluster(context.Context, string, string, string) (*control.Cluster, error) {
	return f.cl, nil
}
func (f fixed) AddNodeEntry(context.Context, string, string, string, bool) (*control.Cluster, error) {
	return f.cl, nil
}
func (f fixed) FinishJoin(context.Context, string) ([]string, string, error)       { return nil, "", nil }
func (f fixed) SetExpected(context.Context, string, int) (*control.Cluster, error) { return f.cl, nil }

func seedCluster(online ...bool) *control.Cluster {
	cl := &control.Cluster{Name: "kentrowlab", ConfigVersion: 5, Transport: "knet", SecureAuth: true, RingID: "1.4b", ExpectedVotes: 3}
	for i, name := range []string{"pve01", "pve02", "pve03"} {
		cl.Nodes = append(cl.Nodes, control.Member{Name: name, NodeID: i + 1, Votes: 1, Ring0Addr: "192.168.3.1" + string(rune('1'+i)), Online: online[i]})
	}
	return cl
}

func run(t *testing.T, cl *control.Cluster, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	tool := &Tool{Env: &cli.Env{Args: args, Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }},
		Node: &nodecfg.Node{Node: "pve01"}, Cluster: fixed{cl},
		Now: func() time.Time { return time.Date(2026, 8, 22, 17, 29, 29, 0, time.UTC) }}
	code := tool.Run()
	return out.String(), errb.String(), code
}

// The seed's final `pvecm status`, byte for byte.
const seedStatus = `Cluster information
-------------------
Name:             kentrowlab
Config Version:   5
Transport:        knet
Secure auth:      on

Quorum information
------------------
Date:             Sat Aug 22 17:29:29 2026
Quorum provider:  corosync_votequorum
Nodes:            3
Node ID:          0x00000001
Ring ID:          1.4b
Quorate:          Yes

Votequorum information
----------------------
Expected votes:   3
Highest expected: 3
Total votes:      3
Quorum:           2
Flags:            Quorate

Membership information
----------------------
    Nodeid      Votes Name
0x00000001          1 192.168.3.11 (local)
0x00000002          1 192.168.3.12
0x00000003          1 192.168.3.13
`

func TestStatusMatchesSeed(t *testing.T) {
	out, _, code := run(t, seedCluster(true, true, true), "status")
	if code != 0 || out != seedStatus {
		t.Fatalf("exit %d, output:\n%s\nwant:\n%s", code, out, seedStatus)
	}
}

// C10: 2 of 3 online stays quorate; 1 of 3 blocks activity.
func TestStatusQuorumC10(t *testing.T) {
	for _, tc := range []struct {
		name   string
		online []bool
		lines  []string
	}{
		{"two of three", []bool{true, true, false}, []string{"Nodes:            2\n", "Quorate:          Yes\n", "Total votes:      2\n", "Flags:            Quorate\n"}},
		{"one of three", []bool{true, false, false}, []string{"Nodes:            1\n", "Quorate:          No\n", "Quorum:           2 Activity blocked\n"}},
	} {
		out, _, _ := run(t, seedCluster(tc.online...), "status")
		for _, l := range tc.lines {
			if !bytes.Contains([]byte(out), []byte(l)) {
				t.Errorf("%s: missing %q in\n%s", tc.name, l, out)
			}
		}
	}
}

func TestStandalone(t *testing.T) {
	for _, cmd := range []string{"status", "nodes"} {
		_, errs, code := run(t, nil, cmd)
		if code != 2 || errs != notClustered+"\n" {
			t.Errorf("%s on a standalone node: exit %d, stderr %q", cmd, code, errs)
		}
	}
}

func TestAddRefusedWhenClustered(t *testing.T) {
	_, errs, code := run(t, seedCluster(true, true, true), "add", "10.0.0.1", "--use_ssh")
	if code != 255 || !bytes.Contains([]byte(errs), []byte("Check if node may join a cluster failed!")) {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

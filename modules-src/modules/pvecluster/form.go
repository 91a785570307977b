package pvecluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// planCluster is stage 6: create on the primary, join elsewhere.
func (m *mod) planCluster(ctx context.Context, w *ansible.World) ([]ansible.Change, error) {
	cur, err := clusterFact.Get(ctx, w, func(context.Context) (*Cluster, error) { return m.start, nil })
	if err != nil {
		return nil, err
	}
	me := m.c.self.Name
	if cur != nil {
		if cur.member(me) == nil {
			return nil, fmt.Errorf("%s has the configuration of cluster %q but is not in its membership (%s); fix the cluster by hand (pvecm status), nothing was changed", me, cur.Name, strings.Join(cur.names(), ", "))
		}
		if !cur.Quorate {
			m.r.Warn(fmt.Sprintf("%s is a member of cluster %q, which has no quorum now: %s (C10)", me, cur.Name, cur))
		}
		return nil, nil
	}
	if m.c.isPrimary() {
		return m.planCreate()
	}
	return m.planJoin(ctx)
}

func (m *mod) links() []string {
	args := []string{"--link0", m.c.link0}
	if m.p.Link1 != "" {
		args = append(args, "--link1", m.p.Link1)
	}
	return args
}

func (m *mod) planCreate() ([]ansible.Change, error) {
	me := m.c.self
	predicted := &Cluster{Name: m.p.ClusterName, Quorate: true, ExpectedVotes: 1, TotalVotes: 1,
		Members: []Member{{Name: me.Name, NodeID: 1, Address: me.Address, Online: true}}}
	if m.r.CheckMode() {
		m.final = predicted
	}
	return []ansible.Change{{
		ID:      "cluster:create",
		Summary: fmt.Sprintf("create cluster %s on %s (link0 %s)", m.p.ClusterName, me.Name, m.c.link0),
		Apply: func(ctx context.Context) error {
			res, err := m.env.Runner.Run(ctx, host.Command{Name: "pvecm", Args: append([]string{"create", m.p.ClusterName}, m.links()...)})
			m.evidence = append(m.evidence, outputOf(res)...)
			if err != nil {
				if v, rerr := m.readSelf(ctx); rerr == nil && v.cluster == nil {
					return ansible.NothingChanged(fmt.Errorf("pvecm create failed and %s is still standalone: %w", me.Name, err))
				}
				return err
			}
			return nil
		},
		Verify:  func(ctx context.Context) error { return m.waitMember(ctx, false) },
		Predict: func(w *ansible.World) { clusterFact.Predict(w, predicted) },
	}}, nil
}

// outputOf keeps a command's output as evidence, line by line.
func outputOf(res host.Result) []string {
	var out []string
	for _, s := range []string{res.Stdout, res.Stderr} {
		for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// waitMember waits until this node (and, for a join, the primary) sees a
// quorate cluster with this node online. The final view is the result.
func (m *mod) waitMember(ctx context.Context, join bool) error {
	me := m.c.self.Name
	what := fmt.Sprintf("%s an online member of a quorate cluster %q", me, m.p.ClusterName)
	err := m.wait(ctx, what+" as seen by "+me, func(ctx context.Context) (bool, string, error) {
		v, err := m.readSelf(ctx)
		if err != nil {
			return false, "", err // the API restarts during a join (C5)
		}
		m.final = v.cluster
		if v.cluster != nil && v.cluster.Name != m.p.ClusterName {
			return false, "", fmt.Errorf("%s is now in cluster %q", me, v.cluster.Name)
		}
		return v.cluster.holds(me), v.cluster.String(), nil
	})
	if err != nil || !join {
		return err
	}
	return m.wait(ctx, what+" as seen by the primary "+m.c.primary.Name, func(ctx context.Context) (bool, string, error) {
		v, err := m.readPrimary(ctx)
		if err != nil {
			return false, "", err
		}
		if v.cluster == nil || v.cluster.Name != m.p.ClusterName {
			return false, v.cluster.String(), nil
		}
		return v.cluster.holds(me), v.cluster.String(), nil
	})
}

// readPrimary reads the primary's own view: over SSH with the ssh
// method, over its API with the api method.
func (m *mod) readPrimary(ctx context.Context) (view, error) {
	if m.p.JoinMethod == "ssh" {
		return readOverSSH(ctx, m.env.Runner, m.c.primary.Address, m.knownLine(m.c.primary.Address))
	}
	c, err := m.primaryClient()
	if err != nil {
		return view{}, err
	}
	return readLocal(ctx, c)
}

func (m *mod) conn(addr, fingerprint, password string) pveapi.Connection {
	return pveapi.Connection{Host: addr, Port: m.p.APIPort, User: "root@pam", Password: password,
		ValidateCerts: m.p.ValidateCerts, CAPath: m.p.CAPath, Fingerprint: fingerprint, Timeout: 30}
}

func (m *mod) primaryPassword() string {
	if m.p.PrimaryPassword != "" {
		return m.p.PrimaryPassword
	}
	return m.p.APIPassword
}

func (m *mod) primaryClient() (*pveapi.Client, error) {
	c, err := m.env.Connect(m.r, m.conn(m.c.primary.Address, m.p.PrimaryAPIFP, m.primaryPassword()))
	if err != nil {
		pw := "primary_api_password"
		if m.p.PrimaryPassword == "" {
			pw = "api_password (primary_api_password not given)"
		}
		return nil, fmt.Errorf("cannot connect to the primary %s's API at %s:%d (nodes[%d].address, api_port): %w", m.c.primary.Name, m.c.primary.Address, m.p.APIPort, m.indexOf(m.c.primary.Name),
			nameOptions(err, m.c.primary, m.indexOf(m.c.primary.Name), "primary_api_fingerprint", pw))
	}
	return c, nil
}

// before are the members the role runs before this node.
func (m *mod) before() []Member {
	var out []Member
	for _, n := range m.c.members[:m.c.index] {
		out = append(out, Member{Name: n.Name, Address: n.Address, Online: true})
	}
	return out
}

// predictJoined is the cluster once this node has joined, the nodes
// listed before it having joined first.
func (m *mod) predictJoined(primary *Cluster) *Cluster {
	c := &Cluster{Name: m.p.ClusterName, Quorate: true}
	if primary != nil {
		c.Members = slices.Clone(primary.Members)
	}
	for _, b := range append(m.before(), Member{Name: m.c.self.Name, Address: m.c.self.Address, Online: true}) {
		if c.member(b.Name) == nil {
			c.Members = append(c.Members, b)
		}
	}
	next := 1
	for i := range c.Members {
		if c.Members[i].NodeID == 0 {
			c.Members[i].NodeID = next
		}
		next = max(next, c.Members[i].NodeID) + 1
	}
	c.ExpectedVotes, c.TotalVotes = len(c.Members), len(c.Members)
	return c
}

// planJoin plans the join of a standalone node; stage 1 read the primary
// and refused what it could (observePrimary).
func (m *mod) planJoin(context.Context) ([]ansible.Change, error) {
	predicted := m.predictJoined(m.primary)
	if m.r.CheckMode() {
		m.final = predicted
	}
	m.joinedThrough = m.c.primary.Name
	via := "over SSH (pvecm add --use_ssh)"
	if m.p.JoinMethod == "api" {
		via = "over the API"
	}
	return []ansible.Change{{
		ID:      "cluster:join",
		Summary: fmt.Sprintf("join %s to cluster %s through %s %s (link0 %s)", m.c.self.Name, m.p.ClusterName, m.c.primary.Name, via, m.c.link0),
		Apply:   m.join,
		Verify:  m.verifyJoin,
		Predict: func(w *ansible.World) { clusterFact.Predict(w, predicted) },
	}}, nil
}

// join waits for the primary to be ready (C4, C10), then joins.
func (m *mod) join(ctx context.Context) error {
	var margin error
	err := m.wait(ctx, fmt.Sprintf("the primary %s quorate (C10) with no join in progress (C4: every node in its corosync.conf has its certificate in /etc/pve)", m.c.primary.Name),
		func(ctx context.Context) (bool, string, error) {
			v, err := m.readPrimary(ctx)
			if err != nil {
				return false, "", err
			}
			if v.cluster == nil || v.cluster.Name != m.p.ClusterName {
				return false, v.cluster.String(), nil
			}
			if !v.cluster.Quorate {
				return false, v.cluster.String(), nil
			}
			if margin = marginError(v.cluster, m.c.self.Name); margin != nil {
				return true, "", nil // a member went down since stage 1
			}
			busy, state, err := m.joinInProgress(ctx)
			if err != nil {
				return false, "", err
			}
			if busy {
				return false, v.cluster.String() + "; " + state, nil
			}
			m.primary = v.cluster
			return true, "", nil
		})
	if err == nil {
		err = margin
	}
	if err != nil {
		return ansible.NothingChanged(err)
	}
	if m.p.JoinMethod == "api" {
		return m.joinAPI(ctx)
	}
	return m.joinSSH(ctx)
}

func (m *mod) joinSSH(ctx context.Context) error {
	args := append([]string{"add", m.c.primary.Address, "--use_ssh"}, m.links()...)
	res, err := m.env.Runner.Run(ctx, host.Command{Name: "pvecm", Args: args})
	m.evidence = append(m.evidence, outputOf(res)...)
	if err == nil && strings.Contains(res.Stdout, "successfully added node") {
		return nil
	}
	// What the primary says first: PVE adds the node there before this
	// node finishes, so a failure after "Join request OK" is a half-done
	// join, whatever this node says, and never a host key problem.
	if half := m.halfDone(ctx); half != nil {
		cause := "pvecm add exited 0 without reporting a join"
		if err != nil {
			cause = "pvecm add failed: " + err.Error()
		}
		return m.halfJoined(half, cause, true)
	}
	// pvecm add exits 0 without joining when ssh could not ask about an
	// unknown host key (C2): only the membership tells.
	v, rerr := m.readSelf(ctx)
	if rerr != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("pvecm add exited 0 without reporting a join, and this node's status cannot be read: %w", rerr)
	}
	if v.cluster == nil && strings.Contains(res.Stdout, "Join request OK") {
		return ansible.NothingChanged(fmt.Errorf("pvecm add reported \"Join request OK\" but %s is still standalone and the primary %s does not list it; pvecm printed:\n%s", m.c.self.Name, m.c.primary.Name, strings.Join(outputOf(res), "\n")))
	}
	if v.cluster == nil {
		why := "pvecm add exited 0 but did not join"
		if err != nil {
			why = "pvecm add failed: " + err.Error()
		}
		return ansible.NothingChanged(fmt.Errorf("%s: %s is still standalone (C2: with an unknown host key ssh cannot ask under automation and pvecm gives up silently; is the primary's host key in known_hosts?). pvecm printed:\n%s",
			why, m.c.self.Name, strings.Join(outputOf(res), "\n")))
	}
	return err // the membership is checked by Verify
}

func (m *mod) joinAPI(ctx context.Context) error {
	info, err := m.readJoinInfo(ctx)
	if err != nil {
		return ansible.NothingChanged(err)
	}
	fp := ""
	var names []string
	for _, n := range info.Nodelist {
		names = append(names, n.Name)
		if n.Name == m.c.primary.Name {
			fp = n.FP
		}
	}
	if fp == "" {
		return ansible.NothingChanged(fmt.Errorf("primary: the join information of %s has no node named %q (it lists %s); names must be PVE node names (C8)", m.c.primary.Address, m.c.primary.Name, strings.Join(names, ", ")))
	}
	self, err := m.env.Connect(m.r, m.conn(m.c.self.Address, m.p.APIFingerprint, m.p.APIPassword))
	if err != nil {
		return ansible.NothingChanged(fmt.Errorf("cannot connect to this node's API: %w", nameOptions(err, m.c.self, m.c.index, "api_fingerprint", "api_password")))
	}
	local, err := m.localAPI()
	if err != nil {
		return ansible.NothingChanged(err)
	}
	q := url.Values{"hostname": {m.c.primary.Address}, "fingerprint": {fp}, "password": {m.primaryPassword()}, "link0": {m.c.link0}}
	if m.p.Link1 != "" {
		q.Set("link1", m.p.Link1)
	}
	// One dispatch: a lost answer is settled by finding the clusterjoin
	// task in this node's task list, never by sending the join again. The
	// joiner's API restarts with a new certificate (C5): the task is
	// followed through the local API, which needs neither.
	out, err := pveansible.Dispatch(ctx, m.r, self, pveapi.Write{
		Method: http.MethodPost, Path: "/cluster/config/join", Params: q,
		What: fmt.Sprintf("join %s to cluster %s", m.c.self.Name, m.p.ClusterName),
		Task: &pveapi.TaskWrite{Node: m.c.self.Name, Types: []string{"clusterjoin"}, Via: local},
	})
	if out != nil && out.Task != nil {
		m.evidence = append(m.evidence, "join task "+out.Task.UPID.Raw)
	}
	if err != nil {
		var te *pveapi.TaskError
		if errors.As(err, &te) {
			m.evidence = append(m.evidence, "join task "+te.UPID.Raw)
			m.evidence = append(m.evidence, te.Log...)
		}
		return m.joinFailed(ctx, err)
	}
	return nil
}

// halfDone returns the primary's cluster when it lists this node without
// this node being an online member of it: the first half of PVE's join
// (addnode on the primary) happened, the second (finish_join here) did not.
func (m *mod) halfDone(ctx context.Context) *Cluster {
	v, err := m.readPrimary(ctx)
	if err != nil || v.cluster == nil || v.cluster.Name != m.p.ClusterName {
		return nil
	}
	if mb := v.cluster.member(m.c.self.Name); mb == nil || mb.Online {
		return nil
	}
	return v.cluster
}

// joinFailed judges a failed join task: half done when the primary lists
// this node (changed, whatever this node says), nothing when the primary
// does not and this node is still standalone.
func (m *mod) joinFailed(ctx context.Context, err error) error {
	if half := m.halfDone(ctx); half != nil {
		return m.halfJoined(half, fmt.Sprintf("the join of %s failed half way: %v", m.c.self.Name, err), true)
	}
	v, rerr := m.readSelf(ctx)
	if rerr == nil && v.cluster == nil {
		if p, perr := m.readPrimary(ctx); perr == nil && p.cluster.member(m.c.self.Name) == nil {
			return ansible.NothingChanged(fmt.Errorf("the join failed and %s is still standalone, not listed by the primary %s: %w", m.c.self.Name, m.c.primary.Name, err))
		}
	}
	return err
}

// verifyJoin reads the join back; a read-back that times out with the
// primary listing this node offline is a half-done join.
func (m *mod) verifyJoin(ctx context.Context) error {
	err := m.waitMember(ctx, true)
	if err == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if half := m.halfDone(rctx); half != nil {
		return m.halfJoined(half, err.Error(), true)
	}
	return err
}

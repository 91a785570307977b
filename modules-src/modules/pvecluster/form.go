package pvecluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"

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
				if v, rerr := readLocal(ctx, m.local); rerr == nil && v.cluster == nil {
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
		v, err := readLocal(ctx, m.local)
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
		return readOverSSH(ctx, m.env.Runner, m.c.primary.Address)
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
		return nil, fmt.Errorf("cannot connect to the primary %s's API: %w", m.c.primary.Name, err)
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

// planJoin plans the join of a standalone node. The primary must be in
// cluster_name (C6), quorate (C10), with no member still joining (C4).
func (m *mod) planJoin(ctx context.Context) ([]ansible.Change, error) {
	pv, perr := m.readPrimary(ctx)
	var primary *Cluster
	if perr == nil {
		primary = pv.cluster
		if primary != nil && primary.Name != m.p.ClusterName {
			return nil, fmt.Errorf("primary %s belongs to cluster %q (members: %s), not %q: nothing was changed (C6)", m.c.primary.Name, primary.Name, strings.Join(primary.names(), ", "), m.p.ClusterName)
		}
		if pv.self != "" && pv.self != m.c.primary.Name {
			return nil, fmt.Errorf("primary: the node at %s is called %q by PVE, not %q (C8)", m.c.primary.Address, pv.self, m.c.primary.Name)
		}
	}
	if !m.r.CheckMode() {
		switch {
		case perr != nil && m.p.JoinMethod == "ssh" && strings.Contains(perr.Error(), "Host key verification failed"):
			return nil, fmt.Errorf("the primary %s's SSH host key is not trusted here, so pvecm add --use_ssh would exit 0 without joining (C2); add it to known_hosts (prepare: known_hosts) first; nothing was changed: %w", m.c.primary.Name, perr)
		case perr != nil:
			return nil, fmt.Errorf("cannot read the primary before joining: %w", perr)
		case primary == nil:
			return nil, fmt.Errorf("primary %s is not in a cluster yet: the cluster is created on the primary first (run the task there before the other nodes); nothing was changed", m.c.primary.Name)
		case primary.member(m.c.self.Name) != nil:
			return nil, fmt.Errorf("%s is standalone but listed in cluster %q of %s (%s): a join that did not finish; remove it there (pvecm delnode %s) before joining again; nothing was changed",
				m.c.self.Name, primary.Name, m.c.primary.Name, primary, m.c.self.Name)
		}
	}
	predicted := m.predictJoined(primary)
	if m.r.CheckMode() {
		m.final = predicted
	}
	via := "over SSH (pvecm add --use_ssh)"
	if m.p.JoinMethod == "api" {
		via = "over the API"
	}
	return []ansible.Change{{
		ID:      "cluster:join",
		Summary: fmt.Sprintf("join %s to cluster %s through %s %s (link0 %s)", m.c.self.Name, m.p.ClusterName, m.c.primary.Name, via, m.c.link0),
		Apply:   m.join,
		Verify:  func(ctx context.Context) error { return m.waitMember(ctx, true) },
		Predict: func(w *ansible.World) { clusterFact.Predict(w, predicted) },
	}}, nil
}

// join waits for the primary to be ready (C4, C10), then joins.
func (m *mod) join(ctx context.Context) error {
	err := m.wait(ctx, fmt.Sprintf("the primary %s quorate (C10) with every listed member online (one listed but offline: another join in progress, C4)", m.c.primary.Name),
		func(ctx context.Context) (bool, string, error) {
			v, err := m.readPrimary(ctx)
			if err != nil {
				return false, "", err
			}
			if v.cluster == nil || v.cluster.Name != m.p.ClusterName {
				return false, v.cluster.String(), nil
			}
			return v.cluster.Quorate && len(v.cluster.offline()) == 0, v.cluster.String(), nil
		})
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
	// pvecm add exits 0 without joining when ssh could not ask about an
	// unknown host key (C2): only the membership tells.
	v, rerr := readLocal(ctx, m.local)
	if rerr != nil {
		if err != nil {
			return err
		}
		return fmt.Errorf("pvecm add exited 0 without reporting a join, and this node's status cannot be read: %w", rerr)
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

// joinInfo is GET /cluster/config/join.
type joinInfo struct {
	Nodelist []struct {
		Name string `json:"name"`
		FP   string `json:"pve_fp"`
	} `json:"nodelist"`
}

func (m *mod) joinAPI(ctx context.Context) error {
	pc, err := m.primaryClient()
	if err != nil {
		return ansible.NothingChanged(err)
	}
	var info joinInfo
	if err := pc.Get(ctx, "/cluster/config/join", nil, &info); err != nil {
		return ansible.NothingChanged(fmt.Errorf("join information of %s: %w", m.c.primary.Name, err))
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
		return ansible.NothingChanged(fmt.Errorf("cannot connect to this node's API: %w", err))
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
		Task: &pveapi.TaskWrite{Node: m.c.self.Name, Types: []string{"clusterjoin"}, Via: m.local},
	})
	if out != nil && out.Task != nil {
		m.evidence = append(m.evidence, "join task "+out.Task.UPID.Raw)
	}
	if err != nil {
		var te *pveapi.TaskError
		if errors.As(err, &te) {
			m.evidence = append(m.evidence, "join task "+te.UPID.Raw)
			m.evidence = append(m.evidence, te.Log...)
			if v, rerr := readLocal(ctx, m.local); rerr == nil && v.cluster == nil {
				return ansible.NothingChanged(fmt.Errorf("the join failed and %s is still standalone: %w", m.c.self.Name, err))
			}
		}
		return err
	}
	return nil
}

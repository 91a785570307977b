package pvecluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

// clusterFact is this node's cluster as the run leaves it: observed, or
// predicted in check mode by a planned create or join.
const clusterFact = ansible.Key[*Cluster]("pve_cluster:cluster")

// pubKeyFact is root's public key: "" when check mode predicts one is made.
const pubKeyFact = ansible.Key[string]("pve_cluster:ssh_public_key")

// mod carries one run's knowledge from stage to stage and to the result.
type mod struct {
	r     *ansible.Run
	env   Env
	p     params
	c     checked
	local *pveapi.Client // this node's API, made on first use (localAPI)
	// provenBy names what proved the membership without the API
	// (membersFile), "" when the API and the primary were read.
	provenBy string

	start    *Cluster // this node's cluster before the run
	final    *Cluster // read back, or predicted in check mode
	pubKey   string
	keyMade  bool
	evidence []string
	// joinedThrough is the member this run joins this node through (in
	// check mode: would join), for the later phases' check runs.
	joinedThrough string

	// gathered in stage 1, before any write (hostkeys.go)
	hostKeys         []peerKey
	hostKeyErrs      map[string]error
	replacedHostKeys []string
	// primary is the primary's cluster as a joiner read it in stage 1
	// (nil: standalone, or unread in check mode; readiness.go).
	primary *Cluster
}

func run(r *ansible.Run, e Env) error {
	var p params
	if err := r.Decode(&p); err != nil {
		return err
	}
	c, err := validate(p, e.Hostname)
	if err != nil {
		return err
	}
	if p.APIPassword != "" {
		r.AddSecret(p.APIPassword)
	}
	if p.PrimaryPassword != "" {
		r.AddSecret(p.PrimaryPassword)
	}
	m := &mod{r: r, env: e, p: p, c: c}
	defer m.report()
	steps := []struct {
		name string
		on   bool
		fn   ansible.StageFunc
	}{
		{"membership", true, m.observe},
		{prepHosts, m.prepares(prepHosts), m.planHosts},
		{prepSSHKey, m.prepares(prepSSHKey), m.planKey},
		{prepAuthorizedKeys, m.prepares(prepAuthorizedKeys), m.planAuthorized},
		{prepKnownHosts, m.prepares(prepKnownHosts), m.planKnownHosts},
		{"cluster", p.Form, m.planCluster},
	}
	for _, s := range steps {
		if !s.on {
			continue
		}
		if err := r.Stage(s.name, s.fn); err != nil {
			return err
		}
	}
	return nil
}

// localAPI is this node's API client, made on first use: a member proven
// by pmxcfs's files (provenLocally) never needs one.
func (m *mod) localAPI() (*pveapi.Client, error) {
	if m.local != nil {
		return m.local, nil
	}
	c, err := m.env.Local(m.r)
	if err != nil {
		return nil, err
	}
	m.local = c
	return c, nil
}

func (m *mod) prepares(step string) bool { return slices.Contains(m.p.Prepare, step) }

func (m *mod) report() {
	m.r.Set("node", m.c.self.Name)
	role := "member"
	if m.c.isPrimary() {
		role = "primary"
	}
	m.r.Set("role", role)
	cl := m.final
	if cl == nil {
		cl = m.start
	}
	if cl != nil {
		m.r.Set("cluster", cl)
	} else {
		m.r.Set("cluster", nil)
	}
	if m.pubKey == "" && !m.keyMade {
		m.pubKey, _ = hostssh.ReadKeyPair(m.env.Root)
	}
	m.r.Set("ssh_public_key", m.pubKey)
	// what the peers record in known_hosts for this node: read here, over
	// the connection that runs the module, not by a handshake (C2)
	hk, _ := hostssh.ReadHostKey(m.env.Root)
	m.r.Set("ssh_host_key", hk)
	if len(m.replacedHostKeys) > 0 {
		m.r.Set("known_hosts_replaced", m.replacedHostKeys)
	}
	m.r.Set("ssh_key_created", m.keyMade)
	m.r.Set("joined_through", m.joinedThrough)
	read := m.provenBy
	if read == "" {
		read = "api"
	}
	m.r.Set("membership_read", read)
	if len(m.evidence) > 0 {
		m.r.Set("evidence", m.evidence)
	}
}

// observe is stage 1: this node's own view. C6 and C8 fail here, before
// anything is changed. A converged member proves itself from pmxcfs's
// files (pmxcfs.go): no API request, no process, no remote read.
func (m *mod) observe(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	cc, err := m.readCorosyncConf()
	if err != nil {
		return nil, err
	}
	if v, ok := m.provenLocally(cc); ok {
		m.start, m.final = v.cluster, v.cluster
		m.provenBy = membersFile
	} else if err := m.observeAPI(ctx, cc); err != nil {
		return nil, err
	}
	// Every refusal the inputs and a read can decide, before the first
	// write (the later stages write /etc/hosts, keys, known_hosts).
	joining := m.start == nil && m.p.Form && !m.c.isPrimary()
	if joining {
		// the primary's key first (its read pins it), the others once the
		// primary said who is a member
		if m.p.JoinMethod == "ssh" {
			if err := m.gatherHostKeys(ctx, nil, m.c.primary.Name); err != nil {
				return nil, err
			}
		}
		if err := m.observePrimary(ctx); err != nil {
			return nil, err
		}
	} else if m.start != nil {
		m.warnOffline(m.start)
	}
	if m.prepares(prepKnownHosts) {
		members := m.start
		if members == nil {
			members = m.primary
		}
		if err := m.gatherHostKeys(ctx, members); err != nil {
			return nil, err
		}
	}
	if err := m.checkPeerKeys(); err != nil {
		return nil, err
	}
	return nil, nil
}

// observeAPI is stage 1's read when pmxcfs's files prove nothing on their
// own: this node's /cluster/status, and on a member the primary's own view
// (sameCluster); a half-done join and a lost quorum are settled here.
func (m *mod) observeAPI(ctx context.Context, cc *corosyncConf) error {
	c, err := m.localAPI()
	if err != nil {
		return err
	}
	v, err := readLocal(ctx, c)
	if err != nil {
		return err
	}
	if v.self != "" && v.self != m.c.self.Name {
		return fmt.Errorf("node: PVE calls this node %q, not %q; node names in nodes, primary and node must be the PVE node names (C8)", v.self, m.c.self.Name)
	}
	m.start, m.final = v.cluster, v.cluster
	if cl := v.cluster; cl != nil && cl.Name != m.p.ClusterName {
		return fmt.Errorf("%s already belongs to a different cluster, %q (members: %s), not %q; a node is never moved between clusters: nothing was changed (C6)",
			m.c.self.Name, cl.Name, strings.Join(cl.names(), ", "), m.p.ClusterName)
	}
	if err := m.otherCluster(cc); err != nil {
		return err
	}
	if cl := v.cluster; cl != nil && m.p.Form {
		if err := m.sameCluster(ctx, cl); err != nil {
			return err
		}
	}
	if cl := v.cluster; cl != nil && m.p.Form && !m.c.isPrimary() {
		if me := cl.member(m.c.self.Name); me != nil && !me.Online {
			// this node has the cluster's configuration but its corosync
			// does not run with it: a join PVE left half done (finish_join
			// failed), seen from the joiner
			if half := m.halfDone(ctx); half != nil {
				return m.halfJoined(half, fmt.Sprintf("%s has the configuration of cluster %q but is not running in it", m.c.self.Name, cl.Name), false)
			}
		}
	}
	if cl := v.cluster; cl != nil && !cl.Quorate {
		// C10: without quorum /etc/pve is read-only; the later stages would
		// write into it (authorized_keys through /etc/pve/priv) or promise a
		// quorate cluster. Wait for quorum, bounded, before any change.
		err := m.wait(ctx, fmt.Sprintf("quorum in cluster %q, seen by %s (C10: without it /etc/pve is read-only)", cl.Name, m.c.self.Name),
			func(ctx context.Context) (bool, string, error) {
				v, err := readLocal(ctx, c)
				if err != nil {
					return false, "", err
				}
				m.start, m.final = v.cluster, v.cluster
				return v.cluster != nil && v.cluster.Quorate, v.cluster.String(), nil
			})
		if err != nil {
			return fmt.Errorf("%w; bring enough members back online (or set the expected votes by hand, pvecm expected); nothing was changed", err)
		}
	}
	return nil
}

// checkPeerKeys refuses, before any write, a real run that would leave a
// peer's root key out of authorized_keys. An empty key stands for one a
// check run predicted; in a real run it is accepted only for a node that is
// already a member (of this node's cluster, or of the primary's a joiner
// read): PVE merged its key into the cluster's shared authorized_keys when
// it joined (C7), so it is there whether or not its task ran in this play;
// or for a non-member left out of the play (peers_outside_play), whose own
// run authorizes it before it joins.
func (m *mod) checkPeerKeys() error {
	if !m.prepares(prepAuthorizedKeys) {
		return nil
	}
	cl := m.start
	if cl == nil {
		cl = m.primary
	}
	var later []string
	for _, name := range slices.Sorted(maps.Keys(m.p.PeerKeys)) {
		if m.p.PeerKeys[name] != "" || cl.member(name) != nil {
			continue
		}
		if m.laterPeer(name) {
			later = append(later, name)
			continue
		}
		if m.r.CheckMode() {
			continue // a key the check run predicts its key pair task makes
		}
		return fmt.Errorf("peer_keys.%s: no public key, and %s is not a member of the cluster yet; its key pair task must have run in this play (a failed node stops the others here; one left out by --limit or a job slice belongs in peers_outside_play); nothing was changed", name, name)
	}
	if len(later) > 0 {
		m.r.Warn(fmt.Sprintf("peer_keys: %s, outside this play and not members yet, have no root key: each is authorized in the cluster's shared authorized_keys by its own run, before it joins (C7)", strings.Join(later, ", ")))
	}
	return nil
}

// laterPeer tells whether name is a node left out of this play
// (peers_outside_play): its key is not this run's to authorize. Its own
// run (a later --limit, another job slice) makes its key pair and
// authorizes it through the primary in the cluster's shared
// authorized_keys before joining (C7), so neither a real run nor a
// check run's prediction counts on it here.
func (m *mod) laterPeer(name string) bool { return slices.Contains(m.p.OutsidePlay, name) }

func (m *mod) fileChange(id, summary string, fc *host.FileChange) ansible.Change {
	d := fc.Diff()
	return ansible.Change{
		ID: id, Summary: summary,
		Diff: &ansible.Diff{Before: d.Before, After: d.After, BeforeHeader: d.BeforeHeader, AfterHeader: d.AfterHeader},
		Apply: func(ctx context.Context) error {
			_, err := m.env.Root.ApplyFile(ctx, fc, m.env.Now())
			var conflict *host.ConflictError
			if errors.As(err, &conflict) {
				return ansible.NothingChanged(err)
			}
			return err
		},
		Verify: func(context.Context) error { return m.env.Root.VerifyFile(fc) },
	}
}

// planHosts is stage 2 (C1).
func (m *mod) planHosts(context.Context, *ansible.World) ([]ansible.Change, error) {
	fc, err := hostssh.PlanHosts(m.env.Root, m.c.members, m.p.Domain)
	if err != nil || fc == nil {
		return nil, err
	}
	return []ansible.Change{m.fileChange("hosts", fmt.Sprintf("write the %d members' lines into %s", len(m.c.members), hostssh.HostsFile), fc)}, nil
}

// planKey is stage 3: root's key pair, made here when missing.
func (m *mod) planKey(context.Context, *ansible.World) ([]ansible.Change, error) {
	pub, err := hostssh.ReadKeyPair(m.env.Root)
	if err != nil {
		return nil, err
	}
	if pub != "" {
		m.pubKey = pub
		return nil, nil
	}
	m.keyMade = true
	var made string
	return []ansible.Change{{
		ID:      "ssh_key",
		Summary: "create root's ed25519 key pair " + hostssh.PrivateKey,
		Apply: func(ctx context.Context) error {
			priv, pub, err := hostssh.NewKeyPair("root@" + m.c.self.Name)
			if err != nil {
				return ansible.NothingChanged(err)
			}
			// the private key first: a public key alone would be read back
			// as half a pair and refused on the next run
			for _, f := range []struct {
				path string
				data []byte
				mode fs.FileMode
			}{{hostssh.PrivateKey, priv, 0o600}, {hostssh.PublicKey, pub, 0o644}} {
				fc, err := m.env.Root.PlanFile(f.path, f.data, f.mode)
				if err != nil {
					return err
				}
				if _, err := m.env.Root.ApplyFile(ctx, fc, m.env.Now()); err != nil {
					return err
				}
			}
			made = strings.TrimSpace(string(pub))
			m.pubKey = made
			return nil
		},
		Verify: func(context.Context) error {
			got, err := hostssh.ReadKeyPair(m.env.Root)
			if err != nil {
				return err
			}
			if got != made {
				return fmt.Errorf("%s does not hold the key just made", hostssh.PublicKey)
			}
			return nil
		},
		Predict: func(w *ansible.World) { pubKeyFact.Predict(w, "") },
	}}, nil
}

// planAuthorized is stage 4 (C7): the peers' keys in root's
// authorized_keys, through the /etc/pve/priv link on a member.
func (m *mod) planAuthorized(context.Context, *ansible.World) ([]ansible.Change, error) {
	var keys, pending, from []string
	// This node's own key too: on the primary the file becomes the
	// cluster's copy that every joiner receives (C7), so it must hold every
	// member's key, the primary's included.
	members := m.start
	if members == nil {
		members = m.primary
	}
	for _, name := range slices.Sorted(maps.Keys(m.p.PeerKeys)) {
		if m.p.PeerKeys[name] == "" {
			// a member's key is in the cluster's shared file already (C7);
			// anyone else's is one a check run predicted
			if members.member(name) == nil && !m.laterPeer(name) {
				pending = append(pending, name)
			}
			continue
		}
		keys = append(keys, m.p.PeerKeys[name])
		from = append(from, name)
	}
	fc, added, err := hostssh.PlanAuthorizedKeys(m.env.Root, keys)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, a := range added {
		for i, k := range keys {
			if strings.TrimSpace(k) == a {
				names = append(names, from[i])
				break
			}
		}
	}
	if fc == nil && len(pending) == 0 {
		return nil, nil
	}
	st, err := m.env.Root.ReadFile(hostssh.AuthorizedKeys)
	if err != nil {
		return nil, err
	}
	where := hostssh.AuthorizedKeys
	if st.Target != st.Path {
		where += " (→ " + st.Target + ", shared by the cluster's members)"
	}
	// keys a check run predicted to be created are listed like the others:
	// the summary is the one the real run reports
	who := append(names, pending...)
	slices.Sort(who)
	summary := "authorize the root keys of " + strings.Join(who, ", ") + " in " + where
	if fc == nil {
		// check mode, only keys the prepare task predicted: a real run
		// never gets here (empty keys are refused outside check mode), and
		// the driver rejects the change if it ever did
		return []ansible.Change{ansible.PredictedOnly(prepAuthorizedKeys, summary, nil)}, nil
	}
	return []ansible.Change{m.fileChange(prepAuthorizedKeys, summary, fc)}, nil
}

// wait polls until done reports true, or the wait_timeout (or the task's
// deadline) passes; the last error or state is in the failure. A read cut
// short by that deadline is not evidence: the failure then names the last
// read that completed, if there was one.
func (m *mod) wait(ctx context.Context, what string, done func(context.Context) (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(m.p.WaitTimeout)*time.Second)
	defer cancel()
	var last string
	for {
		ok, state, err := done(ctx)
		switch {
		case err != nil && ctx.Err() != nil && last != "":
			// keep the last complete observation
		case err != nil:
			last = err.Error()
		default:
			last = state
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not reached within %ds (wait_timeout); last seen: %s", what, m.p.WaitTimeout, last)
		case <-time.After(m.env.Poll):
		}
	}
}

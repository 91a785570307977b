package pvecluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
	"github.com/gopve/proxmox/modules-src/pveapi"
	xssh "golang.org/x/crypto/ssh"
)

// What PVE itself requires before it adds a node (pve-cluster
// API2/ClusterConfig.pm `addnode`): quorum (check_cfs_quorum) and the
// corosync.conf lock. What this module adds, so that a join cannot leave the
// cluster worse than it found it:
//
//   - no join in progress: PVE lists a joiner in corosync.conf (addnode)
//     before the joiner has finished (Setup.pm finish_join), and the joiner's
//     /etc/pve/nodes/<name>/pve-ssl.pem appears only at the end of
//     finish_join. So "every nodelist member has its certificate", i.e. the
//     join information answers with every pve_fp, means no join is half
//     way. An offline member that is fully joined does not block anything.
//   - a quorum margin: while the joiner finishes, the cluster already
//     expects its vote. If the join stalls half way the cluster keeps only
//     the votes online now; with a member offline that can fall below quorum
//     (3 members, one off: 2 of 4). Such a join is refused before any write.
//     With every member online the margin is what it is (a one-node cluster
//     always passes through 1 of 2), as with PVE.

// joinInfo is GET /cluster/config/join.
type joinInfo struct {
	Nodelist []struct {
		Name string `json:"name"`
		FP   string `json:"pve_fp"`
	} `json:"nodelist"`
}

// readJoinInfo reads the primary's join information: its API with the api
// method, pvesh over SSH with the ssh method.
func (m *mod) readJoinInfo(ctx context.Context) (joinInfo, error) {
	var info joinInfo
	if m.p.JoinMethod == "ssh" {
		raw, err := pveshOverSSH(ctx, m.env.Runner, m.c.primary.Address, m.knownLine(m.c.primary.Address), "/cluster/config/join")
		if err != nil {
			return info, fmt.Errorf("join information of %s: %w", m.c.primary.Name, err)
		}
		if err := pveapi.Decode(raw, &info); err != nil {
			return info, fmt.Errorf("join information of %s: %w", m.c.primary.Name, err)
		}
		return info, nil
	}
	pc, err := m.primaryClient()
	if err != nil {
		return info, err
	}
	var raw json.RawMessage
	if err := pc.Get(ctx, "/cluster/config/join", nil, &raw); err != nil {
		return info, fmt.Errorf("join information of %s: %w", m.c.primary.Name, err)
	}
	return info, pveapi.Decode(raw, &info)
}

// joinInProgress tells whether a member of the primary's corosync.conf has
// no certificate in /etc/pve yet (see above); state says what was seen.
func (m *mod) joinInProgress(ctx context.Context) (bool, string, error) {
	info, err := m.readJoinInfo(ctx)
	if err != nil {
		if strings.Contains(err.Error(), "pve-ssl.pem") {
			return true, fmt.Sprintf("the join information fails (%v): a node listed in corosync.conf has no certificate in /etc/pve yet, a join in progress or one left half done (C4)", err), nil
		}
		return false, "", err
	}
	var missing []string
	for _, n := range info.Nodelist {
		if n.FP == "" {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) > 0 {
		return true, fmt.Sprintf("the join information has no certificate fingerprint for %s: a join in progress (C4)", strings.Join(missing, ", ")), nil
	}
	return false, "", nil
}

// onlineVotes counts the votes of the online members (one each).
func onlineVotes(c *Cluster) int {
	n := 0
	for _, mb := range c.Members {
		if mb.Online {
			n++
		}
	}
	return n
}

// marginError refuses a join that, stalled half way, would cost the
// cluster its quorum (C10); nil when the join is safe or every member is
// online.
func marginError(c *Cluster, joiner string) error {
	off := c.offline()
	if len(off) == 0 {
		return nil
	}
	up := onlineVotes(c)
	after := len(c.Members) + 1
	quorum := after/2 + 1
	if up >= quorum {
		return nil
	}
	return fmt.Errorf("joining %s to cluster %q now is refused: %s offline, so %d of %d votes are online; PVE lists %s on the primary before %s has finished joining, and a join that stalls there would cost the cluster its quorum (%d of %d, quorum %d: /etc/pve read-only, C10). Bring %s back online, or remove it for good (pvecm delnode %s on a member), then run again; nothing was changed",
		joiner, c.Name, strings.Join(off, ", "), up, len(c.Members), joiner, joiner, up, after, quorum, strings.Join(off, ", "), off[0])
}

// warnOffline names the members that are listed but offline: a dead,
// fully joined member is a warning, not a failure (it keeps its vote
// counted as missing, see marginError).
func (m *mod) warnOffline(c *Cluster) {
	if off := c.offline(); len(off) > 0 {
		m.r.Warn(fmt.Sprintf("cluster %q: %s offline (%d of %d votes online); nothing is done for it, it takes the cluster's state when it is back", c.Name, strings.Join(off, ", "), onlineVotes(c), len(c.Members)))
	}
}

// sameCluster is C6 beyond the name: a node in a cluster called
// cluster_name is in the primary's cluster only if its membership lists
// the primary and, when the primary can be read, the primary's lists it.
// Two clusters share a name easily (a generic default, a reinstalled
// primary, a recycled node).
func (m *mod) sameCluster(ctx context.Context, cl *Cluster) error {
	me, primary := m.c.self.Name, m.c.primary.Name
	if m.c.isPrimary() {
		return nil
	}
	if cl.member(primary) == nil {
		return fmt.Errorf("%s is in a cluster named %q whose members are %s: not the cluster of the primary %s, another cluster with the same name; a node is never moved between clusters: nothing was changed (C6)",
			me, cl.Name, strings.Join(cl.names(), ", "), primary)
	}
	if mb := cl.member(primary); !mb.Online {
		return nil // its own view cannot be read; the membership lists it
	}
	pv, err := m.readPrimary(ctx)
	if err != nil {
		m.r.Warn(fmt.Sprintf("cannot read the primary %s to confirm that %s is in its cluster: %v", primary, me, err))
		return nil
	}
	if pv.cluster == nil || pv.cluster.Name != cl.Name || pv.cluster.member(me) == nil {
		return fmt.Errorf("%s is in a cluster named %q (members: %s), but the primary %s at %s sees %s, which does not list %s: another cluster with the same name; nothing was changed (C6)",
			me, cl.Name, strings.Join(cl.names(), ", "), primary, m.c.primary.Address, pv.cluster, me)
	}
	return nil
}

// pvecmTrustsPrimary is C2 decided before any write: pvecm add --use_ssh
// runs ssh with root's known_hosts, so unless this run writes the
// primary's key there (prepare: known_hosts) it must be recorded already.
func (m *mod) pvecmTrustsPrimary() error {
	if m.p.JoinMethod != "ssh" || m.prepares(prepKnownHosts) {
		return nil
	}
	cur, err := m.env.Root.ReadFile(hostssh.KnownHosts)
	if err != nil {
		return err
	}
	if _, keys := hostssh.RecordedKeys(string(cur.Content), hostssh.Names(m.c.primary, m.p.Domain, 22), xssh.KeyAlgoED25519); len(keys) > 0 {
		return nil
	}
	return fmt.Errorf("the primary %s's SSH host key is not in %s and prepare does not include known_hosts: pvecm add --use_ssh would meet an unknown host key (ssh: \"Host key verification failed\" under automation) and exit 0 without joining (C2); add known_hosts to prepare; nothing was changed", m.c.primary.Name, hostssh.KnownHosts)
}

// observePrimary is a joiner's stage-1 read of the primary: every refusal
// it can decide comes here, before the first write (C6, C8, C10, a join
// left half done). Check mode tolerates an unreadable primary (its trust
// or cluster may be what the run predicts).
func (m *mod) observePrimary(ctx context.Context) error {
	if err := m.pvecmTrustsPrimary(); err != nil {
		return err
	}
	pv, err := m.readPrimary(ctx)
	if err != nil {
		if m.r.CheckMode() {
			return nil
		}
		if m.p.JoinMethod == "ssh" && strings.Contains(err.Error(), "Permission denied") {
			return fmt.Errorf("primary: %s does not accept this node's root key over SSH (Permission denied), so pvecm add --use_ssh cannot reach it: the primary's own task authorizes every key of peer_keys (prepare: authorized_keys), run it first (the role does); nothing was changed: %w", m.c.primary.Name, err)
		}
		if m.p.JoinMethod == "ssh" && strings.Contains(err.Error(), "Host key verification failed") {
			return fmt.Errorf("the primary %s's SSH host key is not trusted here, so pvecm add --use_ssh would exit 0 without joining (C2); give its key (peer_host_keys) or add it to known_hosts (prepare: known_hosts) first; nothing was changed: %w", m.c.primary.Name, err)
		}
		return fmt.Errorf("primary: cannot read %s at %s (nodes[%d].address) before joining: %w; nothing was changed", m.c.primary.Name, m.c.primary.Address, m.indexOf(m.c.primary.Name), err)
	}
	m.primary = pv.cluster
	me := m.c.self.Name
	if pv.self != "" && pv.self != m.c.primary.Name {
		return fmt.Errorf("primary: the node at %s is called %q by PVE, not %q (C8); nothing was changed", m.c.primary.Address, pv.self, m.c.primary.Name)
	}
	primary := pv.cluster
	if primary == nil {
		if m.r.CheckMode() {
			return nil // the primary's own task creates it first
		}
		return fmt.Errorf("primary %s is not in a cluster yet: the cluster is created on the primary first (run the task there before the other nodes); nothing was changed", m.c.primary.Name)
	}
	if primary.Name != m.p.ClusterName {
		return fmt.Errorf("primary %s belongs to cluster %q (members: %s), not %q: nothing was changed (C6)", m.c.primary.Name, primary.Name, strings.Join(primary.names(), ", "), m.p.ClusterName)
	}
	if primary.member(me) != nil {
		return m.halfJoined(primary, fmt.Sprintf("%s is standalone but listed in cluster %q of %s: a join that did not finish", me, primary.Name, m.c.primary.Name), false)
	}
	if !primary.Quorate {
		return nil // the join waits for quorum (C10), bounded, in its apply
	}
	if err := marginError(primary, me); err != nil {
		return err
	}
	m.warnOffline(primary)
	return nil
}

// halfJoined is the failure of a join PVE left half done: the primary
// lists this node (its addnode ran) but this node did not finish
// (finish_join). It names the primary's state and PVE's way back: the
// documented removal of a node (pvecm delnode) needs quorum, which a
// cluster waiting for the half-joined node's vote may not have, so the
// expected votes are lowered first (pvecm expected), as the Proxmox VE
// administration guide's "Remove a Cluster Node" and "Separate a Node
// Without Reinstalling" sections do. changed says whether this run did it.
func (m *mod) halfJoined(primary *Cluster, what string, changed bool) error {
	me, p := m.c.self.Name, m.c.primary.Name
	up, listed := onlineVotes(primary), len(primary.Members)
	quorum := listed/2 + 1
	q := "quorate"
	if !primary.Quorate {
		q = "NOT quorate, /etc/pve read-only"
	}
	var steps []string
	if up < quorum {
		steps = append(steps, fmt.Sprintf("on %s, `pvecm expected %d` (the votes online) so that it is quorate again and /etc/pve writable", p, up))
	}
	steps = append(steps,
		fmt.Sprintf("on %s, `pvecm delnode %s`, then `pvecm status` (quorate, %s gone)", p, me, me),
		fmt.Sprintf("on %s, remove its partial cluster configuration before joining again (reinstall it, or follow \"Separate a Node Without Reinstalling\": stop pve-cluster and corosync, pmxcfs -l, remove /etc/pve/corosync.conf and /etc/corosync/*, restart pve-cluster)", me))
	for i := range steps {
		steps[i] = fmt.Sprintf("%d. %s", i+1, steps[i])
	}
	done := "nothing was changed by this run"
	if changed {
		done = "this run changed the cluster: " + p + " now lists " + me
	}
	return fmt.Errorf("%s. The primary %s's corosync.conf lists %s: %s; %d of %d votes online, quorum %d: %s. PVE's join adds the node on the primary first (addnode), then finishes on the node (finish_join); only the first half happened. To restore the cluster (Proxmox VE administration guide, \"Remove a Cluster Node\"):\n%s\n%s (C4, C10)",
		what, p, me, primary, up, listed, quorum, q, strings.Join(steps, "\n"), done)
}

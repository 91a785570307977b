// Package pvecluster is the pve_cluster module: one node's part in forming a
// Proxmox VE cluster that is really quorate, or a loud failure.
//
// It runs on every node (the role: the primary first, then the others one
// at a time). Stages, each observe → plan → apply → verify:
//
//  1. membership (read only): this node's /cluster/status. A node in a
//     different cluster fails here, before anything changes (C6); so does a
//     node whose PVE name is not the one the task was given (C8). A member
//     of a cluster without quorum waits for it (bounded by wait_timeout)
//     and fails, unchanged, if it does not come: /etc/pve is read-only (C10).
//  2. hosts: /etc/hosts lines IP FQDN SHORT for every member (C1).
//  3. ssh_key: root's ed25519 key pair, generated in Go if missing.
//  4. authorized_keys: the peers' root keys, written through the
//     /etc/pve/priv link on a member (C7).
//  5. known_hosts: the peers' host keys, one exact line each (C2, C3),
//     gathered in stage 1 (hostkeys.go): a changed key fails there.
//  6. cluster: the primary creates the cluster if standalone; another node
//     joins it if standalone, over SSH (pvecm add --use_ssh) or the API
//     (join info of the primary, fingerprint by node name C8, POST
//     /cluster/config/join). Done means: this node and the primary both
//     list the node as an online member of a quorate cluster, read back
//     within wait_timeout across the joiner's API restart and certificate
//     change (C2, C5). Before joining, a join in progress (C4) or a
//     primary without quorum (C10) is waited for (readiness.go); a joiner's
//     refusals are decided in stage 1, before any write.
//
// Check mode runs the same stages without applying. A node's join is
// predicted against the cluster as it will be when its turn comes: the
// primary's members, plus the nodes listed before this one in `nodes` (the
// role runs them first), plus this node.
package pvecluster

import (
	"context"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/host"
	hostssh "github.com/gopve/proxmox/modules-src/host/ssh"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	xssh "golang.org/x/crypto/ssh"
)

// Env is what the module touches: the node's files and commands, its own
// API (pvesh, local mode), other APIs over HTTPS, and the network for host
// keys. Tests replace each part.
type Env struct {
	Root   host.Root
	Runner host.Runner
	// Local is a client of this node's own API (pvesh as root).
	Local func(r *ansible.Run) (*pveapi.Client, error)
	// Connect is a client of another API (the primary; this node over
	// HTTPS for the API join, which needs a root@pam ticket).
	Connect func(r *ansible.Run, conn pveapi.Connection) (*pveapi.Client, error)
	// HostKey fetches the ed25519 SSH host key a peer presents.
	HostKey func(ctx context.Context, addr string) (xssh.PublicKey, error)
	// Hostname is this node's name when the task does not give one.
	Hostname func() (string, error)
	Now      func() time.Time
	// Poll is the pause between membership reads while waiting.
	Poll time.Duration
}

// readOnly is the environment of check mode: files, commands and every
// API client refuse to write, whatever the Env's functions return.
func (e Env) readOnly() Env {
	e.Root = e.Root.ReadOnly()
	e.Runner = host.ReadOnly(e.Runner)
	local, connect := e.Local, e.Connect
	if local != nil {
		e.Local = func(r *ansible.Run) (*pveapi.Client, error) { return readOnlyClient(local(r)) }
	}
	if connect != nil {
		e.Connect = func(r *ansible.Run, c pveapi.Connection) (*pveapi.Client, error) {
			return readOnlyClient(connect(r, c))
		}
	}
	return e
}

func readOnlyClient(c *pveapi.Client, err error) (*pveapi.Client, error) {
	if err != nil {
		return nil, err
	}
	return c.ReadOnlyClient(), nil
}

// Module is pve_cluster as it runs on a node.
func Module() ansible.Module {
	return New(func(*ansible.Run) Env {
		return Env{
			Root:   "/",
			Runner: &host.ExecRunner{},
			Local: func(r *ansible.Run) (*pveapi.Client, error) {
				return pveansible.ForRun(r, pveapi.Connection{}, pveapi.Options{})
			},
			Connect: func(r *ansible.Run, c pveapi.Connection) (*pveapi.Client, error) {
				return pveansible.ForRun(r, c, pveapi.Options{})
			},
			HostKey: func(ctx context.Context, addr string) (xssh.PublicKey, error) {
				return hostssh.FetchHostKey(ctx, addr, xssh.KeyAlgoED25519, 10*time.Second)
			},
			Hostname: shortHostname,
			Now:      time.Now,
			Poll:     2 * time.Second,
		}
	})
}

// New builds the module with a custom environment (tests).
func New(env func(*ansible.Run) Env) ansible.Module {
	return ansible.Module{
		Name:             "pve_cluster",
		ShortDescription: "One node's part in a Proxmox VE cluster: hosts, SSH trust, create or join, read back quorate",
		Description: []string{
			"Prepares a Proxmox VE node for a cluster (/etc/hosts lines for every member, a root ed25519 key pair, the peers' root keys authorized, the peers' host keys known) and then creates the cluster on the primary, or joins this node to the primary's cluster.",
			"A create or join is reported only once this node and the primary both list the node as an online member of a quorate cluster; an exit code or an accepted API request proves nothing (pvecm add exits 0 without joining when it cannot ask about an unknown host key). Waiting is bounded by wait_timeout and survives the joiner's API restart and new certificate.",
			"A node already in the cluster is ok. A converged member proves that from pmxcfs's own files, with no API request, no process and no remote read (membership_read): /etc/pve/.members, the record /cluster/status answers from, lists this node online in the quorate cluster and, on a node other than the primary, the primary online at its address, so in the same quorate partition as this node's corosync sees it; /etc/pve/corosync.conf names that cluster at the running config_version. Otherwise this node's API and the primary's own view are read, as for a join. A node whose corosync.conf names another cluster fails (C6).",
			"A node in a different cluster, or a primary whose cluster has another name, fails naming the cluster found, and nothing is changed.",
			"On a member of a cluster without quorum (/etc/pve read-only) the module waits for quorum, bounded by wait_timeout, and fails with nothing changed if it does not come back.",
			"A joiner reads the primary before its first write, and refuses there what it can decide: a primary in another cluster or standalone, a join left half done, and, while a member is offline, a join that would cost the cluster its quorum if it stalled half way (PVE lists the joiner on the primary before it has finished). A node in a same-name cluster that does not hold the primary is another cluster (C6).",
			"Before joining, the module waits while a join is in progress (a node in the primary's corosync.conf without its certificate in /etc/pve: the join information lacks its pve_fp) or the cluster has no quorum; an offline member that is fully joined is a warning naming it, not a reason to wait. Joins must still be run one at a time (the role does: throttle 1).",
			"A join that PVE leaves half done (the primary lists this node, this node did not finish) is reported changed, with the primary's votes and nodelist and the way back (pvecm expected on the primary if it lost quorum, then pvecm delnode).",
			"Host keys for known_hosts come from peer_host_keys (each node's own ssh_host_key, read over Ansible's connection), else the line already recorded; a key that differs from the recorded one fails unless accept_changed_host_keys, and replaced lines are reported.",
			"Removing a node from a cluster is not automated: state=absent fails with the manual procedure.",
			"Check mode reports the steps a real run would take on this node and writes nothing on any node; the predicted cluster is the one the real run reads back when the nodes run in the order of nodes.",
		},
		Notes: []string{
			"Node names given in nodes and primary must be the PVE node names (the hostnames): the join fingerprint and the membership are looked up by name (C8).",
			"On a cluster member /root/.ssh/authorized_keys is a link into /etc/pve/priv: it is written through and shared by all members; a join replaces the joiner's copy by the cluster's, so the primary authorizes every peer before anyone joins.",
			"Joining a node replaces its /etc/pve (storage.cfg included) by the cluster's: run it before declaring storage.",
		},
		Requirements: []string{"Proxmox VE 8 or 9", "root on the node (become: true)"},
		Examples:     examples,
		Return:       returnDoc,
		Spec:         spec(),
		Params:       params{},
		Timeout:      20 * time.Minute,
		Run: func(r *ansible.Run) error {
			e := env(r)
			if e.Now == nil {
				e.Now = time.Now
			}
			if e.Poll <= 0 {
				e.Poll = 2 * time.Second
			}
			if r.CheckMode() {
				e = e.readOnly()
			}
			return run(r, e)
		},
	}
}

// Preparation steps (option prepare).
const (
	prepHosts          = "hosts"
	prepSSHKey         = "ssh_key"
	prepAuthorizedKeys = "authorized_keys"
	prepKnownHosts     = "known_hosts"
)

// spec is the module's options plus two sets of API connection options
// for join_method=api: this node's and the primary's (primary_api_*).
func spec() ansible.Spec {
	return pveansible.With(ownSpec(), apiJoinSelf, apiJoinPrimary)
}

// apiJoinSelf is this node's API for join_method=api: root@pam by
// password only (PVE refuses a token for a join), no environment fallback
// (the password is the node's root's, not a controller's API user).
var apiJoinSelf = pveansible.Set{
	Only: []string{"api_password", "api_port", "validate_certs", "ca_path", "api_fingerprint"},
	For:  "join_method=api:", NoEnv: true,
	Docs: map[string][]string{
		"api_password":    {"root@pam password of this node (PVE accepts the join request only from root@pam with a ticket; an API token gets 403)."},
		"api_port":        {"port of the nodes' API."},
		"validate_certs":  {"verify the nodes' certificates (see api_fingerprint, primary_api_fingerprint, ca_path)."},
		"ca_path":         {"PEM file of a CA to trust for the nodes' API."},
		"api_fingerprint": {"SHA-256 fingerprint of this node's API certificate (before the join; the join replaces the certificate)."},
	},
}

// apiJoinPrimary is the primary's API for join_method=api; port, CA and
// verification are shared with this node's (apiJoinSelf).
var apiJoinPrimary = pveansible.Set{
	Prefix: "primary_", Only: []string{"api_password", "api_fingerprint"}, For: "join_method=api:",
	Aliases: map[string][]string{"api_password": {"primary_password"}},
	Docs: map[string][]string{
		"api_password":    {"root@pam password of the primary, sent with the join request. Default: api_password."},
		"api_fingerprint": {"SHA-256 fingerprint of the primary's API certificate."},
	},
}

func ownSpec() ansible.Spec {
	return ansible.Spec{Options: map[string]ansible.Option{
		"state": {Type: ansible.TypeStr, Default: "present", Choices: []any{"present", "absent"},
			Description: []string{"present: the node is a member of cluster_name. absent is refused: leaving a cluster is a manual procedure (pvecm delnode on a remaining member, then reinstalling the node), which the failure message spells out."}},
		"cluster_name": {Type: ansible.TypeStr,
			Description: []string{"Name of the cluster (at most 15 letters, digits or dashes, not starting with a dash). Required with state=present."}},
		"primary": {Type: ansible.TypeStr,
			Description: []string{"PVE node name of the node that creates the cluster and that the others join. Required with state=present."}},
		"nodes": {Type: ansible.TypeList, Elements: ansible.TypeDict,
			Description: []string{"Every member of the cluster, in the order the nodes run (the primary first): name (PVE node name) and address (IP used for /etc/hosts, SSH and link0). Required with state=present."},
			Options: map[string]ansible.Option{
				"name":    {Type: ansible.TypeStr, Required: true, Description: []string{"PVE node name (its hostname)."}},
				"address": {Type: ansible.TypeStr, Required: true, Description: []string{"IP address of the node."}},
			}},
		"node": {Type: ansible.TypeStr,
			Description: []string{"This node's PVE name. Default: the short hostname."}},
		"domain": {Type: ansible.TypeStr, Default: "",
			Description: []string{"DNS domain for the FQDN of /etc/hosts lines (IP FQDN SHORT); empty writes IP SHORT."}},
		"link0": {Type: ansible.TypeStr,
			Description: []string{"Corosync link 0 address of this node. Default: its address in nodes."}},
		"link1": {Type: ansible.TypeStr,
			Description: []string{"Corosync link 1 address of this node (a second, redundant network)."}},
		"join_method": {Type: ansible.TypeStr, Default: "ssh", Choices: []any{"ssh", "api"},
			Description: []string{"ssh: pvecm add PRIMARY --use_ssh (needs the SSH trust prepare sets up; no password). api: the join information of the primary, then POST /cluster/config/join on this node with the primary's root password."}},
		"prepare": {Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{prepHosts, prepSSHKey, prepAuthorizedKeys, prepKnownHosts},
			Choices:     []any{prepHosts, prepSSHKey, prepAuthorizedKeys, prepKnownHosts},
			Description: []string{"Host preparation steps: hosts (/etc/hosts), ssh_key (root's ed25519 key pair), authorized_keys (peer_keys into root's authorized_keys), known_hosts (the peers' SSH host keys). An empty list skips preparation."}},
		"form": {Type: ansible.TypeBool, Default: true,
			Description: []string{"Create (primary) or join (other nodes) the cluster. false only prepares the node, e.g. to collect every node's ssh_public_key first."}},
		"peer_keys": {Type: ansible.TypeDict, Default: map[string]any{},
			Description: []string{"Root public keys to authorize, by node name (the ssh_public_key each node returned), this node's own included: on the primary the file becomes the cluster's copy every joiner receives. An empty value stands for a key that a check run predicted to be created (accepted in check mode only)."}},
		"peers_outside_play": {Type: ansible.TypeList, Elements: ansible.TypeStr, Default: []any{},
			Description: []string{"Nodes of nodes that are not in this play (--limit, a job slice; the role passes them). Such a node that is not a member yet and has no key in peer_keys is left for its own run, which authorizes it in the cluster's shared authorized_keys before it joins (C7); without this option a missing key of a non-member fails the run, nothing written."}},
		"peer_host_keys": {Type: ansible.TypeDict,
			Description: []string{"ed25519 SSH host keys of the peers, by node name (the ssh_host_key each node returned; the role passes them): what known_hosts records, taken over the connection Ansible authenticated. A peer missing here keeps the key known_hosts already records; an offline member without one is a warning. Not given at all: a peer's key is read from its SSH server (trust on first use), as before."}},
		"accept_changed_host_keys": {Type: ansible.TypeBool, Default: false,
			Description: []string{"Replace a host key that known_hosts records for a peer by a different one (a reinstalled node). Without it a changed key fails, nothing written. The replaced lines are reported as a warning either way."}},
		"wait_timeout": {Type: ansible.TypeInt, Default: 300,
			Description: []string{"Seconds to wait for the cluster to be quorate with this node as an online member after a create or join, for a join in progress or a lost quorum on the primary before joining, and for quorum on a member that has lost it."}},
	}, Constraints: ansible.Constraints{
		RequiredIf: []ansible.RequiredIf{
			{Key: "state", Value: "present", Requirements: []string{"cluster_name", "primary", "nodes"}},
		},
	}}
}

type nodeParam struct {
	Name    string `ansible:"name"`
	Address string `ansible:"address"`
}

type params struct {
	State           string            `ansible:"state"`
	ClusterName     string            `ansible:"cluster_name"`
	Primary         string            `ansible:"primary"`
	Nodes           []nodeParam       `ansible:"nodes"`
	Node            string            `ansible:"node"`
	Domain          string            `ansible:"domain"`
	Link0           string            `ansible:"link0"`
	Link1           string            `ansible:"link1"`
	JoinMethod      string            `ansible:"join_method"`
	Prepare         []string          `ansible:"prepare"`
	Form            bool              `ansible:"form"`
	PeerKeys        map[string]string `ansible:"peer_keys"`
	OutsidePlay     []string          `ansible:"peers_outside_play"`
	APIPassword     string            `ansible:"api_password"`
	PrimaryPassword string            `ansible:"primary_api_password"`
	APIPort         int               `ansible:"api_port"`
	ValidateCerts   bool              `ansible:"validate_certs"`
	CAPath          string            `ansible:"ca_path"`
	APIFingerprint  string            `ansible:"api_fingerprint"`
	PrimaryAPIFP    string            `ansible:"primary_api_fingerprint"`
	PeerHostKeys    map[string]string `ansible:"peer_host_keys"`
	AcceptChanged   bool              `ansible:"accept_changed_host_keys"`
	WaitTimeout     int               `ansible:"wait_timeout"`
}

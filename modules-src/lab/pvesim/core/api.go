package core

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/cluster"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/etcpvefs"
)

// NodeInfo is a snapshot of one node as a client sees it.
type NodeInfo struct {
	Name        string
	Addr        string // IP
	URL         string // https://Addr:Port/api2/json
	Fingerprint string // SHA-256 of the current certificate, AA:BB:…
	CertPEM     []byte // current certificate (changes on join: C5)
	CAPEM       []byte // root CA of its /etc/pve (pve-root-ca.pem): shared by a cluster (K14 ca_path)
	Online      bool
	Serving     bool   // listener up (false while offline or restarting)
	Cluster     string // cluster name, "" when standalone
}

// Node returns the node's current view, or false if unknown.
func (s *Sim) Node(name string) (NodeInfo, bool) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	n := s.State.Nodes[name]
	rt := s.nodes[name]
	if n == nil || rt == nil {
		return NodeInfo{}, false
	}
	info := NodeInfo{
		Name: n.Name, Addr: n.Addr,
		URL:         "https://" + net.JoinHostPort(n.Addr, strconv.Itoa(s.Cfg.Port)) + "/api2/json",
		Fingerprint: rt.cert.Fingerprint, CertPEM: append([]byte(nil), rt.cert.PEM...),
		Online: n.Online, Serving: rt.srv != nil,
	}
	if db := s.State.DBs[n.DB]; db.Corosync != nil {
		info.Cluster = db.Corosync.ClusterName
	}
	if ca := s.cas[n.DB]; ca != nil {
		info.CAPEM = append([]byte(nil), ca.PEM...)
	}
	return info, true
}

// NodeNames lists the nodes in configuration order.
func (s *Sim) NodeNames() []string {
	out := make([]string, 0, len(s.Cfg.Nodes))
	for _, n := range s.Cfg.Nodes {
		out = append(out, n.Name)
	}
	return out
}

// Version is the simulated PVE major version.
func (s *Sim) Version() int { return s.Cfg.Version }

// RootPassword is root@pam's password on every node.
func (s *Sim) RootPassword() string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.State.RootPassword
}

// LabToken returns the root@pam!lab token (privilege separation off).
func (s *Sim) LabToken() (id, secret string) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return "root@pam!lab", s.State.TokenSecret
}

// Requests returns the request log (oldest first); ResetRequests empties it.
func (s *Sim) Requests() []Request { return s.log.Entries() }

// WatchSecret makes the request log look for value in every request from
// now on: where it is, Request.Carries says so by label (the value itself
// is redacted from the log wherever it appears). Tests give it their
// marker secrets to prove which requests carried them, and only those.
func (s *Sim) WatchSecret(label, value string) { s.log.Watch(label, value) }

// ResetRequests empties the request log.
func (s *Sim) ResetRequests() { s.log.Reset() }

// Faults is the lab's fault table.
func (s *Sim) Faults() *Faults { return s.faults }

// InternalErrors lists failures of the simulator itself (state saves,
// listeners that could not come back); tests should expect none.
func (s *Sim) InternalErrors() []string { return s.log.Errors() }

// NodeLocked is node's state, or the error the Go API answers for a node
// the lab does not have. The caller holds s.Mu.
func (s *Sim) NodeLocked(name string) (*Node, error) {
	n := s.State.Nodes[name]
	if n == nil {
		return nil, fmt.Errorf("no node %q in this lab (have %s)", name, strings.Join(s.NodeNames(), ", "))
	}
	return n, nil
}

// DBFreshLocked is node's /etc/pve database, with what a program on a
// node changed in its files read back, or the control API's 404 for a node
// the lab does not have. The caller holds s.Mu.
func (s *Sim) DBFreshLocked(node string) (*ConfigDB, error) {
	db := s.DBOf(node)
	if db == nil {
		return nil, &NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	s.readFilesLocked(db)
	return db, nil
}

// SetOnline powers a node on or off: off closes its API and removes its
// vote from quorum (C10).
func (s *Sim) SetOnline(name string, online bool) error {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	n, err := s.NodeLocked(name)
	if err != nil {
		return err
	}
	if n.Online == online {
		return nil
	}
	n.Online = online
	if online {
		n.BootTime = time.Now().Unix()
		if s.ctx.Err() == nil && !n.restarting {
			if err := s.listenLocked(name); err != nil {
				return err
			}
		}
		// A node back from the dead runs nothing; HA may fail guests back.
		n.Running, n.HeldDevices = nil, nil // pve-guests' onboot starts some again (pvesim/guests, an OnNodePower)
	} else {
		n.powerLosses++ // its running tasks die (tasks.go)
		s.stopLocked(name)
	}
	for _, f := range s.nodePower { // onboot (guests, added first), HA fencing, recovery and failback (hasim)
		f(name, online)
	}
	s.SaveLocked()
	return nil
}

// ClusterMember and ClusterInfo are `pvecm status` material for the CLI
// stand-ins (pvesim/cluster; clustersim's Pvecm answers them).
type (
	ClusterMember = cluster.Member
	ClusterInfo   = cluster.Info
)

// ClusterLocked is `pvecm status` of the cluster node belongs to, or false
// when node is standalone. The caller holds s.Mu.
func (s *Sim) ClusterLocked(node string) (ClusterInfo, bool) {
	db := s.DBOf(node)
	if db == nil || db.Corosync == nil {
		return ClusterInfo{}, false
	}
	return cluster.PvecmStatus(db.Corosync, s.QuorateLocked(db), func(name string) bool { return s.VotesForLocked(db, name) }), true
}

// ConflictError is a refusal the control API answers with 409.
type ConflictError struct{ Msg string }

func (e *ConflictError) Error() string { return e.Msg }

// BadRequestError is answered with 400 by the control API.
type BadRequestError struct{ Msg string }

func (e *BadRequestError) Error() string { return e.Msg }

// NotFoundError is answered with 404 by the control API.
type NotFoundError struct{ Msg string }

func (e *NotFoundError) Error() string { return e.Msg }

// ReadPmxcfs returns a file of node's /etc/pve (path relative to /etc/pve,
// e.g. "priv/authorized_keys"); false when it does not exist.
func (s *Sim) ReadPmxcfs(node, path string) (string, bool, error) {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	if db == nil {
		return "", false, &NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	p := etcpvefs.CleanPath(path)
	if p == "" {
		return "", false, &BadRequestError{Msg: fmt.Sprintf("invalid /etc/pve path %q", path)}
	}
	switch b, ok, err := etcpvefs.ReadFile(s.etcPveDir(db.ID), p); {
	case err != nil:
		return "", false, err
	case !ok:
		return "", false, nil
	default:
		return string(b), true, nil
	}
}

// WritePmxcfs writes (or, with remove, deletes) a file of node's /etc/pve,
// as a program on node would. Without quorum /etc/pve is read-only (C10)
// and the write fails as a shell redirection would.
func (s *Sim) WritePmxcfs(node, path, content string, remove bool) error {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	if db == nil {
		return &NotFoundError{Msg: fmt.Sprintf("no node %q in this lab", node)}
	}
	p := etcpvefs.CleanPath(path)
	if p == "" {
		return &ConflictError{Msg: fmt.Sprintf("invalid /etc/pve path %q", path)}
	}
	if !s.QuorateLocked(db) {
		return &ConflictError{Msg: fmt.Sprintf("unable to write '/etc/pve/%s': Permission denied", p)}
	}
	if remove {
		if err := etcpvefs.Remove(s.etcPveDir(db.ID), p); err != nil {
			return fmt.Errorf("removing /etc/pve/%s: %w", p, err)
		}
	} else if err := etcpvefs.WriteFile(s.etcPveDir(db.ID), p, []byte(content)); err != nil {
		return err
	}
	s.readFilesLocked(db)
	db.Serial++
	s.SaveLocked()
	return nil
}

// Schema is the official API schema of the simulated version, which every
// request is validated against.
func (s *Sim) Schema() *pveschema.Schema { return s.schema }

// Routes lists the simulated endpoints, "METHOD /schema/path", sorted.
func (s *Sim) Routes() []string { return slices.Sorted(maps.Keys(s.routes)) }

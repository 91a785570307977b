package core

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pmxcfs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/corosync"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/etcpvefs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/storage"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ticket"
)

// Every ConfigDB (one pmxcfs database, one /etc/pve) is a real directory,
// <Dir>/pvesim/etc-pve/<db id>/, laid out as PVE lays out /etc/pve. The lab
// mounts it as each member's /etc/pve (modules-src/lab/pmxcfs), so the
// simulator, the CLI stand-ins and a role editing a file share one state:
//
//   - the simulator writes storage.cfg, user.cfg, priv/token.cfg and
//     corosync.conf whenever its model of them changes (writeFilesLocked);
//   - before every API request, and when the mount reports a change, it reads
//     storage.cfg, corosync.conf and user.cfg's pools back (readFilesLocked):
//     a hand edit is what the API shows next. The access part of user.cfg
//     and token.cfg are written, not read back (see docs/lab.md, known gaps);
//   - every other file (priv/authorized_keys, datacenter.cfg, …) lives only
//     in the directory.

// etcPveDir is the backing directory of DB id.
func (s *Sim) etcPveDir(id string) string { return filepath.Join(s.Cfg.Dir, "pvesim", "etc-pve", id) }

// fileKey indexes Sim.written.
func fileKey(db, rel string) string { return db + "\x00" + rel }

// writeFilesLocked renders the model of db into its directory; a file is
// rewritten only when its rendering changed since the simulator last wrote
// (or read) it, so a hand edit stays until the model changes.
func (s *Sim) writeFilesLocked(db *ConfigDB) error {
	dir := s.etcPveDir(db.ID)
	if err := etcpvefs.MakeDirs(dir); err != nil {
		return err
	}
	// Files of an earlier simulator that kept them in state.json.
	for rel, content := range db.Files {
		if err := etcpvefs.WriteFile(dir, rel, []byte(content)); err != nil {
			return err
		}
	}
	db.Files = nil
	files := map[string][]byte{
		"storage.cfg":    []byte(storage.RenderCfg(db.Storage, db.StorageOrder)),
		"user.cfg":       []byte(access.RenderUserCfg(&db.Access, db.Pools, s.Cfg.Version)),
		"priv/token.cfg": []byte(db.Access.RenderTokenCfg()),
	}
	if db.Corosync != nil {
		files["corosync.conf"] = []byte(corosync.Render(db.Corosync))
	}
	// Written once, then left to whoever edits them. The auth key pair and
	// pve-www.key sign and check tickets and CSRF tokens (pvesim/ticket); a
	// node that swaps /etc/pve on join invalidates every ticket it issued.
	once := map[string][]byte{
		"datacenter.cfg": []byte("keyboard: en-us\n"), // the installer's (reconstruction)
	}
	for _, rel := range []string{authPrivRel, wwwKeyRel} {
		if _, done := s.written[fileKey(db.ID, rel)]; done {
			continue
		}
		if etcpvefs.Exists(dir, rel) {
			continue
		}
		keys, err := ticket.InitialFiles(rel)
		if err != nil {
			return fmt.Errorf("generating /etc/pve/%s: %w", rel, err)
		}
		maps.Copy(once, keys)
	}
	if ca, err := s.CALocked(db.ID); err == nil {
		once["pve-root-ca.pem"] = ca.PEM
		if key, err := os.ReadFile(filepath.Join(nodecert.CADir(s.Cfg.Dir), db.ID+".key")); err == nil {
			once["priv/pve-root-ca.key"] = key
		}
	}
	for rel, data := range once {
		k := fileKey(db.ID, rel)
		if _, done := s.written[k]; done {
			continue // a file deleted since is not the simulator's to bring back
		}
		if !etcpvefs.Exists(dir, rel) {
			if err := etcpvefs.WriteFile(dir, rel, data); err != nil {
				return err
			}
		}
		s.written[k] = data
	}
	// nodes/<member>/ for every node whose /etc/pve this is.
	for _, name := range s.sortedNodeNames() {
		n := s.State.Nodes[name]
		if n.DB != db.ID {
			continue
		}
		if err := etcpvefs.MakeNodeDirs(dir, name); err != nil {
			return err
		}
		if rt := s.nodes[name]; rt != nil && rt.cert != nil && !n.FinishPending {
			files["nodes/"+name+"/pve-ssl.pem"] = rt.cert.PEM
			if key, err := os.ReadFile(filepath.Join(nodecert.Dir(s.Cfg.Dir, name), fmt.Sprintf("pve-ssl.%d.key", n.CertGen))); err == nil {
				files["nodes/"+name+"/pve-ssl.key"] = key
			}
		}
	}
	for rel, data := range files {
		k := fileKey(db.ID, rel)
		if w, ok := s.written[k]; ok && bytes.Equal(w, data) {
			continue
		}
		if err := etcpvefs.WriteFile(dir, rel, data); err != nil {
			return err
		}
		s.written[k] = data
	}
	s.settleUserCfgLocked(db, files["user.cfg"], files["priv/token.cfg"])
	if db.Corosync == nil {
		k := fileKey(db.ID, "corosync.conf")
		if _, ok := s.written[k]; ok {
			_ = os.Remove(filepath.Join(dir, "corosync.conf"))
			delete(s.written, k)
		}
	}
	return nil
}

// ReadFilesLocked is readFilesLocked for a backend that let go of Mu and
// must see the files as a node now shows them (pvesim/storagesim: pvestatd,
// a create slowed inside storage.cfg's lock).
func (s *Sim) ReadFilesLocked(db *ConfigDB) { s.readFilesLocked(db) }

// readFilesLocked takes storage.cfg, corosync.conf (corosyncconf.go) and
// the pools of user.cfg from db's directory when they differ from what the
// simulator last wrote.
func (s *Sim) readFilesLocked(db *ConfigDB) {
	if db == nil {
		return
	}
	dir := s.etcPveDir(db.ID)
	if b, err := os.ReadFile(filepath.Join(dir, "storage.cfg")); err == nil {
		k := fileKey(db.ID, "storage.cfg")
		if w, ok := s.written[k]; !ok || !bytes.Equal(w, b) {
			db.Storage, db.StorageOrder = storage.Parse(string(b), s.StorageCreateSchema())
			s.written[k] = b
			db.Serial++
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "corosync.conf")); err == nil {
		k := fileKey(db.ID, "corosync.conf")
		if w, ok := s.written[k]; ok && !bytes.Equal(w, b) {
			// A refused file (older, unparsable) stays as written, as pmxcfs
			// leaves it: it only logs "local corosync.conf is newer".
			if applied, _ := corosync.Adopt(db.Corosync, string(b)); applied {
				db.Serial++
			}
			s.written[k] = b
		}
	}
	s.readUserCfgLocked(db, dir)
}

func (s *Sim) sortedNodeNames() []string {
	names := make([]string, 0, len(s.State.Nodes))
	for n := range s.State.Nodes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Backend of the lab's /etc/pve mounts (modules-src/lab/pmxcfs).

// EtcPveDirOfDB is the directory of the pmxcfs database dbID, whichever
// nodes show it.
func (s *Sim) EtcPveDirOfDB(dbID string) string { return s.etcPveDir(dbID) }

// CopyWrittenLocked records DB to's files as written like DB from's, for a
// copy of from's directory (delnode's stale /etc/pve of the removed node):
// the copy's files are rewritten only when its model changes, as the
// original's. Exported for pvesim/clustersim; the record is core's.
func (s *Sim) CopyWrittenLocked(from, to string) {
	for k, v := range s.written {
		if rest, ok := strings.CutPrefix(k, from+"\x00"); ok {
			s.written[fileKey(to, rest)] = v
		}
	}
}

// EtcPveDir is the directory node's /etc/pve shows right now: its own
// before a join, the cluster's after.
func (s *Sim) EtcPveDir(node string) string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	n := s.State.Nodes[node]
	if n == nil {
		return filepath.Join(s.Cfg.Dir, "pvesim", "etc-pve", "unknown-node")
	}
	return s.etcPveDir(n.DB)
}

// Quorate tells whether node's /etc/pve is writable (C10).
func (s *Sim) Quorate(node string) bool {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	return db != nil && s.QuorateLocked(db)
}

// PmxcfsChanged is told by the mount that a program on node changed rel:
// storage.cfg and user.cfg are read back at once.
func (s *Sim) PmxcfsChanged(node, rel string) {
	if rel != "storage.cfg" && rel != "user.cfg" && rel != "priv/token.cfg" && rel != "corosync.conf" {
		return
	}
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if db := s.DBOf(node); db != nil {
		s.readFilesLocked(db)
		if err := s.State.save(s.Cfg.Dir); err != nil {
			s.log.AddError(err)
		}
	}
}

// GeneratedPmxcfsFile is the content of a generated root file of node's
// /etc/pve, in pmxcfs's formats (status.c cfs_create_*_msg).
func (s *Sim) GeneratedPmxcfsFile(node, name string) []byte {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	db := s.DBOf(node)
	if db == nil {
		return nil
	}
	switch name {
	case ".members":
		if db.Corosync == nil {
			return etcpvefs.Members(node, db.Serial, nil)
		}
		c := db.Corosync
		status := &etcpvefs.Cluster{Name: c.ClusterName, ConfigVersion: c.ConfigVersion, Quorate: s.QuorateOnLocked(db, node)}
		for _, m := range c.Nodes {
			e := etcpvefs.Member{Name: m.Name, NodeID: m.NodeID, Online: s.VotesForLocked(db, m.Name)}
			if n := s.State.Nodes[m.Name]; n != nil {
				e.IP, e.HasIP = n.Addr, true
			}
			status.Nodes = append(status.Nodes, e)
		}
		return etcpvefs.Members(node, db.Serial, status)
	case ".version":
		return etcpvefs.Version(s.started.Unix(), db.Serial)
	case ".vmlist":
		// cfs_create_vmlist_msg over the guest configurations in /etc/pve.
		return etcpvefs.VMList(db.Serial, pmxcfs.ScanVMConfigs(s.etcPveDir(db.ID)))
	case ".clusterlog":
		return etcpvefs.ClusterLog()
	}
	return []byte{}
}

// ---- Files of a DB's /etc/pve, and its .vmlist ----

// ReadEtcPve, WriteEtcPve and RemoveEtcPve are the one place the models
// and the section config files (sectioncfg.go) touch /etc/pve files: the
// DB's directory, which the lab mounts as every member's /etc/pve, so a
// config edited on a node is what the API reads next.
func (s *Sim) ReadEtcPve(db *ConfigDB, rel string) (string, bool) {
	b, ok, err := etcpvefs.ReadFile(s.etcPveDir(db.ID), rel)
	if err != nil || !ok {
		return "", false
	}
	return string(b), true
}

func (s *Sim) WriteEtcPve(db *ConfigDB, rel, content string) {
	if err := etcpvefs.WriteFile(s.etcPveDir(db.ID), rel, []byte(content)); err != nil {
		s.log.AddError(err)
	}
	db.Serial++
}

func (s *Sim) RemoveEtcPve(db *ConfigDB, rel string) {
	if err := etcpvefs.Remove(s.etcPveDir(db.ID), rel); err != nil {
		s.log.AddError(err)
	}
	db.Serial++
}

// VMEntry is one line of pmxcfs's .vmlist: which node holds which guest.
type VMEntry = etcpvefs.VMEntry

// VMListLocked is the cluster's .vmlist, sorted by VMID (etcpvefs.Guests).
func (s *Sim) VMListLocked(db *ConfigDB) []VMEntry { return etcpvefs.Guests(s.etcPveDir(db.ID)) }

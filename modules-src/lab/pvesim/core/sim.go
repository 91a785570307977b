package core

import (
	"context"
	"crypto"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/faults"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/flocktable"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/nodecert"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/reqlog"
)

// Defaults of Config's durations (zero means default, negative means none).
const (
	DefaultAuthDelay     = 3 * time.Second // pveproxy's delay on every 401
	DefaultTaskDuration  = 2 * time.Second
	DefaultRestartWindow = 3 * time.Second
	DefaultLockTimeout   = 10 * time.Second // cfs_lock and pvecm.lock
	DefaultPort          = 8006
)

// Config describes a lab's simulated cluster.
type Config struct {
	Version int          // PVE major version: 8 or 9
	Dir     string       // lab directory; state and certificates go to <Dir>/pvesim
	Nodes   []NodeConfig // every node, standalone at creation
	Port    int          // API port on every node address; default 8006

	// StorageCheck, when set, activates a storage on a node the way the
	// storage plugin would (e.g. "is the ZFS pool there?", pitfall Z7): nil
	// means active. Node-local state lives outside the simulator (the lab
	// node's filesystem), hence a hook. Create fails with its error on the
	// node that handles the request; status shows active 0 elsewhere. It
	// runs under the simulator's lock: it must not call back into the Sim.
	StorageCheck func(node string, st StorageInfo) error
	// StorageActivate, when set, is the plugin's activate_storage on a node,
	// which may change the node (a dir storage creates its path and content
	// subdirectories). It runs on create and before a content listing, in
	// place of StorageCheck; status keeps the read-only StorageCheck.
	StorageActivate func(node string, st StorageInfo) error
	// StorageUsage, when set, reports an active storage's real sizes on a
	// node (df of a directory, the ZFS pool's available/used); otherwise
	// status shows fixed sizes (also when it returns a zero StorageUsage).
	StorageUsage func(node string, st StorageInfo) (StorageUsage, error)
	// StorageContent, when set, lists what is really on an active storage
	// of a node (list_volumes); otherwise every storage is empty.
	StorageContent func(node string, st StorageInfo) ([]Volume, error)
	// StorageRemove, when set, removes a file volume (volname such as
	// "snippets/user.yaml") from a storage of a node, as the plugin's
	// free_image unlinks it; otherwise deleting one fails.
	StorageRemove func(node string, st StorageInfo, volname string) error
	// StorageUpload, when set, copies an uploaded file (src, a file of the
	// host) to dest in a node's filesystem, creating its directory: the
	// upload task's cp (or scp to another node). It runs in the task's
	// worker, without the simulator's lock, and must not call into the
	// Sim; without it an upload's task fails.
	StorageUpload func(node string, st StorageInfo, dest, src string) error
	// BackupArchive, when set, reads a backup volume's file (volname such
	// as "backup/vzdump-lxc-200-….tar.zst") on a node: the bytes PVE's tar
	// reads for extractconfig and a container restore. Without it, or when
	// it fails, the archive is a missing file. It runs under the
	// simulator's lock, like StorageCheck.
	BackupArchive func(node string, st StorageInfo, volname string) ([]byte, error)
	// NodeVersion, when set, reports what the node's packages say (what
	// pveversion prints); otherwise /version and node status show the
	// version the lab installs first. All these hooks run under the
	// simulator's lock, like StorageCheck.
	NodeVersion func(node string) (NodeVersion, error)
	// ZFS, when set, runs `zfs args…` on a node (ZFSPoolPlugin's
	// zfs_request): guest volumes on a zfspool storage then are datasets
	// and zvols in the node's ZFS (pvesim/volumes, zvols.go). Its error is zfs's message.
	ZFS func(node string, args ...string) error

	AuthDelay     time.Duration // delay of every 401 (real PVE: 3 s)
	TaskDuration  time.Duration // how long an ordinary task runs
	RestartWindow time.Duration // API down time of a joining node (C5)
	LockTimeout   time.Duration // wait for a busy lock before "got timeout"
	// CloneDuration is how long a full clone copies one disk (linked
	// clones and cloud-init drives take no copy time); default 2×TaskDuration.
	CloneDuration time.Duration
	// AllocDuration is how long allocating one volume holds its storage's
	// lock (pve-storage cluster_lock_storage): many clones at once queue on
	// it and the last ones time out after LockTimeout (K13). Default 1 s.
	AllocDuration time.Duration
	// ReplicationInterval is the lab's minute for replication: how often
	// each node's pvescheduler runs pvesr over its due jobs, and the unit of
	// "*/N" schedules (a job marked for removal vanishes at the next run);
	// default 1 min, as pvescheduler (pve-manager PVE/Service/pvescheduler.pm).
	ReplicationInterval time.Duration
	// HADelay is a CRM round: how long the HA stack takes to act on a
	// request (start, stop, a new resource, a rule) and the spacing of its
	// rounds; default 10 s, pve-ha-manager CRM.pm's $max_time (H4).
	HADelay time.Duration
	// FenceDelay is how long after a node goes down its HA guests are
	// recovered elsewhere: default 60 s, NodeStatus.pm $fence_delay (H7;
	// seed 003 measured 1 min 14 s from power-off to the guest running).
	FenceDelay time.Duration
	// FailbackDelay is how long after a node returns the CRM counts it as a
	// target again, so its preferred guests migrate home: default 2 min,
	// seed 003's measured failback (H7; a reconstruction of the
	// migration's duration, pvesim/hasim crm.go).
	FailbackDelay time.Duration
	// StatdInterval is a pvestatd cycle: how often each node that is up
	// activates its enabled storages (storage_info from
	// update_storage_status), so a dir storage's content subdirectories
	// appear without an API call; default 10 s, pvestatd's $updatetime.
	StatdInterval time.Duration
	// AgentTimeout is how long a guest agent call on a running VM waits
	// for an agent that never answers (no lab guest runs one) before
	// "QEMU guest agent is not running" (K20); default DefaultAgentTimeout.
	AgentTimeout time.Duration
	// TicketHash is the digest the nodes sign and verify tickets with
	// (PKCS#1 v1.5); zero is SHA-1, what PVE 8 and 9 do (pvesim/ticket).
	// Another value is a hypothetical node, for testing local mode's
	// second form of ticket; no Debian release of PVE signs that way.
	TicketHash crypto.Hash
}

// NodeConfig names a node and the loopback address its API listens on.
type NodeConfig struct {
	Name string // pve01
	Addr string // 127.77.S.11 (IP only; the port is Config.Port)
}

func (c Config) Dur(d, def time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d == 0:
		return def
	}
	return d
}

// Sim is a running (or stopped) simulated cluster.
type Sim struct {
	Cfg    Config
	schema *pveschema.Schema
	lock   *os.File // flock on <Dir>/pvesim/lock: one simulator per lab

	Mu      sync.Mutex // guards st, nodes, serving state
	State   *State
	nodes   map[string]*nodeRuntime
	ctx     context.Context
	cancel  context.CancelFunc
	Workers sync.WaitGroup // task workers and restart timers

	// written holds what the simulator last wrote to (or read from) each
	// /etc/pve file it manages (etcpve.go), keyed by fileKey.
	written map[string][]byte
	started time.Time               // pmxcfs start time (.version)
	cas     map[string]*nodecert.CA // pve-root-ca per DB, loaded on demand

	// In-flight API requests, so Close returns only when none can still
	// touch the state or the lab directory.
	reqMu   sync.Mutex
	closing bool
	reqWG   sync.WaitGroup
	// inFlight counts the requests being handled (WaitIdle).
	inFlight atomic.Int64
	faults   *Faults
	log      *reqlog.Log

	// Flocks are the nodes' flocks (/var/lock/qemu-server, storages,
	// storage.cfg's cfs lock), under Mu; the wait for one is flock.go's.
	Flocks flocktable.Table
	// The HA model's runtime state (pvesim/guests, hamodel.go), under Mu;
	// not in State, so never saved.
	HAErrors  map[string]bool        // HA services in error state, "db/sid"
	HAMotions map[string]string      // CRM migrations/relocations under way, "db/sid"
	remotes   map[string]RemoteStore // PBS and CIFS servers the lab offers, by type/server (storageremote.go)
	// how an upload's body is received (HandleUpload, upload.go)
	receiveUpload UploadReceiver

	routes   map[string]Handler          // "METHOD /schema/path" → its backend's handler (router.go)
	controls map[string]http.HandlerFunc // the backends' control API routes by pattern (router.go)
	loops    []func()                    // the backends' background loops, run by Start (router.go)
	// the backends' reactions to a node's power (OnNodePower) and to an HA
	// request (OnHARequest), run under Mu (router.go)
	nodePower []func(node string, online bool)
	haRequest []func(dbID string)
	journal   []string // the nodes' journal lines (journal.go)
}

// nodeRuntime is the serving side of a node (not persisted).
type nodeRuntime struct {
	name string
	cert *nodecert.Cert
	srv  *http.Server
	ln   net.Listener
}

// New loads the lab's simulator state from cfg.Dir, or creates it (fresh
// standalone nodes, new certificates, new root password and lab token).
// It holds an exclusive lock on the lab until Close.
func New(cfg Config) (*Sim, error) {
	if cfg.Version != 8 && cfg.Version != 9 {
		return nil, fmt.Errorf("PVE version %d is not simulated: use 8 or 9", cfg.Version)
	}
	if cfg.Dir == "" || len(cfg.Nodes) == 0 {
		return nil, errors.New("pvesim: Config needs Dir and at least one node")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultPort
	}
	schema, err := pveschema.Load(cfg.Version)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "pvesim"), 0o700); err != nil {
		return nil, fmt.Errorf("create simulator dir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(cfg.Dir, "pvesim", "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open simulator lock: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("another simulator already runs lab %s: %w", cfg.Dir, err)
	}
	s := &Sim{Cfg: cfg, schema: schema, lock: lock, nodes: map[string]*nodeRuntime{},
		written: map[string][]byte{}, started: time.Now(), cas: map[string]*nodecert.CA{}, faults: faults.New(), log: reqlog.New(),
		routes: map[string]Handler{}, controls: map[string]http.HandlerFunc{}}
	s.handleBuiltins()
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.loadOrInit(); err != nil {
		s.releaseLock()
		return nil, err
	}
	return s, nil
}

func (s *Sim) loadOrInit() error {
	st, err := loadState(s.Cfg.Dir)
	switch {
	case err == nil:
		if st.Version != s.Cfg.Version {
			return fmt.Errorf("lab %s simulates PVE %d, not %d: recreate the lab to change version", s.Cfg.Dir, st.Version, s.Cfg.Version)
		}
		// Tasks that ran when the simulator stopped died with it; a create or
		// join cut short still brought corosync up, as after a real reboot.
		for _, n := range st.Nodes {
			if n.CorosyncUpAt > time.Now().UnixMilli() {
				n.CorosyncUpAt = time.Now().UnixMilli()
			}
			for _, t := range n.Tasks {
				t.Abandon(NowUnix())
			}
		}
	case errors.Is(err, os.ErrNotExist):
		st = &State{Version: s.Cfg.Version, Nodes: map[string]*Node{}, DBs: map[string]*ConfigDB{},
			RootPassword: RandomHex(12), TokenSecret: NewUUID(), NextPID: 4000}
	default:
		return err
	}
	for _, nc := range s.Cfg.Nodes {
		if nc.Name == "" || net.ParseIP(nc.Addr) == nil {
			return fmt.Errorf("node %q needs a name and an IP address (got %q)", nc.Name, nc.Addr)
		}
		n := st.Nodes[nc.Name]
		if n == nil {
			db := newDB(st, nc.Name)
			st.DBs[db.ID] = db
			n = &Node{Name: nc.Name, Online: true, DB: db.ID, BootTime: NowUnix()}
			st.Nodes[nc.Name] = n
		}
		n.Addr = nc.Addr
		ca, err := s.CALocked(n.DB)
		if err != nil {
			return err
		}
		cert, err := nodecert.LoadOrCreate(s.Cfg.Dir, n.Name, n.Addr, n.CertGen, ca)
		if err != nil {
			return err
		}
		s.nodes[n.Name] = &nodeRuntime{name: n.Name, cert: cert}
	}
	s.State = st
	for _, id := range sortedKeys(st.DBs) {
		db := st.DBs[id]
		s.readFilesLocked(db) // a restarted lab: the files win
		if err := s.writeFilesLocked(db); err != nil {
			return err
		}
	}
	return st.save(s.Cfg.Dir)
}

// Start listens on every online node's Addr:Port. It returns once all
// listeners are bound; requests are then served until Close or ctx ends.
func (s *Sim) Start(ctx context.Context) error {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	for name, n := range s.State.Nodes {
		if !n.Online {
			continue
		}
		if err := s.listenLocked(name); err != nil {
			s.stopAllLocked()
			return err
		}
	}
	s.startLoops()
	s.Workers.Add(1)
	go func() {
		defer s.Workers.Done()
		select {
		case <-ctx.Done():
			s.Mu.Lock()
			s.stopAllLocked()
			s.Mu.Unlock()
		case <-s.ctx.Done():
		}
	}()
	return nil
}

func (s *Sim) listenLocked(name string) error {
	rt := s.nodes[name]
	if rt == nil || rt.srv != nil {
		return nil
	}
	n := s.State.Nodes[name]
	addr := net.JoinHostPort(n.Addr, strconv.Itoa(s.Cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("node %s cannot listen on %s (is another lab using this slot?): %w", name, addr, err)
	}
	cert := rt.cert
	tlsLn := tls.NewListener(ln, &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert.TLS},
		NextProtos:   []string{"http/1.1"}, // pveproxy speaks HTTP/1.1 only
	})
	srv := &http.Server{
		Handler:           s.nodeHandler(name),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nullLogger(),
	}
	rt.srv, rt.ln = srv, ln
	s.Workers.Add(1)
	go func() {
		defer s.Workers.Done()
		_ = srv.Serve(tlsLn)
	}()
	return nil
}

// nullLogger drops what net/http would log of a node's connections.
func nullLogger() *log.Logger { return log.New(io.Discard, "", 0) }

func (s *Sim) stopLocked(name string) {
	rt := s.nodes[name]
	if rt == nil || rt.srv == nil {
		return
	}
	_ = rt.srv.Close() // drops open connections too, like a daemon restart
	// The listener too, at once: srv.Close only closes the listeners Serve
	// has registered, and Serve runs in its own goroutine, so right after a
	// start the port could still be bound when the node comes back (a power
	// cycle failed "address already in use" in CI).
	if rt.ln != nil {
		_ = rt.ln.Close()
	}
	rt.srv, rt.ln = nil, nil
}

// StopAPILocked takes node's API down for a restart: requests fail as on a
// node restarting until StartAPILocked. Exported for pvesim/clustersim's
// finish_join, which restarts pve-cluster and pveproxy on the joiner (C5);
// the listeners are core's.
func (s *Sim) StopAPILocked(node string) {
	s.State.Nodes[node].restarting = true
	s.stopLocked(node)
}

// StartAPILocked ends StopAPILocked's restart. With cert (finish_join's new
// certificate) node serves again on it if it is online; without one (none
// could be made) its listeners stay down, as pveproxy's without a
// certificate. A listener that cannot come back is an internal error.
func (s *Sim) StartAPILocked(node string, cert *nodecert.Cert) {
	s.State.Nodes[node].restarting = false
	if cert == nil {
		return
	}
	s.nodes[node].cert = cert
	if s.State.Nodes[node].Online {
		if err := s.listenLocked(node); err != nil {
			s.log.AddError(err)
		}
	}
}

func (s *Sim) stopAllLocked() {
	for name := range s.nodes {
		s.stopLocked(name)
	}
}

// Close stops every listener and task worker, saves the state and releases
// the lab lock. Running tasks are recorded as died ("unexpected status") when
// the lab is loaded again. Calling Close twice is harmless.
func (s *Sim) Close() error {
	s.reqMu.Lock()
	already := s.closing
	s.closing = true
	s.reqMu.Unlock()
	if already {
		return nil // the state was saved and the lab released by the first Close
	}
	s.cancel()
	s.Mu.Lock()
	s.stopAllLocked()
	s.Mu.Unlock()
	s.Workers.Wait()
	s.reqWG.Wait()
	s.Mu.Lock()
	err := s.State.save(s.Cfg.Dir)
	s.Mu.Unlock()
	s.releaseLock()
	return err
}

func (s *Sim) releaseLock() {
	if s.lock != nil {
		_ = syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		s.lock.Close()
		s.lock = nil
	}
}

// SaveLocked persists the state; a failure is logged into the request log's
// error channel rather than failing the API call that already happened.
func (s *Sim) SaveLocked() {
	for _, id := range sortedKeys(s.State.DBs) {
		if err := s.writeFilesLocked(s.State.DBs[id]); err != nil {
			s.log.AddError(err)
		}
	}
	if err := s.State.save(s.Cfg.Dir); err != nil {
		s.log.AddError(err)
	}
}

// enter registers an in-flight request; false once the simulator closes.
func (s *Sim) enter() bool {
	s.reqMu.Lock()
	defer s.reqMu.Unlock()
	if s.closing {
		return false
	}
	s.reqWG.Add(1)
	s.inFlight.Add(1)
	return true
}

// WaitIdle waits until no API request is being handled, so that the
// request log holds every request sent so far (a request is logged when
// its handler returns: a slow create inside its lock shows up only then).
func (s *Sim) WaitIdle() {
	for s.inFlight.Load() > 0 && s.Sleep(5*time.Millisecond) {
	}
}

// Sleep waits d or until the simulator closes; false means closed.
func (s *Sim) Sleep(d time.Duration) bool {
	if d <= 0 {
		return s.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.ctx.Done():
		return false
	}
}

// CALocked returns the root CA of a DB (pve-root-ca.pem), loading or
// creating it once. Exported for pvesim/clustersim's finish_join, which
// signs the joiner's new certificate with the cluster's CA.
func (s *Sim) CALocked(dbID string) (*nodecert.CA, error) {
	if ca := s.cas[dbID]; ca != nil {
		return ca, nil
	}
	ca, err := nodecert.LoadOrCreateCA(s.Cfg.Dir, dbID)
	if err != nil {
		return nil, err
	}
	s.cas[dbID] = ca
	return ca, nil
}

// DropDBLocked forgets a DB replaced by a join, with its CA and its
// directory. Exported for pvesim/clustersim's finish_join (the joiner's
// cfs_unlink_db_unsafe); the DB's files and CA are core's to manage.
func (s *Sim) DropDBLocked(dbID string) {
	delete(s.State.DBs, dbID)
	delete(s.cas, dbID)
	nodecert.RemoveCA(s.Cfg.Dir, dbID)
	for k := range s.written {
		if strings.HasPrefix(k, dbID+"\x00") {
			delete(s.written, k)
		}
	}
	if err := os.RemoveAll(s.etcPveDir(dbID)); err != nil {
		s.log.AddError(fmt.Errorf("removing the replaced /etc/pve %s: %w", dbID, err))
	}
}

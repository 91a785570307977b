// Package pvesim simulates a Proxmox VE 8 or 9 cluster of N nodes well
// enough that the collection's modules cannot tell it from the real API for
// the endpoints they use — including the ugly parts (pitfalls C4–C6, C10,
// K1–K6, K8–K11, K13, K16, K18–K20, H1–H8, S1, S2, Z7) — so that "green is
// not proof" can be tested.
//
// # Shape
//
// Three layers, moto-style. pvesim/core holds the Sim: its state model
// (state.go), the schema-validating HTTP layer and router (httpapi.go,
// router.go), tasks, faults and the request log. Backends are packages
// that embed the core's Sim and register their endpoints with Handle
// (pvesim/accesssim, backupsim, poolsim, …, and the lab's control API,
// pvesim/controlapi, through HandleControl; this package's New wires them);
// a backend imports core and the rule packages, never another backend. The
// rule packages (below) hold PVE's knowledge that needs no Sim. The models
// the backends share are packages between them and core: pvesim/volumes
// (guest volumes, zvols) and pvesim/guests (a guest's config, running
// state and operations, and what guests read of HA, replication jobs and
// pools), each a Model embedding the Sim; membership and joins are core's
// (docs/lab.md has the map). File names in this comment are core's unless
// a package is named.
//
// Each request is: fault injection → parameter parsing (form or JSON body,
// query merged in and winning) → schema lookup
// (501 `Method 'GET /x' not implemented`) → authentication (401, delayed
// like pveproxy) → CSRF for ticket writes → validation against the lab
// version's official schema (400 `Parameter verification failed.` with
// `errors`) → proxyto {node} → the schema's permission check (403
// `Permission check failed (...)`; methods without permissions are
// root@pam-ticket only) → the handler, under one state lock. Errors carry
// the message as HTTP reason phrase and `{"data":null,"message":"…\n"}`.
//
// The state mirrors PVE's split: per-node things (online switch, certificate
// generation, task list) on Node, and everything pmxcfs holds — corosync.conf,
// storage.cfg, pools, users/tokens/ACLs — on a ConfigDB. A standalone node
// has its own DB; a join replaces the joiner's DB by the cluster's, which is
// why its local storage.cfg, tokens and tickets vanish (S1, Z7).
//
// PVE knowledge that needs no Sim lives in packages below this one, each
// naming the PVE source it follows (issue 27 §1): access (pve-access-control:
// users, tokens, groups, roles and ACLs, user.cfg and token.cfg, the
// privileges per version, permission evaluation and the schema's checks;
// the access*.go handlers, their lock and persistence stay here), ha
// (pve-ha-manager: the HA files' checks, views and migration, the CRM's
// decisions and the status views' shape; the handlers, the CRM's timers
// and what they do to guests are pvesim/hasim's), replication
// (pve-guest-common: replication.cfg's jobs, a job's state, next_sync and
// the run order, the status view; the scheduler, the runs and the
// endpoints stay here), tasks (UPIDs, a task's end, its views and the task
// list's filters; the workers stay here), storage (pve-storage's
// storage.cfg, volume names and access rules), cluster (pve-cluster:
// quorum, a join's and a removal's checks and nodelist edits, the
// membership views; the handlers, the join task, its locks and the files
// stay here), ticket (tickets, CSRF tokens and the authkey's rotation
// rule; the key files stay here), guestconf (a guest's config file),
// corosync, nodecert, vzdump, and pvecommon (the pve-common helpers they
// share).
//
// Every ConfigDB is also a directory, <Dir>/pvesim/etc-pve/<db id>/, laid
// out as PVE's /etc/pve (core/etcpve.go, over pvesim/etcpvefs): the lab
// mounts it as the members' /etc/pve (modules-src/lab/pmxcfs), the
// simulator writes storage.cfg, user.cfg, priv/token.cfg and corosync.conf
// when its model changes and reads storage.cfg and user.cfg's pools back
// before every request, so a file edited on a node is what the API shows
// next. EtcPveDir, Quorate, GeneratedPmxcfsFile (.members, .version,
// .vmlist…) and PmxcfsChanged are the mount's backend.
//
// # Guests, replication, HA
//
// A guest is its config file, nodes/<node>/qemu-server/<vmid>.conf in the
// DB's directory, in qemu-server's format (pvesim/guestconf): the API parses it
// on every read, its digest is the file's SHA-1, the VM list is pmxcfs's
// scan of those files, and a file edited on a lab node is what the API
// shows next. Disks are volumes with sizes on their storage (pvesim/volumes):
// local storages keep them per node, shared ones per cluster, named as each
// plugin names them (vm-100-disk-0, base-… for templates, base-…/vm-… for
// linked clones, 100/vm-100-disk-0.raw on dir/nfs); on a zfspool storage
// they are also zvols and datasets in the node's ZFS when Config.ZFS is set
// (volumes/zvols.go). Running VMs are per node.
// Work on a guest takes its flock /var/lock/qemu-server/lock-<vmid>.conf on
// the node (guests/guestlock.go): a synchronous call waits for it up to LockTimeout
// and then answers PVE's "can't lock file … - got timeout".
//
//   - VMs (pvesim/qemusim; qemu-server's rules on config values through
//     pvesim/qemuserver: drives, NICs, hotplug, permissions, cloud-init,
//     clone's choices, a new drive's storage; the SDN paths a NIC's
//     bridge is checked on through pvesim/guesthelpers): create (qmcreate: NICs get BC:24:11 MACs, "store:N"
//     allocates N GiB, "store:cloudinit" the cloud-init drive), config GET
//     (pending values unless current=1), PUT (sync, under the lock) and POST
//     (qmconfig task), pending, status/current, start/stop/shutdown tasks,
//     template (refused before any task when locked, a template or running,
//     then a qmtemplate task: template: 1, disks to base volumes), resize (a
//     task, grow only, K11), destroy. A NIC sent without
//     macaddr gets a new MAC, as PVE's parse_net does (K16); a running VM
//     hotplugs NICs, disks and fast-plug options and keeps the rest in
//     [PENDING] until it starts again (K10).
//   - Clone (qemusim/clone.go): qemu-server's clone_vm step by step — K1–K4, K13,
//     K18; see the file's comment.
//   - Guest agent (qemusim/agent.go): ping and network-get-interfaces fail as
//     agent_available does — "No QEMU guest agent configured", "VM N is
//     not running" at once, "QEMU guest agent is not running" after
//     AgentTimeout on a running VM (no lab guest runs an agent, K20).
//     A missing pool on create/clone is check_pool_exist's 403 (K6).
//   - Migration (qemusim/migrate.go): offline moves local volumes; a running VM
//     needs online and with-local-disks; linked clones stay; an HA guest's
//     migration is a hamigrate request.
//   - /cluster/nextid: the lowest free VMID, as a string; nothing reserved.
//   - Replication (pvesim/replsim): /etc/pve/replication.cfg;
//     each node's scheduler runs pvesr every ReplicationInterval over all
//     its due jobs (a new job is due at once), syncing ZFS volumes (a
//     container's subvol-… too) to a replica on the target, keeping
//     last_sync/fail_count per node, and switching the jobs of a guest HA
//     recovered onto it (H1, H6).
//   - HA (pvesim/hasim, through pvesim/ha): ha/resources.cfg, groups.cfg (PVE
//     8; refused on 9 once migrated, H2), rules.cfg (PVE 9, with order,
//     errors and an upgraded cluster's ha-group-* rules until the CRM
//     migrates them); the CRM acts in rounds of HADelay: requested states
//     (hastart/hastop, H4) and placement on the preferred node of a group
//     or rule; a node powered off is fenced FenceDelay later and its HA
//     guests recover on their preferred node (H3, H7), a VM with a fresh
//     cloud-init drive; a returned node is a target again FailbackDelay
//     later, and a node powering on starts its onboot guests. A guest
//     recovered where its local disks have no replica cannot start: error
//     state, kept until disabled (H8).
//   - Containers (pvesim/lxcsim; pve-container's rules on config values through
//     pvesim/pvecontainer: volume keys and mount points, NICs, what a
//     running CT hot-plugs, the update's refusals,
//     check_ct_modify_config_perm, create's defaults, restore's merge),
//     the basics: create
//     (vzcreate), config read and synchronous update, status,
//     start/stop/shutdown, destroy, HA ct:N.
//
// State is saved as JSON (<Dir>/pvesim/state.json, 0600: it holds the lab's
// root password and token secret) after every change; certificates live in
// <Dir>/pvesim/nodes/<node>/, signed by the root CA of the node's /etc/pve
// (<Dir>/pvesim/ca/<db>.pem, PVE's pve-root-ca.pem): pin a node by its
// fingerprint, or trust the CA (K14) — a join re-signs the joiner with the
// cluster's CA. New takes an exclusive flock on
// <Dir>/pvesim/lock: one simulator per lab. Restarting the simulator keeps
// state and certificates; only a join regenerates a node's certificate (C5).
//
// # Go API
//
//	s, err := pvesim.New(pvesim.Config{Version: 9, Dir: labDir,
//		Nodes: []pvesim.NodeConfig{{Name: "pve01", Addr: "127.77.1.11"}, …},
//		AuthDelay: 3 * time.Second}) // zero durations mean PVE-like defaults, negative means none
//	err = s.Start(ctx)               // listens on every online node's Addr:8006 (Config.Port)
//	defer s.Close()
//	info, _ := s.Node("pve01")       // URL, Fingerprint (AA:BB:…), CertPEM, CAPEM, Online, Serving, Cluster
//	pw := s.RootPassword()           // root@pam, same on every node
//	id, secret := s.LabToken()       // root@pam!lab, privilege separation off
//	s.AddToken(node, TokenSpec{…}); s.AddUser(node, user, pw); s.Grant(node, path, ugid, role, propagate) // pveum (accesssim.Pveum)
//	s.SetOnline("pve03", false)      // power off: API gone, vote lost (C10)
//	s.Faults().Add(pvesim.Fault{Node: "pve02", Method: "GET", Path: "/nodes/*/tasks/*/status",
//		Kind: pvesim.FaultError, Status: 500, Message: "got timeout", Count: 2})
//	s.Requests()                     // request log, secrets redacted; Request.Mutating()
//	s.Cluster("pve01"); s.CreateCluster(…); s.AddNode(…); s.SetExpectedVotes(…) // pvecm material (clustersim.Pvecm)
//	s.ReadPmxcfs(node, "priv/authorized_keys"); s.WritePmxcfs(…)  // other /etc/pve files (C7)
//	Config.StorageCheck = func(node string, st StorageInfo) error { … } // read-only "is it usable?" (Z7)
//	Config.StorageActivate, StorageUsage, StorageContent, StorageUpload, NodeVersion // the node's own answers (labctl fills them)
//	Config.ZFS = func(node string, args ...string) error               // zfs on the node: zfspool guest volumes are zvols there (volumes/zvols.go)
//	Config.CloneDuration, AllocDuration, ReplicationInterval, HADelay, FenceDelay, FailbackDelay, AgentTimeout, StatdInterval // guest and daemon timings
//	s.AddGuest(node, pvesim.GuestSpec{VMID: 9000, Template: true, Config: map[string]string{"scsi0": "local-lvm:8"}})
//	http.Serve(unixListener, s.ControlHandler())
//
// # Simulated time
//
// Tasks run for Config.TaskDuration (default 2 s). Cluster create: the
// corosync.conf exists at once, the cluster is quorate TaskDuration/2 after
// the task ends. Join (a "clusterjoin" task on the joiner): the joiner's own
// pvecm.lock, assert_joinable (C6: a node with a corosync.conf fails with
// "Check if node may join a cluster failed!"), login to hostname with
// fingerprint and password, the cluster's join lock (joins are serialised;
// a join waiting longer than LockTimeout fails "can't lock file
// '/var/lock/pvecm.lock' - got timeout", C4), quorum ("cluster not ready -
// no quorum?"), then the joiner's API is down for RestartWindow and comes
// back with a new certificate (C5). Failures after the login carry the
// member's HTTP code as the API client reports it ("500 cluster not ready -
// no quorum?"): match the text, not the whole exit status. Writes to a
// non-quorate /etc/pve wait
// LockTimeout then fail "<op> failed: cfs-lock 'file-storage_cfg' error: no
// quorum!" (C10).
//
// Guest tasks (create, config, start, resize…) hold the guest's lock for
// TaskDuration. A full clone copies each disk for CloneDuration (default
// 2×TaskDuration) after holding its storage's allocation lock for
// AllocDuration (default 1 s); clone's own lock waits are LockTimeout/10
// (PVE: 1 s against lock_config's 10 s). A replication job marked for
// removal vanishes at the source's next run, ReplicationInterval (1 min).
// The HA stack acts HADelay (10 s, a CRM round) after a request; fencing a
// powered-off node takes FenceDelay (60 s, H7), failing back FailbackDelay
// (2 min).
//
// # Endpoints
//
// /version, /access/ticket, /nodes, /nodes/{node}/status,
// /access/permissions, /nodes/{node}/tasks[/{upid}/status|log],
// /nodes/{node}/storage[/{storage}/status|content],
// /cluster/status, /cluster/resources (node, storage and vm entries),
// /cluster/nextid, /nodes/{node}/qemu[/{vmid}[/config|pending|status/…|
// template|resize|clone|migrate|agent/ping|agent/network-get-interfaces]], /nodes/{node}/lxc[/{vmid}[/config|status/…|interfaces]],
// /cluster/replication[/{id}], /nodes/{node}/replication[/{id}/status|log|
// schedule_now], /cluster/ha/resources|groups|rules[/{id}],
// /cluster/ha/resources/{sid}/migrate|relocate,
// /cluster/ha/status/current,
// /cluster/config (create, index), /cluster/config/join (GET, POST),
// /cluster/config/nodes, DELETE /cluster/config/nodes/{node} (delnode: the
// removed node keeps a stale, never-quorate /etc/pve with corosync.conf and
// refuses a re-join, C9), /cluster/config/totem, /storage[/{storage}] (dir,
// nfs, zfspool, lvmthin, lvm with per-type options, required and fixed keys),
// /pools (8.1+ forms and the deprecated /pools/{poolid}; a member twice is
// refused, deleting a storage removes it from its pools and ACLs). Anything else in the
// schema answers 501 "Method '…' not implemented (exists in PVE N, not
// simulated by the lab)"; paths unknown to the schema answer PVE's plain 501.
//
// # Control API (ControlHandler, plain HTTP/JSON on the lab's Unix socket)
//
// The routes are pvesim/controlapi's, but for those of the Go API's stand-ins:
// pvecm's (`cluster`, `clusters`, `finish-join`: pvesim/clustersim), pveum's
// (`access`: pvesim/accesssim), the guest fixture (pvesim/guests) and
// `replication/run` (pvesim/replsim).
//
// Errors are non-2xx with {"error": "<message as real PVE prints it>"}.
//
//	GET    /v1/requests[?node=pve01][&mutating=1]  request log (redacted)
//	DELETE /v1/requests                            empty the log
//	GET    /v1/faults                              installed faults with fire counts
//	POST   /v1/faults   {"node","method","path","kind","delay_ms","status","message","lock_file","exitstatus","count"} → {"id"}
//	DELETE /v1/faults[/{id}]                       remove one or all
//	GET    /v1/nodes[/{node}]                      {name, addr, url, fingerprint, online, serving, cluster}
//	POST   /v1/nodes/{node}/online {"online":bool} power a node on/off
//	GET    /v1/nodes/{node}/cluster                pvecm status material; 404 when standalone
//	POST   /v1/clusters {"node","name","link0"}    pvecm create; 409 if already clustered
//	POST   /v1/nodes/{member}/cluster/nodes {"node","link0","force"}  pvecm add (joins node to member's cluster);
//	                                               404 member standalone, 409 assert_joinable / quorum / existing node
//	POST   /v1/nodes/{node}/cluster/expected {"votes":N}  pvecm expected
//	POST   /v1/access/users  {"node","user","password"}          pve-realm user (ticket tests)
//	POST   /v1/access/tokens {"node","user","name","privsep"}    → {"full-tokenid","value"} (secret shown once)
//	POST   /v1/access/acl    {"node","path","ugid","role","propagate"}  role: PVEAuditor, … or "priv:A,B"
//	GET    /v1/nodes/{node}/pmxcfs/{path}          {"content"} of /etc/pve/{path} as node sees it; 404 if absent
//	PUT    /v1/nodes/{node}/pmxcfs/{path} {"content"}  write it (409 "Permission denied" without quorum, C10)
//	DELETE /v1/nodes/{node}/pmxcfs/{path}          remove it
//	POST   /v1/nodes/{node}/guests {"vmid","config":{…},"template","running"}  a VM at once (fixture); 409 VMID taken
//	POST   /v1/nodes/{node}/replication/run {"id"}  pvesr run: {"log"}; 409 "can't lock file '/var/lock/pvesr.lck' - got timeout" (H5)
//	POST   /v1/remote-stores {"type":"pbs"|"cifs","server","user","password","stores":[…]}  a PBS or SMB server storages reach
//
// The pmxcfs files (e.g. priv/authorized_keys, C7) belong to the node's
// /etc/pve: after a join the joiner sees the cluster's copy, its own is gone.
//
// Cluster bodies: {"name","config_version","transport":"knet","secure_auth":true,
// "ring_id","expected_votes","total_votes","quorum","quorate",
// "nodes":[{"name","nodeid","votes","ring0_addr","online"}],"corosync_conf"}.
package pvesim

// Package core is the simulator's shared core: the Sim with its state
// (State, guarded by Mu, saved to <Dir>/pvesim/state.json), the request
// pipeline and router (httpapi.go, router.go: schema validation, auth,
// proxyto, permission checks, then the handler a backend registered with
// Handle), tasks and their workers, the /etc/pve directory per pmxcfs
// database (etcpve.go) and the lab's control API's handler
// (ControlHandler; its routes are pvesim/controlapi's and the backends',
// added with HandleControl). Its machinery that needs no Sim lies below
// it: the pipeline fires pvesim/faults' faults, logs each request in
// pvesim/reqlog and reads and answers through pvesim/httpwire; the flocks
// held are a pvesim/flocktable.Table; etcpve.go decides which /etc/pve
// files to write and read back, and pvesim/etcpvefs does the directory
// work and renders pmxcfs's generated files (.members, .version, .vmlist,
// .clusterlog). The rules of access
// and tasks are rule packages' too: a token header, the login's checks and
// check_api2_permissions are pvesim/access' (on the user.cfg data core
// holds); tickets, their keys' rotation and the CSRF rule pvesim/ticket's
// (on the /etc/pve files core hands it, ticket.Files); a task's end, log
// and views pvesim/tasks'. Core keeps the request's credentials
// (Principal), the worker goroutines and the lock.
//
// Backends are packages that embed *Sim and register their endpoints
// (pvesim/poolsim, accesssim, backupsim, …; pvesim.New wires them). A
// backend imports core, the models and the rule packages of the PVE
// repository it follows (pvesim/access, storage, qemuserver, …), never
// another backend. The models the backends share sit between them and
// core: pvesim/volumes (guest volumes, zvols) and pvesim/guests (a guest's
// config, running state, operations, and what guests read of HA,
// replication and pools). Core never imports a model: what it needs of one
// comes through a hook the model registers (OnNodePower), and the state
// the models keep is core's (State, HAErrors, HAMotions).
// Core serves only what the request pipeline itself does (login, the task
// endpoints, and pveproxy's part of an upload before its body: the body
// and the API call are pvesim/storagesim's, through HandleUpload); it
// follows pve-http-server and pve-manager's PVE/HTTPServer.pm for the
// pipeline, pve-common's JSONSchema.pm and RESTEnvironment.pm for the
// checks, pve-cluster for membership. It keeps the model of storage.cfg
// and user.cfg and reads them back from the files (their lines are
// pvesim/storage's and access'; a storage's activation, storage.cfg's lock
// and pvestatd pvesim/volumes' and storagesim's), the wait for a flock
// (the table is pvesim/flocktable's), the pmxcfs .vmlist and membership
// (its rules and messages are pvesim/cluster's), which docs/lab.md maps.
// Joins are pvesim/clustersim's (join.go), which reaches core's internals
// through the few methods core exports for it: StopAPILocked,
// StartAPILocked, CALocked, DropDBLocked, CopyWrittenLocked. Its Go API
// (api.go) is what
// needs its internals (nodes and their power, the request log, faults,
// /etc/pve files); pvesim.Sim adds the backends' and models' parts.
//
// The whole design, endpoints and timings are in package pvesim's doc.
package core

// Package core is the simulator's shared core: the Sim with its state
// (State, guarded by Mu, saved to <Dir>/pvesim/state.json), the request
// pipeline and router (httpapi.go, router.go: schema validation, auth,
// proxyto, permission checks, then the handler a backend registered with
// Handle), tasks and their workers, faults, the request log, the /etc/pve
// directory per pmxcfs database (etcpve.go) and the lab's control API.
//
// Backends are packages that embed *Sim and register their endpoints
// (pvesim/poolsim, accesssim, backupsim, …; pvesim.New wires them). A
// backend imports core and the rule packages of the PVE repository it
// follows (pvesim/access, storage, qemuserver, …), never another backend.
// Core serves only what the request pipeline itself does (login, the task
// endpoints, pveproxy's upload); it keeps the models the backends share
// (guests, volumes, HA's resources, replication jobs, membership and
// joins), which docs/lab.md maps.
//
// The whole design, endpoints and timings are in package pvesim's doc.
package core

// Package guests is the simulator's guest model, which the backends share
// across areas: a guest's config file through /etc/pve (guestqm.go,
// guestkind.go: what a VM and a container share, as pve-guest-common's
// AbstractConfig.pm is for qemu-server and pve-container), a VM's and a
// container's running state, summary and /cluster/resources entry
// (guestvm.go, guestct.go), the operations backends act with (guestops.go:
// start, HA's steal as pve-ha-manager's Env/PVE2.pm steal_service, and
// pve-guests' onboot start), a VM's move between nodes (pve-guest-common
// AbstractMigrate.pm), destroy's purge from HA, replication, pools and
// vzdump jobs (pve-guest-common, pve-manager), and what guests read of HA
// (hamodel.go), replication (replmodel.go) and pools (pools.go), a
// guest's config lock and where its config lives (guestlock.go), and the
// lab's guest fixture (guestfixture.go: Fixture, the guest model's part of
// the Go API, pvesim.Sim: AddGuest, bridges, held devices).
//
// Model embeds the volume model (pvesim/volumes: a guest's disks are
// volumes) and, through it, the *core.Sim; backends embed Model. It
// imports core, volumes and rule packages, never a backend. Register (by
// pvesim.New, before the backends) gives core the hook it calls the model
// through, OnNodePower for onboot, and adds the guest fixture's control
// API route.
package guests

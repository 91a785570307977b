// Package clusterguests reads the cluster-wide guest list (every VM and
// container, on whichever node it runs now) and the next free VMID. It
// exists so a module can find a guest wherever it runs now (H3) and a
// template by VMID or exact name (K1: identity is the VMID, a name is only
// a way to find one) without knowing its node first. The HA manager's own
// list of managed guests is another thing, in pveapi/ha (ha.Resources);
// this package only reports each guest's hastate as /cluster/resources
// shows it:
//
//   - Guests reads GET /cluster/resources?type=vm (pve-manager
//     PVE/API2/Cluster.pm resources: vmid, node, name, type qemu|lxc,
//     status, template, hastate, pool, lock, tags).
//   - NextID and Free read GET /cluster/nextid (Cluster.pm nextid). PVE
//     reserves nothing: the id it answers is free when it answers, and two
//     callers asking at once get the same one (K18). Only the create or
//     clone call claims a VMID, atomically (it fails with "already
//     exists"); a caller that lets PVE pick must treat that failure as a
//     lost race, re-read, and never assume the id is its own.
//
// An empty list is not "nothing exists" when the token lacks VM.Audit
// (K19): check with pveapi's RequireAny before trusting an empty answer.
package clusterguests

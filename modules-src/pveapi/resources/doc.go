// Package resources types the cluster-wide guest list and the next free
// VMID, for finding a guest wherever it runs now (H3) and a template by
// VMID or exact name (K1: identity is the VMID, a name is only a way to
// find one):
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
package resources

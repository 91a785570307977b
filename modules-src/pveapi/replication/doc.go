// Package replication types storage replication jobs for pve_ha, following
// pve-guest-common's PVE/ReplicationConfig.pm (job ids, properties,
// defaults) and ReplicationState.pm job_status (what a node reports), and
// pve-manager's PVE/API2/ReplicationConfig.pm / API2/Replication.pm:
//
//   - JobID: "<guest>-<jobnum>", parsed as parse_replication_job_id does
//     (integers, so "201-01" is "201-1"; guests below 100 refused).
//   - Job: the config entry (GET /cluster/replication), compared with
//     PVE's defaults filled in (schedule "*/15"). The target of a job
//     cannot be updated (PUT takes no `target`); HA relocation rewrites
//     source and target itself (switch_replication_job_target), so a job
//     is identified by (guest, target) before a failover and by its id
//     after it.
//   - Status: GET /nodes/{node}/replication/{id}/status (last_sync,
//     last_try, next_sync, duration, fail_count, error), read on the node
//     that runs the guest: a job is only listed on its source node.
//
// Writes are apischema.Request values the caller dispatches.
package replication

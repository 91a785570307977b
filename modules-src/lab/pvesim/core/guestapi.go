package core

// guestHandlers are the guest, replication and HA endpoints (merged into
// handlers()).
func (s *Sim) guestHandlers() map[string]handlerFunc {
	table := map[string]handlerFunc{
		"GET /cluster/nextid":                                        s.getNextID,
		"GET /nodes/{node}/qemu":                                     s.getQemuList,
		"POST /nodes/{node}/qemu":                                    s.postQemuCreate,
		"DELETE /nodes/{node}/qemu/{vmid}":                           s.deleteQemu,
		"GET /nodes/{node}/qemu/{vmid}/config":                       s.getQemuConfig,
		"PUT /nodes/{node}/qemu/{vmid}/config":                       s.putQemuConfig,
		"POST /nodes/{node}/qemu/{vmid}/config":                      s.postQemuConfig,
		"GET /nodes/{node}/qemu/{vmid}/pending":                      s.getQemuPending,
		"GET /nodes/{node}/qemu/{vmid}/status/current":               s.getQemuStatus,
		"POST /nodes/{node}/qemu/{vmid}/status/start":                s.postQemuStart,
		"POST /nodes/{node}/qemu/{vmid}/status/stop":                 s.postQemuStop,
		"POST /nodes/{node}/qemu/{vmid}/status/shutdown":             s.postQemuShutdown,
		"POST /nodes/{node}/qemu/{vmid}/template":                    s.postQemuTemplate,
		"PUT /nodes/{node}/qemu/{vmid}/resize":                       s.putQemuResize,
		"PUT /nodes/{node}/qemu/{vmid}/unlink":                       s.putQemuUnlink,
		"POST /nodes/{node}/qemu/{vmid}/clone":                       s.postQemuClone,
		"POST /nodes/{node}/qemu/{vmid}/migrate":                     s.postQemuMigrate,
		"POST /nodes/{node}/qemu/{vmid}/agent/ping":                  s.postQemuAgentPing,
		"GET /nodes/{node}/qemu/{vmid}/agent/network-get-interfaces": s.getQemuAgentNetworkGetInterfaces,
		"GET /nodes/{node}/lxc":                                      s.getLxcList,
		"POST /nodes/{node}/lxc":                                     s.postLxcCreate,
		"GET /nodes/{node}/vzdump/extractconfig":                     s.getVzdumpExtractConfig,
		"DELETE /nodes/{node}/lxc/{vmid}":                            s.deleteLxc,
		"GET /nodes/{node}/lxc/{vmid}/config":                        s.getLxcConfig,
		"PUT /nodes/{node}/lxc/{vmid}/config":                        s.putLxcConfig,
		"GET /nodes/{node}/lxc/{vmid}/pending":                       s.getLxcPending,
		"PUT /nodes/{node}/lxc/{vmid}/resize":                        s.putLxcResize,
		"GET /nodes/{node}/lxc/{vmid}/status/current":                s.getLxcStatus,
		"GET /nodes/{node}/lxc/{vmid}/interfaces":                    s.getLxcInterfaces,
		"POST /nodes/{node}/lxc/{vmid}/status/start":                 s.postLxcStart,
		"POST /nodes/{node}/lxc/{vmid}/status/stop":                  s.postLxcStop,
		"POST /nodes/{node}/lxc/{vmid}/status/shutdown":              s.postLxcShutdown,
		"GET /cluster/replication":                                   s.getReplicationJobs,
		"GET /cluster/backup":                                        s.getBackupJobs,
		"POST /cluster/backup":                                       s.postBackupJob,
		"GET /cluster/backup/{id}":                                   s.getBackupJob,
		"DELETE /cluster/backup/{id}":                                s.deleteBackupJob,
		"GET /nodes/{node}/replication":                              s.getNodeReplication,
		"GET /nodes/{node}/replication/{id}/status":                  s.getNodeReplicationStatus,
		"GET /nodes/{node}/replication/{id}/log":                     s.getNodeReplicationLog,
		"POST /nodes/{node}/replication/{id}/schedule_now":           s.postReplicationScheduleNow,
		"POST /cluster/replication":                                  s.postReplicationJob,
		"GET /cluster/replication/{id}":                              s.getReplicationJob,
		"PUT /cluster/replication/{id}":                              s.putReplicationJob,
		"DELETE /cluster/replication/{id}":                           s.deleteReplicationJob,
		"GET /cluster/ha/resources":                                  s.getHAResources,
		"GET /cluster/ha/status/current":                             s.getHAStatusCurrent,
		"POST /cluster/ha/resources":                                 s.postHAResource,
		"GET /cluster/ha/resources/{sid}":                            s.getHAResource,
		"PUT /cluster/ha/resources/{sid}":                            s.putHAResource,
		"DELETE /cluster/ha/resources/{sid}":                         s.deleteHAResource,
		"POST /cluster/ha/resources/{sid}/migrate":                   s.postHAMotion,
		"POST /cluster/ha/resources/{sid}/relocate":                  s.postHAMotion,
		"GET /cluster/ha/groups":                                     s.getHAGroups,
		"POST /cluster/ha/groups":                                    s.postHAGroup,
		"GET /cluster/ha/groups/{group}":                             s.getHAGroup,
		"PUT /cluster/ha/groups/{group}":                             s.putHAGroup,
		"DELETE /cluster/ha/groups/{group}":                          s.deleteHAGroup,
	}
	if s.cfg.Version >= 9 { // HA rules are new in PVE 9 (pve-ha-manager 5.0)
		table["GET /cluster/ha/rules"] = s.getHARules
		table["POST /cluster/ha/rules"] = s.postHARule
		table["GET /cluster/ha/rules/{rule}"] = s.getHARule
		table["PUT /cluster/ha/rules/{rule}"] = s.putHARule
		table["DELETE /cluster/ha/rules/{rule}"] = s.deleteHARule
	}
	return table
}

package qemuserver

import (
	"strconv"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// MemBytes is a VM's maxmem in bytes: memory's current (MiB, a bare
// number or current=), 512 MiB by default (QemuServer.pm $confdesc
// memory, PVE::QemuServer::Memory get_current_memory).
func MemBytes(conf map[string]string) int64 {
	mem := 512
	if v := conf["memory"]; v != "" {
		if n, err := strconv.Atoi(pvecommon.ParseProps(v, "current").Get("current")); err == nil {
			mem = n
		}
	}
	return int64(mem) << 20
}

// CPUs is a VM's cpus in the status views: sockets × cores, each 1 by
// default (QemuServer.pm vmstatus; reconstruction: its cap at the node's
// CPU count and its vcpus override are not applied).
func CPUs(conf map[string]string) int {
	c, so := 1, 1
	if n, err := strconv.Atoi(conf["cores"]); err == nil {
		c = n
	}
	if n, err := strconv.Atoi(conf["sockets"]); err == nil {
		so = n
	}
	return c * so
}

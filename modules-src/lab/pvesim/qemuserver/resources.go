package qemuserver

import (
	"maps"
	"slices"
	"strconv"
	"strings"

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

// BootdiskSize is a VM's maxdisk in the status views (Drive.pm
// bootdisk_size): the size= of its boot disk, 0 without one.
// Reconstruction: the boot disk is the first drive in key order that is
// neither a CD-ROM nor cloud-init's (PVE takes the first disk of the boot
// order).
func BootdiskSize(conf map[string]string) int64 {
	for _, k := range slices.Sorted(maps.Keys(conf)) {
		if !IsDriveKey(k) || strings.HasPrefix(k, "unused") {
			continue
		}
		d := ParseDrive(conf[k])
		if d.CDROM() || d.Cloudinit() {
			continue
		}
		if n, ok := pvecommon.ParseSize(d.Props.Get("size")); ok {
			return n
		}
	}
	return 0
}

package qemuserver

import (
	"errors"
	"slices"
)

// CloneFull is clone_vm's choice between a full and a linked clone
// (src/PVE/API2/Qemu.pm): the full parameter when given, else full unless
// the source is a template; a linked clone takes neither a target storage
// nor a format.
func CloneFull(template bool, full *bool, storage, format string) (bool, error) {
	f := !template
	if full != nil {
		f = *full
	}
	if storage != "" && !f {
		return false, errors.New("parameter 'storage' not allowed for linked clones")
	}
	if format != "" && !f {
		return false, errors.New("parameter 'format' not allowed for linked clones")
	}
	return f, nil
}

// cloneDropped are the options clone_vm does not copy: snapshot and
// running-state information (unusedN too: CloneDrops).
var cloneDropped = []string{"parent", "snaptime", "vmstate", "runningcpu", "runningmachine", "running-nets-host-mtu"}

// CloneDrops tells whether clone_vm leaves option k out of the clone's
// config: snapshot and running-state information, and unusedN ("no need
// to copy unused images, because VMID(owner) changes anyways").
func CloneDrops(k string) bool { return slices.Contains(cloneDropped, k) || IsUnused(k) }

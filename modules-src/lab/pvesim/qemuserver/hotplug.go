package qemuserver

import (
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

// HotplugDefault is qemu-server's default `hotplug` (network,disk,usb).
var HotplugDefault = []string{"network", "disk", "usb"}

// fastPlug are options a running VM takes at once (QemuServer.pm
// $fast_plug_option, plus the cloud-init options, $confdesc_cloudinit).
var fastPlug = []string{"description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name",
	"onboot", "protection", "shares", "startup", "tags", "vmstatestorage",
	"cicustom", "cipassword", "citype", "ciupgrade", "ciuser", "nameserver", "searchdomain", "sshkeys"}

// FastPlug tells whether a running VM applies option k at once, whatever
// its hotplug features: $fast_plug_option and ipconfigN.
func FastPlug(k string) bool { return slices.Contains(fastPlug, k) || strings.HasPrefix(k, "ipconfig") }

// hotplugList is the `hotplug` option's features as
// parse_hotplug_features reads them: "0" none, "1" and unset the default
// (HotplugDefault), else split_list of the value.
func hotplugList(conf map[string]string) []string {
	v, ok := conf["hotplug"]
	switch {
	case !ok || v == "1":
		return HotplugDefault
	case v == "0":
		return nil
	}
	return pveschema.SplitList(v)
}

// Hotpluggable tells whether a running VM applies key at once
// (vmconfig_hotplug_pending); the rest stays in [PENDING] until a restart.
func Hotpluggable(conf map[string]string, key string) bool {
	if FastPlug(key) {
		return true
	}
	hp := hotplugList(conf)
	switch {
	case IsNetKey(key):
		return slices.Contains(hp, "network")
	case IsDriveKey(key) && !strings.HasPrefix(key, "efidisk") && !strings.HasPrefix(key, "tpmstate"):
		return slices.Contains(hp, "disk")
	case strings.HasPrefix(key, "usb"):
		return slices.Contains(hp, "usb")
	}
	return false
}

// HotplugFeatures is the VM's `hotplug` option as a set
// (parse_hotplug_features).
func HotplugFeatures(conf map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, f := range hotplugList(conf) {
		out[f] = true
	}
	return out
}

// driveNoUnplug: drives a running VM cannot lose (vmconfig_hotplug_pending
// and vm_deviceunplug leave them pending).
var driveNoUnplug = regexp.MustCompile(`^(efidisk|ide|sata|tpmstate)\d+$`)

// DriveNoUnplug tells whether a running VM keeps drive key until a restart
// when it is deleted.
func DriveNoUnplug(key string) bool { return driveNoUnplug.MatchString(key) }

// driveOptsNeedRestart are the drive options vmconfig_update_disk cannot
// change on a running VM's disk.
var driveOptsNeedRestart = []string{"aio", "discard", "iothread", "queues", "product", "cache", "ssd", "vendor", "ro"}

// DiskChangeNeedsRestart tells whether the same volume with new options
// waits for a restart (vmconfig_update_disk): one of driveOptsNeedRestart
// differs.
func DiskChangeNeedsRestart(old, updated Drive) bool {
	for _, o := range driveOptsNeedRestart {
		if old.Props.Get(o) != updated.Props.Get(o) {
			return true
		}
	}
	return false
}

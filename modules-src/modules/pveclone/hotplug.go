package pveclone

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// What a running VM takes at once, for check mode's prediction of what a
// config update leaves pending (K10, issue 23 §4). It follows qemu-server
// QemuServer.pm vmconfig_hotplug_pending: the fast-plug options and the
// cloud-init ones always; a NIC and a SCSI/virtio disk with the matching
// `hotplug` feature (default network,disk,usb); memory and vcpus only with
// the memory/cpu features; cpuunits, cpulimit; everything else ("skip")
// waits for the next start. A hotplug that fails (a missing bridge, a
// guest that keeps a device) is not predicted: the real run reads PVE's
// answer back.
var fastPlug = []string{"description", "hookscript", "lock", "migrate_downtime", "migrate_speed", "name",
	"onboot", "protection", "shares", "startup", "tags", "vmstatestorage",
	// $confdesc_cloudinit
	"cicustom", "cipassword", "citype", "ciupgrade", "ciuser", "nameserver", "searchdomain", "sshkeys"}

var (
	ipconfigRe = regexp.MustCompile(`^ipconfig\d+$`)
	netRe      = regexp.MustCompile(`^net\d+$`)
	hotDiskRe  = regexp.MustCompile(`^(scsi|virtio)\d+$`)
)

// hotplugFeatures reads the VM's `hotplug` option (parse_hotplug_features:
// 1 is network,disk,usb; 0 none).
func hotplugFeatures(conf map[string]string) map[string]bool {
	v, ok := conf["hotplug"]
	if !ok || v == "1" {
		v = "network,disk,usb"
	}
	out := map[string]bool{}
	if v == "0" {
		return out
	}
	for _, f := range strings.Split(v, ",") {
		out[strings.TrimSpace(f)] = true
	}
	return out
}

// takesLive tells whether a running VM applies key at once.
func takesLive(live map[string]string, key, value string) bool {
	hp := hotplugFeatures(live)
	switch {
	case slices.Contains(fastPlug, key), ipconfigRe.MatchString(key):
		return true
	case netRe.MatchString(key):
		return hp["network"]
	case hotDiskRe.MatchString(key):
		old, had := live[key]
		if had && isCDROM(key, old) != isCDROM(key, value) {
			return false // unable to change media type
		}
		return hp["disk"] || had && isCDROM(key, old)
	case key == "memory":
		return hp["memory"]
	case key == "vcpus":
		return hp["cpu"]
	case key == "cpuunits", key == "cpulimit":
		return true
	}
	return false
}

// predictHotplug is the running VM after the update: the keys it takes at
// once are live, the others pending next to what it runs.
func predictHotplug(st vmState, set map[string]string) (qemu.Config, []qemu.PendingItem) {
	live := qemu.Config{Values: map[string]string{}}
	for k, v := range st.Live.Values {
		live.Values[k] = v
	}
	pending := slices.Clone(st.Pending)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v := set[k]
		if takesLive(st.Live.Values, k, v) {
			live.Values[k] = v
			pending = slices.DeleteFunc(pending, func(it qemu.PendingItem) bool { return it.Key == k })
			continue
		}
		pending = slices.DeleteFunc(pending, func(it qemu.PendingItem) bool { return it.Key == k })
		old, had := st.Live.Values[k]
		pending = append(pending, qemu.PendingItem{Key: k, Value: old, HasValue: had, Pending: v, HasPending: true})
	}
	slices.SortFunc(pending, func(a, b qemu.PendingItem) int { return strings.Compare(a.Key, b.Key) })
	return live, pending
}

func isCDROM(key, value string) bool {
	d, err := qemu.ParseDrive(key, value)
	return err == nil && d.IsCDROM()
}

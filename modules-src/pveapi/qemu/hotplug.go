package qemu

import (
	"maps"
	"regexp"
	"slices"
	"strings"
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
	driveRe    = regexp.MustCompile(`^(ide|sata|scsi|virtio)\d+$`)
)

// driveTakesLive is vmconfig_update_disk: a CD-ROM's medium changes at
// once; another volume in place of a disk is unplugged and plugged (disk
// hotplug); the same volume takes every option but the ones a restart
// needs (aio, discard, iothread, queues, product, cache, ssd, vendor,
// ro); a new disk is plugged except on IDE/SATA; a cloud-init drive is
// generated after the rest. A media change fails (pending).
func driveTakesLive(diskHotplug bool, key, old, value string) bool {
	nd, err := ParseDrive(key, value)
	if err != nil {
		return false
	}
	if strings.Contains(nd.File, "cloudinit") {
		return true
	}
	if old == "" {
		return diskHotplug && !strings.HasPrefix(key, "ide") && !strings.HasPrefix(key, "sata")
	}
	od, err := ParseDrive(key, old)
	if err != nil || od.IsCDROM() != nd.IsCDROM() {
		return false
	}
	if od.IsCDROM() {
		return true
	}
	if od.File != nd.File {
		return diskHotplug
	}
	if od.Discard != nd.Discard || od.Cache != nd.Cache || !sameBool(od.IOThread, nd.IOThread) || !sameBool(od.SSD, nd.SSD) {
		return false
	}
	for _, o := range []string{"aio", "queues", "product", "vendor", "ro"} {
		a, _ := od.Other.Get(o)
		b, _ := nd.Other.Get(o)
		if a != b {
			return false
		}
	}
	return true
}

func sameBool(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

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
	case driveRe.MatchString(key):
		return driveTakesLive(hp["disk"], key, live[key], value)
	case key == "memory":
		return hp["memory"]
	case key == "vcpus":
		return hp["cpu"]
	case key == "cpuunits", key == "cpulimit":
		return true
	}
	return false
}

// PredictHotplug is the running VM after the update: the keys it takes at
// once are live, the others pending next to what it runs.
func PredictHotplug(st State, set map[string]string) (Config, []PendingItem) {
	live := Config{Values: map[string]string{}}
	for k, v := range st.Live.Values {
		live.Values[k] = v
	}
	pending := slices.Clone(st.Pending)
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v := set[k]
		if takesLive(st.Live.Values, k, v) {
			live.Values[k] = v
			pending = slices.DeleteFunc(pending, func(it PendingItem) bool { return it.Key == k })
			continue
		}
		pending = slices.DeleteFunc(pending, func(it PendingItem) bool { return it.Key == k })
		old, had := st.Live.Values[k]
		pending = append(pending, PendingItem{Key: k, Value: old, HasValue: had, Pending: v, HasPending: true})
	}
	slices.SortFunc(pending, func(a, b PendingItem) int { return strings.Compare(a.Key, b.Key) })
	return live, pending
}

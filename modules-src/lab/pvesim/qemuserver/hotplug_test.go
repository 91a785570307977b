package qemuserver

import "testing"

// What a running VM takes at once (vmconfig_hotplug_pending): fast-plug
// options and ipconfigN always; NICs, disks and USB by the hotplug
// option (default network,disk,usb; 0 none; 1 the default); efidisk and
// tpmstate never.
func TestHotpluggable(t *testing.T) {
	cases := []struct {
		hotplug, key string
		want         bool
	}{
		{"", "name", true},
		{"0", "name", true},
		{"0", "sshkeys", true},
		{"0", "ipconfig0", true},
		{"", "memory", false},
		{"", "cores", false},
		{"", "net0", true},
		{"", "scsi1", true},
		{"", "usb0", true},
		{"", "efidisk0", false},
		{"", "tpmstate0", false},
		{"0", "net0", false},
		{"0", "scsi1", false},
		{"1", "net0", true},
		{"1", "usb1", true},
		{"disk", "net0", false},
		{"disk", "virtio0", true},
		{"network, usb", "usb1", true},
		{"network,usb", "scsi0", false},
	}
	for _, c := range cases {
		conf := map[string]string{}
		if c.hotplug != "" {
			conf["hotplug"] = c.hotplug
		}
		if got := Hotpluggable(conf, c.key); got != c.want {
			t.Errorf("hotplug=%q %s: Hotpluggable = %v, want %v", c.hotplug, c.key, got, c.want)
		}
	}
}

func TestHotplugFeatures(t *testing.T) {
	if f := HotplugFeatures(map[string]string{}); !f["disk"] || !f["network"] || !f["usb"] || f["cpu"] {
		t.Fatalf("default features %v", f)
	}
	if f := HotplugFeatures(map[string]string{"hotplug": "0"}); len(f) != 0 {
		t.Fatalf("hotplug=0: %v", f)
	}
	if f := HotplugFeatures(map[string]string{"hotplug": "network"}); f["disk"] || !f["network"] {
		t.Fatalf("hotplug=network: %v", f)
	}
	// parse_hotplug_features: "1" is the default set (not every feature),
	// a value is split as split_list splits it.
	if f := HotplugFeatures(map[string]string{"hotplug": "1"}); !f["disk"] || !f["network"] || !f["usb"] || f["cpu"] || f["memory"] {
		t.Fatalf("hotplug=1: %v", f)
	}
	if f := HotplugFeatures(map[string]string{"hotplug": "disk;cpu memory"}); !f["disk"] || !f["cpu"] || !f["memory"] || f["network"] {
		t.Fatalf("hotplug=disk;cpu memory: %v", f)
	}
}

// A running VM keeps IDE, SATA, EFI and TPM drives until a restart, and a
// disk whose volume stays but whose aio/cache/… change waits too.
func TestDiskRestartRules(t *testing.T) {
	for k, want := range map[string]bool{"ide0": true, "sata1": true, "efidisk0": true, "tpmstate0": true, "scsi0": false, "virtio3": false} {
		if DriveNoUnplug(k) != want {
			t.Errorf("DriveNoUnplug(%s) = %v", k, !want)
		}
	}
	old := ParseDrive("local-lvm:vm-100-disk-0,size=4G,cache=none")
	for v, want := range map[string]bool{
		"local-lvm:vm-100-disk-0,size=8G,cache=none":          false,
		"local-lvm:vm-100-disk-0,size=4G,cache=none,backup=0": false,
		"local-lvm:vm-100-disk-0,size=4G,cache=writeback":     true,
		"local-lvm:vm-100-disk-0,size=4G":                     true,
		"local-lvm:vm-100-disk-0,size=4G,cache=none,ssd=1":    true,
		"local-lvm:vm-100-disk-0,size=4G,cache=none,ro=1":     true,
	} {
		if got := DiskChangeNeedsRestart(old, ParseDrive(v)); got != want {
			t.Errorf("%s: DiskChangeNeedsRestart = %v, want %v", v, got, want)
		}
	}
}

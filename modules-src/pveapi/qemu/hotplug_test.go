package qemu

import "testing"

// K10: what check mode predicts a running VM takes at once, after
// qemu-server's vmconfig_hotplug_pending and vmconfig_update_disk (the
// lab's hotplug follows the same code; pveclone's TestPendingNotCalledApplied checks
// prediction against it).
func TestTakesLive(t *testing.T) {
	base := map[string]string{"scsi0": "shared:vm-201-disk-0,size=8G", "ide2": "none,media=cdrom", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}
	hp := func(v string) map[string]string {
		m := map[string]string{"hotplug": v}
		for k, x := range base {
			m[k] = x
		}
		return m
	}
	cases := []struct {
		live       map[string]string
		key, value string
		want       bool
	}{
		{base, "name", "x", true}, {base, "tags", "a;b", true}, {base, "ipconfig0", "ip=dhcp", true}, {base, "sshkeys", "k", true},
		{base, "cores", "4", false}, {base, "memory", "8192", false}, {hp("network,disk,memory"), "memory", "8192", true},
		{base, "vcpus", "2", false}, {hp("cpu"), "vcpus", "2", true}, {base, "cpu", "host", false}, {base, "boot", "order=scsi0", false},
		{base, "net1", "virtio,bridge=vmbr1", true}, {hp("disk"), "net1", "virtio,bridge=vmbr1", false}, {hp("0"), "net1", "virtio,bridge=vmbr1", false},
		{base, "scsi1", "shared:4", true}, {base, "sata1", "shared:4", false}, {hp("network"), "scsi1", "shared:4", false},
		{base, "ide2", "shared:iso/d.iso,media=cdrom", true}, {base, "ide2", "shared:4", false},
		{base, "scsi0", "shared:vm-201-disk-0,size=8G,cache=writeback", false}, {base, "scsi0", "shared:vm-201-disk-0,size=8G,backup=0", true},
		{base, "scsi0", "shared:vm-201-disk-1,size=8G", true}, {base, "efidisk0", "shared:1", false}, {base, "agent", "1", false},
	}
	for _, c := range cases {
		if got := takesLive(c.live, c.key, c.value); got != c.want {
			t.Errorf("hotplug=%q %s=%s: live %v, want %v", c.live["hotplug"], c.key, c.value, got, c.want)
		}
	}
}

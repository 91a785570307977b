package qemuserver

import "testing"

func TestMemBytesCPUs(t *testing.T) {
	for v, want := range map[string]int64{"": 512 << 20, "2048": 2048 << 20, "current=1024": 1024 << 20, "bogus": 512 << 20} {
		conf := map[string]string{}
		if v != "" {
			conf["memory"] = v
		}
		if got := MemBytes(conf); got != want {
			t.Errorf("memory %q: MemBytes = %d, want %d", v, got, want)
		}
	}
	if got := CPUs(map[string]string{}); got != 1 {
		t.Errorf("CPUs() = %d", got)
	}
	if got := CPUs(map[string]string{"cores": "4", "sockets": "2"}); got != 8 {
		t.Errorf("CPUs(4 cores, 2 sockets) = %d", got)
	}
	if got := CPUs(map[string]string{"cores": "3"}); got != 3 {
		t.Errorf("CPUs(3 cores) = %d", got)
	}
}

// maxdisk: the first disk's size in key order, CD-ROMs, cloud-init and
// unusedN skipped, 0 without a sized disk.
func TestBootdiskSize(t *testing.T) {
	for _, c := range []struct {
		conf map[string]string
		want int64
	}{
		{map[string]string{"ide2": "local:iso/d.iso,media=cdrom,size=1G", "ide0": "local-lvm:vm-1-cloudinit,media=cdrom",
			"scsi1": "local-lvm:vm-1-disk-1,size=8G", "scsi0": "local-lvm:vm-1-disk-0,size=32G", "unused0": "local-lvm:vm-1-disk-9,size=1T"}, 32 << 30},
		{map[string]string{"ide0": "local-lvm:vm-1-cloudinit,size=4M", "sata0": "local-lvm:vm-1-disk-0,size=2G"}, 2 << 30},
		{map[string]string{"virtio0": "local-lvm:vm-1-disk-0"}, 0},
		{map[string]string{"memory": "512"}, 0},
	} {
		if got := BootdiskSize(c.conf); got != c.want {
			t.Errorf("BootdiskSize(%v) = %d, want %d", c.conf, got, c.want)
		}
	}
}

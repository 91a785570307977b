package qemuserver

import (
	"slices"
	"strings"
	"testing"
)

func TestDriveKeys(t *testing.T) {
	for k, want := range map[string]bool{"scsi0": true, "virtio15": true, "ide2": true, "sata5": true, "efidisk0": true,
		"tpmstate0": true, "unused7": true, "scsi": false, "net0": false, "cdrom": false, "xscsi0": false} {
		if IsDriveKey(k) != want {
			t.Errorf("IsDriveKey(%q) = %v", k, !want)
		}
	}
	for k, want := range map[string]bool{"net0": true, "net31": true, "net": false, "netx0": false, "ipconfig0": false} {
		if IsNetKey(k) != want {
			t.Errorf("IsNetKey(%q) = %v", k, !want)
		}
	}
}

// parse_drive/print_drive: the volume first, the options sorted; a
// cloud-init drive is a CD-ROM whose volume is vm-<id>-cloudinit.
func TestDrive(t *testing.T) {
	d := ParseDrive("size=32G,file=local-lvm:vm-100-disk-0,cache=none")
	if d.File() != "local-lvm:vm-100-disk-0" || d.CDROM() || d.Cloudinit() {
		t.Fatalf("disk read as %+v", d)
	}
	if got, want := d.Print(), "local-lvm:vm-100-disk-0,cache=none,size=32G"; got != want {
		t.Fatalf("Print = %q, want %q", got, want)
	}
	ci := ParseDrive("local-lvm:vm-100-cloudinit,media=cdrom")
	if !ci.CDROM() || !ci.Cloudinit() {
		t.Fatalf("cloud-init drive read as %+v", ci)
	}
	if cd := ParseDrive("none,media=cdrom"); !cd.CDROM() || cd.Cloudinit() || cd.File() != "none" {
		t.Fatalf("empty CD-ROM read as %+v", cd)
	}
}

// get_default_bootdevices as create_vm writes it: CD-ROMs (cloud-init's
// left out), disks (not efidisk/tpmstate/unused), the first NIC only.
func TestDefaultBoot(t *testing.T) {
	keys := map[string]string{
		"ide2":      "local:iso/debian.iso,media=cdrom",
		"ide0":      "local-lvm:vm-100-cloudinit,media=cdrom",
		"scsi1":     "local-lvm:vm-100-disk-1",
		"scsi0":     "local-lvm:vm-100-disk-0",
		"efidisk0":  "local-lvm:vm-100-disk-2",
		"tpmstate0": "local-lvm:vm-100-disk-3",
		"unused0":   "local-lvm:vm-100-disk-4",
		"net1":      "virtio=BC:24:11:00:00:02",
		"net0":      "virtio=BC:24:11:00:00:01",
		"memory":    "1024",
	}
	if got, want := DefaultBoot(keys), "order=ide2;scsi0;scsi1;net0"; got != want {
		t.Fatalf("DefaultBoot = %q, want %q", got, want)
	}
	if got := DefaultBoot(map[string]string{"memory": "512"}); got != "order=" {
		t.Fatalf("DefaultBoot without devices = %q", got)
	}
}

// create_disks' has_cloudinit: a second cloud-init drive is refused,
// naming where the first is; the key itself does not count; a value that
// asks for no new cloud-init drive is never refused.
func TestCloudinitRequestElsewhere(t *testing.T) {
	conf := map[string]string{"ide0": "local-lvm:vm-100-cloudinit,media=cdrom", "scsi0": "local-lvm:vm-100-disk-0"}
	pending := map[string]string{"ide3": "local-lvm:vm-100-cloudinit,media=cdrom"}
	if at := CloudinitRequestElsewhere("ide2", "local-lvm:cloudinit", conf); at != "ide0" {
		t.Fatalf("a second cloud-init drive: elsewhere = %q, want ide0", at)
	}
	if at := CloudinitRequestElsewhere("ide0", "local-lvm:cloudinit", conf); at != "" {
		t.Fatalf("the same key again: elsewhere = %q, want none", at)
	}
	if at := CloudinitRequestElsewhere("ide0", "local-lvm:cloudinit", conf, pending); at != "ide3" {
		t.Fatalf("pending cloud-init drive: elsewhere = %q, want ide3", at)
	}
	if at := CloudinitRequestElsewhere("scsi1", "local-lvm:32", conf); at != "" {
		t.Fatalf("a disk is no cloud-init request: %q", at)
	}
	if at := CloudinitRequestElsewhere("ide2", "local-lvm:cloudinit", map[string]string{"unused0": "local-lvm:vm-100-cloudinit"}); at != "" {
		t.Fatalf("an unusedN is no drive: %q", at)
	}
	if !HasCloudinitDrive(conf) || HasCloudinitDrive(map[string]string{"scsi0": "local-lvm:vm-100-disk-0"}) {
		t.Fatal("HasCloudinitDrive")
	}
}

// A NIC is printed "<model>=<MAC>,<options sorted>"; one sent without a
// MAC gets a new one every time, also on an update; a clone always gets
// a new one (K16).
func TestNormaliseNet(t *testing.T) {
	calls := 0
	mac := func() string { calls++; return "bc:24:11:00:00:0" + string(rune('0'+calls)) }
	if got, want := NormaliseNet("virtio,bridge=vmbr0,firewall=1", mac), "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1"; got != want {
		t.Fatalf("NormaliseNet = %q, want %q", got, want)
	}
	if got, want := NormaliseNet("model=e1000,tag=5,macaddr=aa:bb:cc:dd:ee:ff,bridge=vmbr1", mac), "e1000=AA:BB:CC:DD:EE:FF,bridge=vmbr1,tag=5"; got != want || calls != 1 {
		t.Fatalf("NormaliseNet = %q (newMAC calls %d), want %q and no new MAC", got, calls, want)
	}
	if got, want := NormaliseNet("virtio=aa:bb:cc:dd:ee:ff,bridge=vmbr0", mac), "virtio=AA:BB:CC:DD:EE:FF,bridge=vmbr0"; got != want || calls != 1 {
		t.Fatalf("NormaliseNet = %q (calls %d), want %q", got, calls, want)
	}
	if got, want := CloneNet("virtio=AA:BB:CC:DD:EE:FF,bridge=vmbr0,macaddr=AA:BB:CC:DD:EE:FF", mac), "virtio=BC:24:11:00:00:02,bridge=vmbr0"; got != want {
		t.Fatalf("CloneNet = %q, want %q", got, want)
	}
	if got := NetMAC("bridge=vmbr0,virtio=aa:bb:cc:dd:ee:ff"); got != "aa:bb:cc:dd:ee:ff" {
		t.Fatalf("NetMAC = %q", got)
	}
	if got := NetMAC("virtio,bridge=vmbr0"); got != "" {
		t.Fatalf("NetMAC without a MAC = %q", got)
	}
	n := ParseNet("virtio=aa:bb:cc:dd:ee:ff,bridge=vmbr0,queues=4")
	if n.Model != "virtio" || n.MAC != "AA:BB:CC:DD:EE:FF" || n.Props.Get("bridge") != "vmbr0" || n.Props.Get("queues") != "4" {
		t.Fatalf("ParseNet = %+v", n)
	}
	if strings.Contains(n.Props.Print(""), "virtio") {
		t.Fatalf("the model is not an option: %q", n.Props.Print(""))
	}
}

// The boot option's order= list; a legacy "cdn" has none.
func TestBootOrder(t *testing.T) {
	if got := BootOrder("order=scsi0;ide2;net0"); !slices.Equal(got, []string{"scsi0", "ide2", "net0"}) {
		t.Errorf("BootOrder = %v", got)
	}
	if got := BootOrder("cdn"); len(got) != 0 {
		t.Errorf("BootOrder(legacy) = %v", got)
	}
}

package pvecontainer

import "testing"

// parse_lxc_network + print: a NIC without hwaddr gets a new one, a given
// one is kept; type is veth; name first, the rest sorted.
func TestNormaliseNet(t *testing.T) {
	mac := func() string { return "BC:24:11:00:00:01" }
	for in, want := range map[string]string{
		"name=eth0,bridge=vmbr0":                       "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,type=veth",
		"bridge=vmbr0,ip=dhcp,name=eth1":               "name=eth1,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp,type=veth",
		"name=eth0,hwaddr=AA:BB:CC:DD:EE:FF,tag=5":     "name=eth0,hwaddr=AA:BB:CC:DD:EE:FF,tag=5,type=veth",
		"type=veth,name=eth0,hwaddr=AA:BB:CC:DD:EE:FF": "name=eth0,hwaddr=AA:BB:CC:DD:EE:FF,type=veth",
	} {
		if got := NormaliseNet(in, mac); got != want {
			t.Errorf("NormaliseNet(%q) = %q, want %q", in, got, want)
		}
	}
	calls := 0
	NormaliseNet("name=eth0,hwaddr=AA:BB:CC:DD:EE:FF", func() string { calls++; return "" })
	if calls != 0 {
		t.Errorf("a NIC with its hwaddr asked for a new MAC %d times", calls)
	}
}

// parse_volume: volume is the default key, print_ct_mountpoint writes it
// first (the rest sorted, as pvecommon.Props prints); VolumeKeys is valid_volume_keys' order, rootfs first, mpN by
// number (mp10 after mp2), nothing else.
func TestMountPointAndVolumeKeys(t *testing.T) {
	mp := ParseMountPoint("size=8G,local-lvm:vm-100-disk-1,mp=/data,backup=1")
	if mp.Volume() != "local-lvm:vm-100-disk-1" || mp.Get("size") != "8G" {
		t.Fatalf("ParseMountPoint: volume %q size %q", mp.Volume(), mp.Get("size"))
	}
	mp.Set("size", "16G")
	if got, want := mp.Print(), "local-lvm:vm-100-disk-1,backup=1,mp=/data,size=16G"; got != want {
		t.Errorf("Print = %q, want %q", got, want)
	}
	keys := map[string]string{"mp10": "a", "mp2": "b", "rootfs": "c", "unused0": "d", "net0": "e", "mp0": "f"}
	got := VolumeKeys(keys)
	want := []string{"rootfs", "mp0", "mp2", "mp10"}
	if len(got) != len(want) {
		t.Fatalf("VolumeKeys = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("VolumeKeys = %v, want %v", got, want)
		}
	}
}

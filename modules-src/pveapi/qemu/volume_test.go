package qemu

import "testing"

// The base-volume forms of pve-storage's parse_volname.
func TestLinkedBaseForms(t *testing.T) {
	for volid, want := range map[string]int{
		"local-lvm:base-9001-disk-0/vm-202-disk-0":                   9001,
		"shared:9000/base-9000-disk-0.qcow2/201/vm-201-disk-0.qcow2": 9000,
		"ceph:base-120-disk-1/vm-130-disk-0":                         120,
		"local-lvm:vm-202-disk-0":                                    0,
		"shared:201/vm-201-disk-0.qcow2":                             0,
		"local-lvm:base-9001-disk-0":                                 0, // a template's own base volume
	} {
		got, ok := LinkedBase(volid)
		if got != want || ok != (want != 0) {
			t.Errorf("%s: %d %v, want %d", volid, got, ok, want)
		}
	}
}

package qemuserver

import (
	"slices"
	"testing"
)

// check_local_resources without mappings: passed-through devices, old
// syntax and ivshmem block; a serial socket, a SPICE USB port, a mapped
// device and other options do not.
func TestLocalResources(t *testing.T) {
	conf := map[string]string{
		"hostpci0": "0000:01:00.0", "usb0": "host=1234:5678", "usb1": "host=SPICE", "usb2": "mapping=stick",
		"serial0": "socket", "serial1": "/dev/ttyS0", "parallel0": "/dev/parport0", "ivshmem": "size=32",
		"virtiofs0": "dirid=share", "net0": "virtio,bridge=vmbr0", "scsi0": "local-lvm:vm-100-disk-0",
	}
	want := []string{"hostpci0", "ivshmem", "parallel0", "serial1", "usb0", "virtiofs0"}
	if got := LocalResources(conf); !slices.Equal(got, want) {
		t.Errorf("LocalResources = %v, want %v", got, want)
	}
	if got := LocalResources(map[string]string{"memory": "512"}); got != nil {
		t.Errorf("LocalResources of a plain VM = %v", got)
	}
}

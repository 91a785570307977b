package labctl

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// Issue 11: a guest is its config file in the nodes' /etc/pve. The node sees
// what the API created (and pmxcfs's .vmlist lists it); a config edited on
// the node is what the API answers next.
func TestLabGuestsLiveInEtcPve(t *testing.T) {
	t.Parallel()
	lab := startLab(t, 9)
	if err := lab.Sim().AddGuest("pve01", pvesim.GuestSpec{VMID: 100, Config: map[string]string{
		"name": "web", "cores": "2", "memory": "1024", "scsi0": "local-lvm:4", "net0": "virtio,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	out := onNode(t, lab, "pve01", "cat /etc/pve/qemu-server/100.conf; cat /etc/pve/.vmlist")
	for _, want := range []string{"cores: 2\n", "scsi0: local-lvm:vm-100-disk-0,size=4G\n", "net0: virtio=BC:24:11:",
		`"100": { "node": "pve01", "type": "qemu"`} {
		if !strings.Contains(out, want) {
			t.Errorf("pve01 does not show %q:\n%s", want, out)
		}
	}
	onNode(t, lab, "pve01", "sed -i 's/^cores: 2$/cores: 6/' /etc/pve/nodes/pve01/qemu-server/100.conf")
	var conf map[string]any
	if err := labAPI(lab, "pve01", "/nodes/pve01/qemu/100/config", &conf); err != nil {
		t.Fatal(err)
	}
	if conf["cores"] != float64(6) || conf["name"] != "web" {
		t.Errorf("the API does not show the config edited on the node: %v", conf)
	}
}

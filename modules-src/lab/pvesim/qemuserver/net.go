package qemuserver

import (
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// NICModels are the models a NIC option names (Network.pm $nic_model_list).
var NICModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551",
	"i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

// NIC is a parsed netN value (parse_net): the model, the MAC (upper case)
// and the other options.
type NIC struct {
	Model, MAC string
	Props      pvecommon.Props
}

// parseNIC reads a netN value: "<model>[=<mac>]" or model=/macaddr=, the
// rest kept as written. The MAC keeps its case.
func parseNIC(v string) NIC {
	n := NIC{Props: pvecommon.Props{Vals: map[string]string{}}}
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, val, hasEq := strings.Cut(part, "=")
		switch {
		case !hasEq && slices.Contains(NICModels, k):
			n.Model = k
		case hasEq && slices.Contains(NICModels, k):
			n.Model, n.MAC = k, val
		case k == "model":
			n.Model = val
		case k == "macaddr":
			n.MAC = val
		default:
			n.Props.Set(k, val)
		}
	}
	return n
}

// ParseNet is parse_net: the MAC in upper case.
func ParseNet(v string) NIC {
	n := parseNIC(v)
	n.MAC = strings.ToUpper(n.MAC)
	return n
}

// NormaliseNet is parse_net + print_net: "virtio,bridge=vmbr0" or
// "model=virtio,…" becomes "virtio=<MAC>,bridge=…"; a NIC given without a
// MAC gets newMAC() — every time, also on an update (add_random_macs,
// K16: send the MAC you have to keep it).
func NormaliseNet(v string, newMAC func() string) string {
	n := parseNIC(v)
	if n.MAC == "" {
		n.MAC = newMAC()
	}
	out := n.Model + "=" + strings.ToUpper(n.MAC)
	if rest := n.Props.Print(""); rest != "" {
		out += "," + rest
	}
	return out
}

// NetMAC is a NIC value's first MAC as written ("" without one).
func NetMAC(v string) string {
	for _, part := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && (k == "macaddr" || slices.Contains(NICModels, k)) {
			return val
		}
	}
	return ""
}

// CloneNet is clone_vm's NIC: the same NIC with a new MAC, newMAC()
// ("always change MAC! address").
func CloneNet(v string, newMAC func() string) string { return NormaliseNet(dropMAC(v), newMAC) }

// dropMAC is v without its MAC: "virtio=<mac>" becomes "virtio",
// macaddr= goes.
func dropMAC(v string) string {
	var parts []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		k, _, hasEq := strings.Cut(part, "=")
		if hasEq && slices.Contains(NICModels, k) {
			parts = append(parts, k)
			continue
		}
		if k == "macaddr" {
			continue
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ",")
}

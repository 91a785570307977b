package qemu

import (
	"fmt"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// NICModels are qemu-server's $nic_model_list: each is also a key alias
// naming the MAC ("virtio=BC:24:…").
var NICModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551",
	"i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

var netShape = func() pveformat.Shape {
	s := pveformat.Shape{DefaultKey: "model", Booleans: []string{"firewall", "link_down", "host-tunnel"},
		Aliases: map[string]pveformat.Alias{}}
	for _, m := range NICModels {
		s.Aliases[m] = pveformat.Alias{To: "macaddr", NameIn: "model"}
	}
	return s
}()

// Net is one `netN`. Optional values PVE may hold explicitly (firewall=0)
// are pointers, so what was read is what is printed back.
type Net struct {
	Model    string   // virtio, e1000, …
	MAC      string   // macaddr: keep it on every update (K16)
	Bridge   string   // vmbr0
	Tag      int      // VLAN tag, 1..4094; 0 = untagged
	Trunks   string   // "10;20-30", as PVE writes it
	Firewall *bool    // K8: on a classic vmbrN, hairpin return traffic is dropped
	LinkDown *bool    // link_down
	MTU      int      // 1 = the bridge's MTU (K9); 0 = unset
	Rate     *float64 // MB/s
	Queues   *int
	Other    pveformat.Props // keys not modeled here (host-tunnel, …)
}

// ParseNet reads a `netN` value.
func ParseNet(key, value string) (Net, error) {
	p, err := pveformat.Parse(value, netShape)
	if err != nil {
		return Net{}, fmt.Errorf("%s: %w", key, err)
	}
	t := &take{props: p, name: key}
	n := Net{Model: t.str("model"), MAC: t.str("macaddr"), Bridge: t.str("bridge"), Trunks: t.str("trunks"),
		Firewall: t.boolPtr("firewall"), LinkDown: t.boolPtr("link_down"), Rate: t.floatPtr("rate"), Queues: t.intPtr("queues")}
	if v := t.intPtr("tag"); v != nil {
		n.Tag = *v
	}
	if v := t.intPtr("mtu"); v != nil {
		n.MTU = *v
	}
	n.Other = t.rest()
	return n, t.err
}

// Render prints the NIC as print_net would: "virtio=MAC,bridge=…,…". It
// fails only for a value PVE cannot store (one with a comma).
func (n Net) Render() (string, error) {
	p := &put{}
	p.str("model", n.Model)
	p.str("macaddr", n.MAC)
	p.str("bridge", n.Bridge)
	if n.Tag != 0 {
		p.str("tag", fmt.Sprint(n.Tag))
	}
	p.str("trunks", n.Trunks)
	p.boolPtr("firewall", n.Firewall)
	p.boolPtr("link_down", n.LinkDown)
	if n.MTU != 0 {
		p.str("mtu", fmt.Sprint(n.MTU))
	}
	p.floatPtr("rate", n.Rate)
	p.intPtr("queues", n.Queues)
	p.other(n.Other)
	return pveformat.Print(p.props, netShape)
}

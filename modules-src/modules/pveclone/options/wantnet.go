package options

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// The NICs and IP configurations a task asks for, read from a dict of
// keys or from PVE's own strings.

var netWantKeys = []string{"model", "bridge", "tag", "trunks", "firewall", "mtu", "rate", "queues", "link_down", "macaddr"}

// parseNetWant reads a NIC as a dict of its keys or as PVE's string
// ("virtio,bridge=vmbr0,tag=10").
func parseNetWant(key string, v any) (Net, error) {
	if !qemu.IsNet(key) {
		return Net{}, fmt.Errorf("not a NIC key (net0 … net31)")
	}
	var m map[string]any
	switch x := v.(type) {
	case map[string]any:
		m = x
	case string:
		var err error
		if m, err = netStringKeys(key, x); err != nil {
			return Net{}, err
		}
	default:
		return Net{}, fmt.Errorf("give a dict of NIC keys (model, bridge, tag, …) or PVE's string, not %T", v)
	}
	var nw Net
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := nw.set(k, pveapi.String(m[k])); err != nil {
			return Net{}, err
		}
	}
	if nw.mtu != nil && *nw.mtu > 1 && *nw.mtu < 576 {
		return Net{}, fmt.Errorf("mtu: %d is below 576 (1 means the bridge's MTU, K9)", *nw.mtu)
	}
	return nw, nil
}

// netStringKeys turns a NIC given as PVE's property string into the dict
// form, refusing keys the dict form does not take.
func netStringKeys(key, x string) (map[string]any, error) {
	n, err := qemu.ParseNet(key, x)
	if err != nil {
		return nil, err
	}
	for _, kv := range n.Other {
		return nil, fmt.Errorf("%q is not a NIC key PVE knows (it takes %s)", kv.Key, strings.Join(netWantKeys, ", "))
	}
	m := map[string]any{}
	if n.Model != "" {
		m["model"] = n.Model
	}
	if n.MAC != "" {
		m["macaddr"] = n.MAC
	}
	if n.Bridge != "" {
		m["bridge"] = n.Bridge
	}
	if n.Tag != 0 {
		m["tag"] = n.Tag
	}
	if n.Trunks != "" {
		m["trunks"] = n.Trunks
	}
	if n.Firewall != nil {
		m["firewall"] = *n.Firewall
	}
	if n.LinkDown != nil {
		m["link_down"] = *n.LinkDown
	}
	if n.MTU != 0 {
		m["mtu"] = n.MTU
	}
	if n.Rate != nil {
		m["rate"] = *n.Rate
	}
	if n.Queues != nil {
		m["queues"] = *n.Queues
	}
	return m, nil
}

// set checks one NIC key's value as PVE's net format does and records it.
func (nw *Net) set(k, s string) error {
	var err error
	switch k {
	case "model":
		if !slices.Contains(qemu.NICModels, s) {
			err = fmt.Errorf("model: %q is not a NIC model PVE knows (%s)", s, strings.Join(qemu.NICModels, ", "))
		}
		nw.model = s
	case "bridge":
		if !regexp.MustCompile(`^[-_.\w\d]+$`).MatchString(s) {
			err = fmt.Errorf("bridge: %q is not a bridge name", s)
		}
		nw.bridge = s
	case "macaddr", "mac":
		if err = pveformat.CheckFormat("mac-addr", s); err == nil {
			nw.mac = strings.ToUpper(s)
		}
	case "trunks":
		nw.trunks = strings.ReplaceAll(s, ",", ";")
		if !regexp.MustCompile(`^\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*$`).MatchString(nw.trunks) {
			err = fmt.Errorf("trunks: %q is not a VLAN list (10;20-30)", s)
		}
	case "tag":
		nw.tag, err = intIn(k, s, 0, 4094) // 0: untagged
	case "mtu":
		nw.mtu, err = intIn(k, s, 1, 65520) // 1: the bridge's MTU (K9)
	case "queues":
		nw.queues, err = intIn(k, s, 0, 64)
	case "firewall", "link_down":
		var b bool
		b, err = pveapi.ParseBool(s)
		if k == "firewall" {
			nw.firewall = &b
		} else {
			nw.linkDown = &b
		}
	case "rate":
		var f float64
		f, err = strconv.ParseFloat(s, 64)
		if err == nil && f < 0 {
			err = fmt.Errorf("rate: must be at least 0")
		}
		nw.rate = &f
	default:
		err = fmt.Errorf("%q is not a NIC key PVE knows (it takes %s)", k, strings.Join(netWantKeys, ", "))
	}
	return err
}

func intIn(key, s string, lo, hi int) (*int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %q is not an integer", key, s)
	}
	if n < lo || n > hi {
		return nil, fmt.Errorf("%s: %d is not in %d..%d", key, n, lo, hi)
	}
	return &n, nil
}

// Apply merges the wanted keys into n; n.MAC stays unless a MAC is given.
func (w Net) Apply(n qemu.Net) qemu.Net {
	if w.model != "" {
		n.Model = w.model
	}
	if n.Model == "" {
		n.Model = "virtio"
	}
	if w.mac != "" {
		n.MAC = w.mac
	}
	if w.bridge != "" {
		n.Bridge = w.bridge
	}
	if w.trunks != "" {
		n.Trunks = w.trunks
	}
	if w.tag != nil {
		n.Tag = *w.tag
	}
	if w.mtu != nil {
		n.MTU = *w.mtu
	}
	if w.queues != nil {
		n.Queues = w.queues
	}
	if w.firewall != nil {
		n.Firewall = w.firewall
	}
	if w.linkDown != nil {
		n.LinkDown = w.linkDown
	}
	if w.rate != nil {
		n.Rate = w.rate
	}
	return n
}

// parseIPConfigWant reads ipconfigN as PVE's string or a dict {ip, gw, ip6, gw6}.
func parseIPConfigWant(key string, v any) (qemu.IPConfig, error) {
	s, ok := v.(string)
	if m, isMap := v.(map[string]any); isMap {
		s, ok = propsString(m, nil), true
	}
	if !ok {
		return qemu.IPConfig{}, fmt.Errorf("%s: give PVE's string (ip=10.0.0.5/24,gw=10.0.0.1) or a dict", key)
	}
	ic, err := qemu.ParseIPConfig(key, s)
	if err != nil {
		return qemu.IPConfig{}, err
	}
	return ic, nil
}

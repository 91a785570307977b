package qemu

import (
	"fmt"
	"net/netip"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// IPConfig is one cloud-init `ipconfigN` (Network.pm $ipconfig_fmt).
type IPConfig struct {
	IP, GW   string // "dhcp", "manual" or an IPv4 CIDR; gateway IPv4
	IP6, GW6 string // "auto", "dhcp", "manual" or an IPv6 CIDR; gateway IPv6
	Other    pveformat.Props
}

// ParseIPConfig reads and checks an ipconfigN value: each key's format as
// the API checks it (pve-ipv4-config, ipv4, pve-ipv6-config, ipv6), then
// parse_ipconfig's rules. Reconstruction of severity: qemu-server's
// parse_ipconfig only warns and ignores such a config when it writes the
// cloud-init data; refusing it up front is what a caller wants.
func ParseIPConfig(key, value string) (IPConfig, error) {
	p, err := pveformat.Parse(value, pveformat.Shape{})
	if err != nil {
		return IPConfig{}, fmt.Errorf("%s: %w", key, err)
	}
	t := &take{props: p, name: key}
	c := IPConfig{IP: t.str("ip"), GW: t.str("gw"), IP6: t.str("ip6"), GW6: t.str("gw6"), Other: t.rest()}
	for _, kv := range c.Other {
		return c, fmt.Errorf("%s: invalid key in comma-separated list property: %s", key, kv.Key)
	}
	return c, c.check(key)
}

func (c IPConfig) check(key string) error {
	for _, f := range []struct{ k, v, format string }{
		{"ip", c.IP, "pve-ipv4-config"}, {"gw", c.GW, "ipv4"}, {"ip6", c.IP6, "pve-ipv6-config"}, {"gw6", c.GW6, "ipv6"},
	} {
		if f.v == "" {
			continue
		}
		if err := pveformat.CheckFormat(f.format, f.v); err != nil {
			return fmt.Errorf("%s: %s: %w", key, f.k, err)
		}
	}
	switch {
	case c.GW != "" && c.IP == "":
		return fmt.Errorf("%s: gateway specified without specifying an IP address", key)
	case c.GW6 != "" && c.IP6 == "":
		return fmt.Errorf("%s: IPv6 gateway specified without specifying an IPv6 address", key)
	case c.GW != "" && c.IP == "dhcp":
		return fmt.Errorf("%s: gateway specified together with DHCP", key)
	}
	if c.GW6 != "" {
		if _, err := netip.ParsePrefix(c.IP6); err != nil {
			return fmt.Errorf("%s: IPv6 gateway specified together with %s address", key, c.IP6)
		}
	}
	return nil
}

// Effective is what cloud-init is given: with neither address, DHCP on
// both families (parse_ipconfig).
func (c IPConfig) Effective() IPConfig {
	if c.IP == "" && c.IP6 == "" {
		c.IP, c.IP6 = "dhcp", "dhcp"
	}
	return c
}

// Render prints the value as PVE stores it (keys sorted).
func (c IPConfig) Render() (string, error) {
	p := &put{}
	p.str("ip", c.IP)
	p.str("gw", c.GW)
	p.str("ip6", c.IP6)
	p.str("gw6", c.GW6)
	p.other(c.Other)
	return pveformat.Print(p.props, pveformat.Shape{})
}

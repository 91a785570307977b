package qemu

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"slices"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Masked is how qemu-server shows a set cipassword in a read (vm_config,
// vm_pending): never the value. A pending one carries a trailing space.
const Masked = "**********"

// Config is a VM's configuration as GET …/config returns it: every key as
// a string (numbers as PVE prints them), the digest apart.
type Config struct {
	Values map[string]string
	// Digest is the SHA1 of the config file; an Update carrying it is
	// refused by PVE if the file changed since this read.
	Digest string
}

// ConfigPath is the schema path of a VM's config.
const ConfigPath = "/nodes/{node}/qemu/{vmid}/config"

// GetConfig reads a VM's config. current=false is PVE's default view, the
// pending values already applied; current=true (`current=1`) is what the
// VM runs with now — the view a read-back of a running VM must use.
func GetConfig(ctx context.Context, g pveapi.Getter, node string, vmid int, current bool) (Config, error) {
	var q url.Values
	if current {
		q = url.Values{"current": {"1"}}
	}
	var raw map[string]any
	if err := g.Get(ctx, pveapi.Path("/nodes/%s/qemu/%s/config", node, fmt.Sprint(vmid)), q, &raw); err != nil {
		return Config{}, err
	}
	return ConfigFrom(raw), nil
}

// ConfigFrom builds a Config from a decoded answer.
func ConfigFrom(raw map[string]any) Config {
	c := Config{Values: map[string]string{}}
	for k, v := range raw {
		if k == "digest" {
			c.Digest = pveapi.String(v)
			continue
		}
		c.Values[k] = pveapi.String(v)
	}
	return c
}

// Keys returns the config's keys, sorted.
func (c Config) Keys() []string { return slices.Sorted(maps.Keys(c.Values)) }

// Nets returns every netN, by key.
func (c Config) Nets() (map[string]Net, error) {
	out := map[string]Net{}
	for k, v := range c.Values {
		if IsNet(k) {
			n, err := ParseNet(k, v)
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
	}
	return out, nil
}

// Disks returns every drive (not unusedN), by key.
func (c Config) Disks() (map[string]Drive, error) {
	out := map[string]Drive{}
	for k, v := range c.Values {
		if IsDisk(k) {
			d, err := ParseDrive(k, v)
			if err != nil {
				return nil, err
			}
			out[k] = d
		}
	}
	return out, nil
}

// Unused returns the volumes of unusedN, by key.
func (c Config) Unused() (map[string]string, error) {
	out := map[string]string{}
	for k, v := range c.Values {
		if IsUnused(k) {
			vol, err := ParseUnused(k, v)
			if err != nil {
				return nil, err
			}
			out[k] = vol
		}
	}
	return out, nil
}

// IPConfigs returns every ipconfigN, by key.
func (c Config) IPConfigs() (map[string]IPConfig, error) {
	out := map[string]IPConfig{}
	for k, v := range c.Values {
		if IsIPConfig(k) {
			ic, err := ParseIPConfig(k, v)
			if err != nil {
				return nil, err
			}
			out[k] = ic
		}
	}
	return out, nil
}

// Agent returns the agent option; ok is false when the key is absent (the
// only "not configured" case; agent: 0 is configured and disabled, K20).
func (c Config) Agent() (a Agent, ok bool, err error) {
	v, ok := c.Values["agent"]
	if !ok {
		return Agent{}, false, nil
	}
	a, err = ParseAgent(v)
	return a, true, err
}

// Boot returns the boot option; an absent one is PVE's default (legacy "cdn").
func (c Config) Boot() (Boot, error) {
	v, ok := c.Values["boot"]
	if !ok {
		return Boot{Legacy: "cdn"}, nil
	}
	return ParseBoot(v)
}

// SSHKeys returns the decoded public keys of `sshkeys` (K12).
func (c Config) SSHKeys() []string { return DecodeSSHKeys(c.Values["sshkeys"]) }

// MACs returns the MAC of every NIC by key (K17: returned every run).
func (c Config) MACs() (map[string]string, error) {
	nets, err := c.Nets()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, n := range nets {
		out[k] = n.MAC
	}
	return out, nil
}

// Template tells whether the VM is a template.
func (c Config) Template() bool { return c.Values["template"] == "1" }

// Lock is the config's lock ("clone", "create", "migrate", …), "" if none (K4).
func (c Config) Lock() string { return c.Values["lock"] }

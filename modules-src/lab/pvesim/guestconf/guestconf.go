// Package guestconf is a guest's configuration file as PVE reads and writes
// it, for VMs and containers alike: qemu-server's parse_vm_config and
// write_vm_config ($generate_raw_config, src/PVE/QemuServer.pm),
// pve-container's parse_pct_config and write_pct_config
// (src/PVE/LXC/Config.pm), and pve-guest-common's pending section
// (src/PVE/AbstractConfig.pm: load_current_config's view with pending
// values, parse_pending_delete, vmconfig_apply_pending).
//
// The layout: the description as leading "#" lines, each through
// encode_text; "key: value" lines sorted by key; a pending section with
// "delete: a,!b" (a leading "!" forces the deletion), headed [PENDING] in
// a VM's file and [pve:pending] in a container's. The digest is the
// SHA-1 of the file's bytes, as PVE's. Snapshot sections are kept in Raw
// but not simulated.
//
// It knows the file only: where files live, locks and the API views are
// pvesim's (guests/guestlock.go, guests/guestkind.go); it imports nothing
// of pvesim (issue 27 §1).
package guestconf

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Conf is a parsed config file.
type Conf struct {
	// Description is the comment lines as stored (encode_text'd, joined
	// with "\n", without the "#"): VMDescription and CTDescription read it
	// as each kind's API does.
	Description string
	Keys        map[string]string
	Pending     map[string]string
	// PendingDelete lists keys to delete at the next apply; force-deleted
	// keys carry a leading "!" as in PVE.
	PendingDelete []string
	Digest        string
	// Raw is the whole file.
	Raw string
}

var confLineRe = regexp.MustCompile(`^([a-z][a-z_\-]*\d*):\s*(.*?)\s*$`)

// Parse reads a config file.
func Parse(raw string) *Conf {
	c := &Conf{Keys: map[string]string{}, Pending: map[string]string{}, Raw: raw}
	sum := sha1.Sum([]byte(raw))
	c.Digest = hex.EncodeToString(sum[:])
	section := ""
	var desc []string
	for _, line := range strings.Split(raw, "\n") {
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[] ")
			if p := strings.ToLower(section); p == "pending" || p == "pve:pending" { // both parsers match /i
				section = pending
			}
			continue
		}
		if section == "" && strings.HasPrefix(line, "#") {
			desc = append(desc, strings.TrimPrefix(line, "#"))
			continue
		}
		m := confLineRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		switch section {
		case "":
			if m[1] == "description" {
				// Both parsers take a "description: text" line into the
				// description too (decode_text'd on read, like the "#"
				// lines). Reconstruction: PVE appends it without a newline
				// before a following "#" line; here it is a line of its own.
				desc = append(desc, m[2])
				continue
			}
			c.Keys[m[1]] = m[2]
		case pending:
			if m[1] == "delete" {
				c.PendingDelete = pveschema.SplitList(m[2]) // parse_pending_delete: [,;] and blanks
			} else {
				c.Pending[m[1]] = m[2]
			}
		}
	}
	c.Description = strings.Join(desc, "\n")
	return c
}

const pending = "pending"

// VMPending and CTPending head the pending section of each kind's file
// (qemu-server $generate_raw_config, pve-container write_pct_config).
const (
	VMPending = "[PENDING]"
	CTPending = "[pve:pending]"
)

// Render writes the file as write_vm_config / write_pct_config do, the
// pending section under header (VMPending or CTPending).
func (c *Conf) Render(header string) string {
	var b strings.Builder
	if c.Description != "" {
		for _, l := range strings.Split(c.Description, "\n") {
			b.WriteString("#" + l + "\n")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(c.Keys)) {
		fmt.Fprintf(&b, "%s: %s\n", k, c.Keys[k])
	}
	if len(c.Pending) > 0 || len(c.PendingDelete) > 0 {
		b.WriteString("\n" + header + "\n")
		if len(c.PendingDelete) > 0 {
			fmt.Fprintf(&b, "delete: %s\n", strings.Join(c.PendingDelete, ","))
		}
		for _, k := range slices.Sorted(maps.Keys(c.Pending)) {
			fmt.Fprintf(&b, "%s: %s\n", k, c.Pending[k])
		}
	}
	return b.String()
}

// IsTemplate tells whether the guest is a template.
func (c *Conf) IsTemplate() bool { return c.Keys["template"] == "1" }

// Lock is the guest's lock ("" when none).
func (c *Conf) Lock() string { return c.Keys["lock"] }

// CheckLock is AbstractConfig.pm check_lock: a locked guest refuses the
// change, in the words "<guest_type> is locked (<lock>)" — guestType is
// "VM" (QemuConfig) or "CT" (LXC::Config).
func (c *Conf) CheckLock(guestType string) error {
	if l := c.Lock(); l != "" {
		return pvecommon.Die("%s is locked (%s)", guestType, l)
	}
	return nil
}

// IsSet tells whether key has a value now or a pending one, as the update
// paths test defined($conf->{$opt}) || defined($conf->{pending}->{$opt})
// before a delete; the description is the config's comment lines.
func (c *Conf) IsSet(key string) bool {
	_, now := c.Keys[key]
	_, pending := c.Pending[key]
	return now || pending || (key == "description" && c.Description != "")
}

// PendingDeleted tells whether key is marked for deletion.
func (c *Conf) PendingDeleted(key string) bool {
	return slices.Contains(c.PendingDelete, key) || slices.Contains(c.PendingDelete, "!"+key)
}

// WithPending returns the keys with pending values applied (GET config
// without current=1, load_current_config).
func (c *Conf) WithPending() map[string]string {
	out := maps.Clone(c.Keys)
	for k, v := range c.Pending {
		out[k] = v
	}
	for _, k := range c.PendingDelete {
		delete(out, strings.TrimPrefix(k, "!"))
	}
	return out
}

// ApplyPending commits the pending section (vmconfig_apply_pending).
func (c *Conf) ApplyPending() {
	c.Keys = c.WithPending()
	c.Pending = map[string]string{}
	c.PendingDelete = nil
}

package pveformat

import (
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/calendarevent"
)

var (
	nodeRe     = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
	haNodeRe   = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?(?::\d+)?$`)
	vmidRe     = regexp.MustCompile(`^[1-9][0-9]{2,8}$`)
	configIDRe = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+$`)
	storageRe  = regexp.MustCompile(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`)
	poolRe     = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`) // AccessControl.pm verify_poolname (nested pools since 8.1)
	macRe      = regexp.MustCompile(`(?i)^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$`)
	urlencRe   = regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`)
	replIDRe   = regexp.MustCompile(`^(\d+)-(\d+)$`)
	haSIDRe    = regexp.MustCompile(`^[a-z]+:\S+$`)
	haSIDVMRe  = regexp.MustCompile(`^(?:[a-z]+:\S+|\d+)$`)
	// pve-common ParseUtils.pm $EMAIL_RE: $EMAIL_USER_RE@host, anchored as
	// pve_verify_email's /^$EMAIL_RE$/, whose Perl $ also matches before a
	// final newline. Perl's \w is taken as ASCII here (a reconstruction: PVE
	// may take a Unicode letter in the local part that this refuses).
	emailRe = regexp.MustCompile(`^[\w+\-~]+(?:\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(?:\.[a-zA-Z0-9\-]+)*\n?$`)
)

// formats are the named formats of pve-common (JSONSchema.pm),
// qemu-server, pve-guest-common (ReplicationConfig.pm) and pve-ha-manager
// (HA/Tools.pm) that the typed areas meet; messages are PVE's.
var formats = map[string]func(string) error{
	"pve-node":       match(nodeRe, "value does not look like a valid node name"),
	"pve-vmid":       match(vmidRe, "value does not look like a valid VM ID"),
	"pve-configid":   matchf(configIDRe, "invalid configuration ID '%s'"),
	"pve-storage-id": matchf(storageRe, "storage ID '%s' contains illegal characters"),
	"pve-poolid":     matchf(poolRe, "pool name '%s' contains invalid characters"),
	"mac-addr":       match(macRe, "value does not look like a valid unicast MAC address"),
	"urlencoded":     matchf(urlencRe, "invalid urlencoded string: %s"),
	"ip":             addr(func(a netip.Addr) bool { return true }, "value does not look like a valid IP address"),
	"ipv4":           addr(netip.Addr.Is4, "value does not look like a valid IPv4 address"),
	"ipv6":           addr(netip.Addr.Is6, "value does not look like a valid IPv6 address"),
	"CIDRv4":         cidr(4, "value does not look like a valid IPv4 CIDR network"),
	"CIDRv6":         cidr(6, "value does not look like a valid IPv6 CIDR network"),
	"CIDR": func(s string) error {
		if cidr(4, "")(s) != nil && cidr(6, "")(s) != nil {
			return fmt.Errorf("value does not look like a valid CIDR network")
		}
		return nil
	},
	"pve-ipv4-config": func(s string) error {
		if s == "dhcp" || s == "manual" || cidr(4, "")(s) == nil {
			return nil
		}
		return fmt.Errorf("value does not look like a valid ipv4 network configuration")
	},
	"pve-ipv6-config": func(s string) error {
		if s == "auto" || s == "dhcp" || s == "manual" || cidr(6, "")(s) == nil {
			return nil
		}
		return fmt.Errorf("value does not look like a valid ipv6 network configuration")
	},
	"disk-size": func(s string) error { _, err := ParseSize(s); return err },
	"pve-replication-job-id": func(s string) error {
		m := replIDRe.FindStringSubmatch(s)
		if m == nil {
			return fmt.Errorf("invalid replication job id '%s'", s)
		}
		if g, _ := strconv.Atoi(m[1]); g < 100 {
			return fmt.Errorf("invalid replication job id '%s' (guest IDs < 100 are reserved)", s)
		}
		return nil
	},
	"pve-ha-resource-id":       match(haSIDRe, "value does not look like a valid ha resource id"),
	"pve-ha-resource-or-vm-id": match(haSIDVMRe, "value does not look like a valid ha resource id"),
	"pve-ha-node":              match(haNodeRe, "value does not look like a valid ha node"),
	"pve-ha-group-id":          matchf(configIDRe, "invalid configuration ID '%s'"),
	"pve-ha-rule-id":           matchf(configIDRe, "invalid configuration ID '%s'"),
	// pve-common CalendarEvent.pm pve_verify_calendar_event over
	// proxmox-time: replication, backup and job schedules, refused here
	// before a write that PVE would answer with a 400.
	"pve-calendar-event": calendarevent.Verify,
	"email":              match(emailRe, "value does not look like a valid email address"),
}

func match(re *regexp.Regexp, msg string) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf("%s", msg)
		}
		return nil
	}
}

func matchf(re *regexp.Regexp, msg string) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf(msg, s)
		}
		return nil
	}
}

// addr checks an address like PVE's IPV4RE/IPV6RE: no zone, no leading
// zeros in IPv4 octets (netip refuses those too).
func addr(family func(netip.Addr) bool, msg string) func(string) error {
	return func(s string) error {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || !family(a) {
			return fmt.Errorf("%s", msg)
		}
		return nil
	}
}

// cidr is pve_verify_cidrv4/v6: an address and a prefix of 8..32 (v4) or
// 8..128 (v6); the address need not be the network's first.
func cidr(family int, msg string) func(string) error {
	return func(s string) error {
		ip, bits, ok := strings.Cut(s, "/")
		n, err := strconv.Atoi(bits)
		max, check := 32, netip.Addr.Is4
		if family == 6 {
			max, check = 128, netip.Addr.Is6
		}
		if !ok || err != nil || bits != strconv.Itoa(n) || n <= 7 || n > max || addr(check, msg)(ip) != nil {
			return fmt.Errorf("%s", msg)
		}
		return nil
	}
}

// CheckFormat verifies s against the named format. A "-list" format checks
// every element of the list (PVE::Tools::split_list), an "-opt" one a value
// that is Perl-true ("" and "0" pass, as JSONSchema.pm check_format has
// it). Formats this package does not know pass: it errs on PVE's side
// rather than refuse what PVE would take.
func CheckFormat(name, s string) error {
	if check, ok := formats[name]; ok {
		return check(s)
	}
	if base, ok := strings.CutSuffix(name, "-opt"); ok {
		if check, ok := formats[base]; ok && s != "" && s != "0" {
			return check(s)
		}
		return nil
	}
	if base, ok := strings.CutSuffix(name, "-list"); ok {
		if check, ok := formats[base]; ok {
			for _, item := range SplitList(s) {
				if err := check(item); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// KnownFormat tells whether CheckFormat really checks name.
func KnownFormat(name string) bool {
	_, ok := formats[name]
	for _, suffix := range []string{"-list", "-opt"} {
		if base, cut := strings.CutSuffix(name, suffix); !ok && cut {
			_, ok = formats[base]
		}
	}
	return ok
}

// SplitList is PVE::Tools::split_list: commas, semicolons, white space.
func SplitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == 0
	})
}

// EncodeURL encodes text for a parameter of format "urlencoded": every
// byte but the characters that format allows ([-a-zA-Z0-9_.!~*'()]) as
// %XX — what JavaScript's encodeURIComponent produces, and what the GUI
// sends for `sshkeys`. Spaces become %20, never "+".
func EncodeURL(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// DecodeURL is URI::Escape::uri_unescape, which qemu-server applies to a
// stored `sshkeys` (API2/Qemu.pm, QemuServer/Cloudinit.pm): %XX becomes the
// byte, anything else (a lone %, a "+") stays as it is.
func DecodeURL(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			n, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b.WriteByte(byte(n))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

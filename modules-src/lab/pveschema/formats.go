package pveschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/calendarevent"
)

// formatCheck verifies one value; the error text is PVE's own (it follows
// "invalid format - " in the 400 answer).
type formatCheck func(string) error

var (
	nodeRe      = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`)
	configIDRe  = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+$`)
	storageIDRe = regexp.MustCompile(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`)
	poolIDRe    = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`) // AccessControl.pm verify_poolname: nested pools (8.1+), three levels
	realmRe     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.\-_]+$`)
	userIDRe    = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+$`)
	groupIDRe   = regexp.MustCompile(`^[A-Za-z0-9.\-_]+$`) // also role names
	tokenIDRe   = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+![A-Za-z][A-Za-z0-9.\-_]+$`)
	dnsNameRe   = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*(?:[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)$`)
	macRe       = regexp.MustCompile(`^[a-fA-F0-9]{2}(?::[a-fA-F0-9]{2}){5}$`)
	vmidRe      = regexp.MustCompile(`^[1-9]\d{2,8}$`)
	replJobRe   = regexp.MustCompile(`^[1-9][0-9]{2,8}-\d{1,9}$`)
	contentRe   = regexp.MustCompile(`^(images|rootdir|vztmpl|iso|backup|snippets|import|none)$`)
	// pve-common ParseUtils.pm: $EMAIL_RE = $EMAIL_USER_RE@host, with
	// $EMAIL_USER_RE = [\w\+\-\~]+(\.[\w\+\-\~]+)*, anchored /^$EMAIL_RE$/ (Perl's
	// $ also before a final newline). Reconstruction: Perl's \w taken as
	// ASCII.
	emailRe = regexp.MustCompile(`^[\w+\-~]+(?:\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(?:\.[a-zA-Z0-9\-]+)*\n?$`)
)

// formats holds the cheap checks of PVE's registered formats; unknown
// formats are accepted, which errs on the permissive side.
var formats = map[string]formatCheck{
	"email": func(s string) error { // JSONSchema.pm pve_verify_email
		if !emailRe.MatchString(s) {
			return errors.New("value does not look like a valid email address")
		}
		return nil
	},
	"pve-node": func(s string) error {
		if !nodeRe.MatchString(s) {
			return errors.New("value does not look like a valid node name")
		}
		return nil
	},
	"pve-configid": func(s string) error {
		if !configIDRe.MatchString(s) {
			return fmt.Errorf("invalid configuration ID '%s'", s)
		}
		return nil
	},
	"pve-storage-id": func(s string) error {
		if !storageIDRe.MatchString(s) {
			return fmt.Errorf("storage ID '%s' contains illegal characters", s)
		}
		return nil
	},
	"pve-poolid": func(s string) error {
		if !poolIDRe.MatchString(s) {
			return fmt.Errorf("pool name '%s' contains invalid characters", s)
		}
		return nil
	},
	"pve-realm": func(s string) error {
		if !realmRe.MatchString(s) {
			return errors.New("value does not look like a valid realm")
		}
		return nil
	},
	"pve-userid": func(s string) error {
		if !userIDRe.MatchString(s) {
			return errors.New("value does not look like a valid user name")
		}
		return nil
	},
	// AccessControl.pm verify_groupname, verify_rolename, pve_verify_tokenid.
	"pve-groupid": func(s string) error {
		if !groupIDRe.MatchString(s) {
			return fmt.Errorf("group name '%s' contains invalid characters", s)
		}
		return nil
	},
	"pve-roleid": func(s string) error {
		if !groupIDRe.MatchString(s) {
			return fmt.Errorf("role name '%s' contains invalid characters", s)
		}
		return nil
	},
	"pve-tokenid": func(s string) error {
		if !tokenIDRe.MatchString(s) {
			return fmt.Errorf("value '%s' does not look like a valid token ID", s)
		}
		return nil
	},
	"pve-vmid": func(s string) error {
		if !vmidRe.MatchString(s) {
			return errors.New("value does not look like a valid VM ID")
		}
		return nil
	},
	"pve-replication-job-id": func(s string) error {
		if !replJobRe.MatchString(s) {
			return fmt.Errorf("invalid replication job id '%s'", s)
		}
		return nil
	},
	"ip": func(s string) error {
		if net.ParseIP(s) == nil {
			return fmt.Errorf("value does not look like a valid IP address")
		}
		return nil
	},
	"ipv4": func(s string) error {
		if ip := net.ParseIP(s); ip == nil || ip.To4() == nil {
			return fmt.Errorf("value does not look like a valid IPv4 address")
		}
		return nil
	},
	"ipv6": func(s string) error {
		if ip := net.ParseIP(s); ip == nil || ip.To4() != nil {
			return fmt.Errorf("value does not look like a valid IPv6 address")
		}
		return nil
	},
	"address": func(s string) error {
		if net.ParseIP(s) == nil && !dnsNameRe.MatchString(s) {
			return fmt.Errorf("value does not look like a valid address: %s", s)
		}
		return nil
	},
	"dns-name": func(s string) error {
		if !dnsNameRe.MatchString(s) {
			return fmt.Errorf("value does not look like a valid DNS name")
		}
		return nil
	},
	"mac-addr": func(s string) error {
		if !macRe.MatchString(s) {
			return fmt.Errorf("value does not look like a valid MAC address")
		}
		return nil
	},
	"CIDR": func(s string) error {
		if !isCIDR(s, 4) && !isCIDR(s, 6) {
			return fmt.Errorf("value does not look like a valid CIDR network")
		}
		return nil
	},
	"CIDRv4": func(s string) error {
		if !isCIDR(s, 4) {
			return fmt.Errorf("value does not look like a valid IPv4 CIDR network")
		}
		return nil
	},
	"CIDRv6": func(s string) error {
		if !isCIDR(s, 6) {
			return fmt.Errorf("value does not look like a valid IPv6 CIDR network")
		}
		return nil
	},
	// pve_verify_ipv4_config / pve_verify_ipv6_config (JSONSchema.pm).
	"pve-ipv4-config": func(s string) error {
		if s != "dhcp" && s != "manual" && !isCIDR(s, 4) {
			return fmt.Errorf("value does not look like a valid ipv4 network configuration")
		}
		return nil
	},
	"pve-ipv6-config": func(s string) error {
		if s != "auto" && s != "dhcp" && s != "manual" && !isCIDR(s, 6) {
			return fmt.Errorf("value does not look like a valid ipv6 network configuration")
		}
		return nil
	},
	// pve_verify_urlencoded: what the API takes for sshkeys (K12).
	"urlencoded": func(s string) error {
		if !urlencodedRe.MatchString(s) {
			return fmt.Errorf("invalid urlencoded string: %s", s)
		}
		return nil
	},
	// pve-storage Plugin.pm parse_volume_id.
	"pve-volume-id": func(s string) error {
		if !volumeIDRe.MatchString(s) {
			return fmt.Errorf("unable to parse volume ID '%s'", s)
		}
		return nil
	},
	// pve-common CalendarEvent.pm pve_verify_calendar_event: the
	// schedules of replication, backup and other jobs, parsed as
	// proxmox-time parses them, with PVE's message.
	"pve-calendar-event": calendarevent.Verify,
	"pve-storage-content": func(s string) error {
		if !contentRe.MatchString(s) {
			return fmt.Errorf("invalid content type '%s'", s)
		}
		return nil
	},
}

var (
	urlencodedRe = regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`)
	volumeIDRe   = regexp.MustCompile(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]:.+$`)
)

// isCIDR is pve_verify_cidrv4/6: an address of the family and a prefix
// above 7 (PVE refuses /0../7).
func isCIDR(s string, family int) bool {
	addr, bits, ok := strings.Cut(s, "/")
	ip := net.ParseIP(addr)
	n, err := strconv.Atoi(bits)
	if !ok || ip == nil || err != nil || n <= 7 || strings.HasPrefix(bits, "+") {
		return false
	}
	if family == 4 {
		return ip.To4() != nil && !strings.Contains(addr, ":") && n <= 32
	}
	return strings.Contains(addr, ":") && n <= 128
}

// propertyStringFormats are named formats registered as hashes
// (register_format('pve-qm-ipconfig', $ipconfig_fmt)): apidata.js names
// them without their keys, so they are spelled out here from qemu-server
// (QemuServer/Network.pm $ipconfig_fmt, QemuServer.pm $cicustom_fmt).
var propertyStringFormats = map[string]map[string]*Prop{
	"pve-qm-ipconfig": {
		"ip":  {Type: "string", Format: json.RawMessage(`"pve-ipv4-config"`), Optional: true},
		"gw":  {Type: "string", Format: json.RawMessage(`"ipv4"`), Optional: true, Requires: "ip"},
		"ip6": {Type: "string", Format: json.RawMessage(`"pve-ipv6-config"`), Optional: true},
		"gw6": {Type: "string", Format: json.RawMessage(`"ipv6"`), Optional: true, Requires: "ip6"},
	},
	"pve-qm-cicustom": {
		"meta":    {Type: "string", Format: json.RawMessage(`"pve-volume-id"`), Optional: true},
		"network": {Type: "string", Format: json.RawMessage(`"pve-volume-id"`), Optional: true},
		"user":    {Type: "string", Format: json.RawMessage(`"pve-volume-id"`), Optional: true},
		"vendor":  {Type: "string", Format: json.RawMessage(`"pve-volume-id"`), Optional: true},
	},
}

// CheckFormat verifies s against a named PVE format. A `-list` format
// (pve-node-list, pve-storage-id-list, pve-storage-content-list…) checks each
// element of the comma/space/semicolon separated list, as split_list does.
func CheckFormat(name, s string) error {
	return checkFormatAt(name, s, "")
}

// checkFormatAt is check_format with the parameter's path, which a
// property-string format's errors are named after ("ipconfig0.ip").
func checkFormatAt(name, s, path string) error {
	if check, ok := formats[name]; ok {
		return check(s)
	}
	if keys, ok := propertyStringFormats[name]; ok {
		return checkPropertyString(keys, s, path)
	}
	// check_format's "-opt": the base format, for a Perl-true value only.
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

// SplitList splits a PVE list value the way pve-common's
// PVE::Tools::split_list does: on NUL bytes alone when the text has one
// (Perl's split drops the trailing empty fields), else on ',', ';' and
// Perl's \s (space, \t, \n, \r, \f, \v), empty fields dropped.
func SplitList(s string) []string {
	if strings.Contains(s, "\x00") {
		f := strings.Split(s, "\x00")
		for len(f) > 0 && f[len(f)-1] == "" {
			f = f[:len(f)-1]
		}
		return f
	}
	return strings.FieldsFunc(s, func(r rune) bool {
		return r == ',' || r == ';' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
	})
}

// ParseIndexedKey splits `link3` into ("link", 3); ok is false otherwise.
func ParseIndexedKey(key string) (base string, idx int, ok bool) {
	m := numberedKey.FindStringSubmatch(key)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return "", 0, false
	}
	return m[1], n, true
}

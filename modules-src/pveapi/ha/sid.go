package ha

import (
	"fmt"
	"regexp"
	"strconv"
)

// SID is an HA resource id. Type is "vm" or "ct"; it is "" for a bare
// VMID that has not been resolved yet.
type SID struct {
	Type string
	VMID int
}

var (
	sidRe  = regexp.MustCompile(`^(\S+):(\S+)$`)
	bareRe = regexp.MustCompile(`^(\d+)$`)
)

// ParseSID reads "vm:201", "ct:200" or a bare "201" (parse_sid). A bare
// VMID needs Resolve before use: PVE looks its type up in the VM list.
func ParseSID(s string) (SID, error) {
	if m := bareRe.FindStringSubmatch(s); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return SID{}, fmt.Errorf("unable to parse service id '%s'", s)
		}
		return SID{VMID: n}, nil
	}
	m := sidRe.FindStringSubmatch(s)
	if m == nil {
		return SID{}, fmt.Errorf("unable to parse service id '%s'", s)
	}
	if m[1] != "vm" && m[1] != "ct" {
		return SID{}, fmt.Errorf("unable to parse service id '%s': resource type '%s' is not vm or ct", s, m[1])
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 100 {
		return SID{}, fmt.Errorf("unable to parse service id '%s': '%s' is not a VMID", s, m[2])
	}
	return SID{Type: m[1], VMID: n}, nil
}

// TypeFor maps a guest type of /cluster/resources to an HA resource type
// (HA/Tools.pm get_ha_resource_type).
func TypeFor(guestType string) (string, error) {
	switch guestType {
	case "qemu":
		return "vm", nil
	case "lxc":
		return "ct", nil
	}
	return "", fmt.Errorf("unknown guest type '%s'", guestType)
}

// Resolve fills the type of a bare VMID from the guest's type ("qemu",
// "lxc"); a typed SID must agree with it.
func (s SID) Resolve(guestType string) (SID, error) {
	t, err := TypeFor(guestType)
	if err != nil {
		return s, err
	}
	if s.Type != "" && s.Type != t {
		return s, fmt.Errorf("service id %s: guest %d is a %s", s, s.VMID, guestType)
	}
	s.Type = t
	return s, nil
}

// Resolved tells whether the SID has its type.
func (s SID) Resolved() bool { return s.Type != "" }

func (s SID) String() string {
	if s.Type == "" {
		return strconv.Itoa(s.VMID)
	}
	return s.Type + ":" + strconv.Itoa(s.VMID)
}

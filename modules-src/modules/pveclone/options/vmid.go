package options

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// Bounds of PVE's VMIDs (pve-vmid: PVE::JSONSchema::pve_verify_vmid).
const (
	minVMID = 100
	maxVMID = 999999999
)

// VMIDRange is the span vmid: auto may claim, both ends included.
type VMIDRange struct{ Lo, Hi int }

func (r VMIDRange) String() string  { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }
func (r VMIDRange) Has(id int) bool { return id >= r.Lo && id <= r.Hi }

var rangeRe = regexp.MustCompile(`^\s*(\d+)\s*-\s*(\d+)\s*$`)

// ParseVMID reads vmid (a VMID or auto) and vmid_range, refusing
// what contradicts: auto without a range or a name, a range outside PVE's
// VMIDs or upside down, an explicit vmid outside the range given with it.
func ParseVMID(p *Params) (*VMIDRange, error) {
	auto := false
	switch x := p.VMIDParam.(type) {
	case nil:
		return nil, fmt.Errorf("vmid: required (a VMID, or auto with vmid_range)")
	case string:
		s := strings.TrimSpace(x)
		if s == "auto" {
			auto = true
			break
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("vmid: %q is neither a VMID (%d … %d) nor auto", x, minVMID, maxVMID)
		}
		p.VMID = n
	case bool:
		return nil, fmt.Errorf("vmid: %v is neither a VMID (%d … %d) nor auto", x, minVMID, maxVMID)
	default:
		n, err := strconv.Atoi(pveapi.String(x))
		if err != nil {
			return nil, fmt.Errorf("vmid: %v is neither a VMID (%d … %d) nor auto", x, minVMID, maxVMID)
		}
		p.VMID = n
	}
	if !auto && (p.VMID < minVMID || p.VMID > maxVMID) {
		return nil, fmt.Errorf("vmid: %d is out of range (PVE's VMIDs are %d … %d)", p.VMID, minVMID, maxVMID)
	}
	var rng *VMIDRange
	if p.VMIDRange != "" {
		m := rangeRe.FindStringSubmatch(p.VMIDRange)
		if m == nil {
			return nil, fmt.Errorf("vmid_range: %q is not a range of VMIDs (first-last, e.g. 2000-2099)", p.VMIDRange)
		}
		lo, err1 := strconv.Atoi(m[1])
		hi, err2 := strconv.Atoi(m[2])
		switch {
		case err1 != nil || err2 != nil || lo < minVMID || hi > maxVMID:
			return nil, fmt.Errorf("vmid_range: %s is not within PVE's VMIDs (%d … %d)", strings.TrimSpace(p.VMIDRange), minVMID, maxVMID)
		case lo > hi:
			return nil, fmt.Errorf("vmid_range: %d-%d is empty (its first VMID is above its last)", lo, hi)
		}
		rng = &VMIDRange{lo, hi}
	}
	switch {
	case auto && rng == nil:
		return nil, fmt.Errorf("vmid_range: required with vmid: auto (the module picks a VMID only within a range you give)")
	case auto && p.Name == "":
		return nil, fmt.Errorf("name: required with vmid: auto (the VM is found again by its name within vmid_range)")
	case !auto && rng != nil && !rng.Has(p.VMID):
		return nil, fmt.Errorf("vmid: %d is outside vmid_range %s", p.VMID, rng)
	}
	if !auto {
		return nil, nil // a range given with an explicit vmid only checks it
	}
	return rng, nil
}

package guests

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
)

// Resource pools, as pve-manager's PVE/API2/Pool.pm serves them from
// user.cfg (pve-access-control AccessControl.pm parse_user_config): a pool
// lists guests by VMID only — their type and node come from pmxcfs's
// .vmlist at read time, and a VMID without a guest is kept in user.cfg but
// not shown — and storages by ID. A guest is in one pool at most
// ($usercfg->{vms}->{$vmid}).

// MemberVMID returns the VMID of a guest member ("qemu/100", "lxc/200").
func MemberVMID(m string) (int, bool) {
	typ, id, _ := strings.Cut(m, "/")
	if typ == "storage" {
		return 0, false
	}
	n, err := strconv.Atoi(id)
	return n, err == nil
}

// PoolOfGuestLocked is $usercfg->{vms}->{$vmid}: the pool holding vmid.
func PoolOfGuestLocked(db *core.ConfigDB, vmid int) string {
	for _, id := range slices.Sorted(maps.Keys(db.Pools)) {
		for _, m := range db.Pools[id].Members {
			if n, ok := MemberVMID(m); ok && n == vmid {
				return id
			}
		}
	}
	return ""
}

// AddGuestToPoolLocked is AccessControl.pm add_vm_to_pool: the member is
// named after the guest's kind as .vmlist knows it.
func (s Model) AddGuestToPoolLocked(db *core.ConfigDB, pool string, vmid int) {
	p := db.Pools[pool]
	if p == nil {
		return
	}
	typ := VMKind.Type
	if e, ok := s.FindVMLocked(db, vmid); ok && e.Kind == CTKind.Dir {
		typ = CTKind.Type
	}
	p.Members = append(p.Members, fmt.Sprintf("%s/%d", typ, vmid))
}

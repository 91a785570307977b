package access

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// Resource pools as user.cfg holds them (pve-access-control
// AccessControl.pm parse_user_config / write_user_config: a line
// "pool:<id>:<comment>:<vmids>:<storages>:"), and the pools of a path, as
// RPCEnvironment.pm's $compile_acl_path looks them up. PVE keeps a pool's
// guests by VMID only; the lab also keeps each guest's type (qemu or lxc),
// which user.cfg cannot say.

// Pool is one resource pool of user.cfg.
type Pool struct {
	ID      string   `json:"id"`
	Comment string   `json:"comment,omitempty"`
	Members []string `json:"members,omitempty"` // "qemu/100", "storage/local"
}

// RenderUserCfg is write_user_config: users with their tokens, groups,
// pools, custom roles and ACL lines, each block ended by an empty line.
func RenderUserCfg(a *Config, pools map[string]*Pool, version int) string {
	var b strings.Builder
	a.RenderUsers(&b)
	b.WriteString("\n")
	a.RenderGroups(&b)
	b.WriteString("\n")
	for _, id := range slices.Sorted(maps.Keys(pools)) {
		p := pools[id]
		var vms, stores []string
		for _, m := range p.Members {
			typ, mid, _ := strings.Cut(m, "/")
			if typ == "storage" {
				stores = append(stores, mid)
			} else {
				vms = append(vms, mid)
			}
		}
		// sort keys: Perl's string order (write_user_config).
		sort.Strings(vms)
		sort.Strings(stores)
		fmt.Fprintf(&b, "pool:%s:%s:%s:%s:\n", id, pvecommon.EncodeField(p.Comment), strings.Join(vms, ","), strings.Join(stores, ","))
	}
	b.WriteString("\n")
	a.RenderRoles(&b, version)
	b.WriteString("\n")
	a.RenderACL(&b)
	return b.String()
}

// ParsePools reads the pool lines of user.cfg, keeping the guest type of
// members old already knew (user.cfg lists guests by VMID only).
func ParsePools(text string, old map[string]*Pool) map[string]*Pool {
	out := map[string]*Pool{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Split(strings.TrimSpace(line), ":")
		if len(f) < 2 || f[0] != "pool" || f[1] == "" {
			continue
		}
		for len(f) < 5 {
			f = append(f, "")
		}
		p := &Pool{ID: f[1], Comment: pvecommon.DecodeField(f[2])}
		known := map[string]string{}
		if o := old[p.ID]; o != nil {
			for _, m := range o.Members {
				typ, id, _ := strings.Cut(m, "/")
				known[id] = typ
			}
		}
		for _, vm := range strings.Split(f[3], ",") {
			if _, err := strconv.Atoi(vm); err == nil {
				typ := known[vm]
				if typ == "" || typ == "storage" {
					typ = "qemu"
				}
				p.Members = append(p.Members, typ+"/"+vm)
			}
		}
		for _, st := range strings.Split(f[4], ",") {
			if st != "" {
				p.Members = append(p.Members, "storage/"+st)
			}
		}
		out[p.ID] = p
	}
	return out
}

// PoolsOf lists, sorted, the pools with path among their members (a guest
// "/vms/N" or a storage "/storage/ID"): the pools whose ACLs
// $compile_acl_path adds on path (Env.PoolsOf).
func PoolsOf(pools map[string]*Pool, path string) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(pools)) {
		member := false
		for _, m := range pools[id].Members {
			typ, mid, _ := strings.Cut(m, "/")
			if (typ == "storage" && path == "/storage/"+mid) || (typ != "storage" && path == "/vms/"+mid) {
				member = true
			}
		}
		if member {
			out = append(out, id)
		}
	}
	return out
}

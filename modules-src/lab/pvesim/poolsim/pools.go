// Package poolsim simulates PVE's resource pools API: pve-manager's
// PVE/API2/Pool.pm over user.cfg's pools (pve-access-control
// AccessControl.pm parse_user_config). A pool lists guests by VMID only,
// their type and node come from pmxcfs's .vmlist at read time, and a VMID
// without a guest stays in user.cfg unseen; storages by ID. The pool
// membership a guest create or clone adds is the guest model's
// (pvesim/guests, AddGuestToPoolLocked), since the guest backends write it.
package poolsim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/guests"
)

// backend serves the pool endpoints on the core's state.
type backend struct{ guests.Model }

// Register adds the pool endpoints to s.
func Register(s *core.Sim) { s.Handle((&backend{guests.New(s)}).routes()) }

// poolMembers renders members as Pool.pm index does: guests through
// PVE::API2Tools::extract_vm_stats (id, vmid, node, type and the status
// numbers pvestatd broadcast — here the guest's live summary), storages
// through extract_storage_stats, once each, on the answering node unless
// the storage's `nodes` leave it out (then the first of them). typ is the
// `type` filter (qemu, lxc or storage).
func (s *backend) poolMembers(rc *core.Req, p *core.Pool, typ string) []map[string]any {
	db := rc.DB()
	out := []map[string]any{}
	var vmids []int
	for _, m := range p.Members {
		if n, ok := guests.MemberVMID(m); ok {
			vmids = append(vmids, n)
		}
	}
	// sort keys %{ $pool_config->{vms} }: string order, as Perl sorts.
	slices.SortFunc(vmids, func(a, b int) int { return strings.Compare(strconv.Itoa(a), strconv.Itoa(b)) })
	for _, vmid := range vmids {
		e, ok := s.FindVMLocked(db, vmid)
		if !ok {
			continue // a destroyed guest's VMID stays in user.cfg, unseen
		}
		k := guests.VMKind
		if e.Kind == guests.CTKind.Dir {
			k = guests.CTKind
		}
		if typ != "" && typ != k.Type {
			continue
		}
		entry := map[string]any{"id": k.Member(vmid), "vmid": vmid, "node": e.Node, "type": k.Type, "status": "unknown"}
		if c, err := s.LoadGuestConfLocked(db, k, e.Node, vmid); err == nil {
			var sum map[string]any
			if k == guests.CTKind {
				sum = s.CTSummary(e.Node, vmid, c)
			} else {
				sum = s.VMSummary(e.Node, vmid, c)
			}
			for _, f := range []string{"uptime", "name", "status", "maxmem", "mem", "maxdisk", "disk", "cpu",
				"netin", "netout", "diskread", "diskwrite"} {
				if v, ok := sum[f]; ok {
					entry[f] = v
				}
			}
			entry["maxcpu"] = sum["cpus"]
			entry["template"] = 0
			if c.IsTemplate() {
				entry["template"] = 1
			}
		}
		out = append(out, entry)
	}
	if typ != "" && typ != "storage" {
		return out
	}
	var stores []string
	for _, m := range p.Members {
		if t, id, _ := strings.Cut(m, "/"); t == "storage" {
			stores = append(stores, id)
		}
	}
	slices.Sort(stores)
	for _, id := range stores {
		st := db.Storage[id]
		if st == nil {
			continue // storage_config($cfg, $storeid, 1)
		}
		node := rc.Origin // PVE::INotify::nodename(): the API node answering (no proxyto)
		if n := pveschema.SplitList(st.Opt("nodes")); len(n) > 0 && !slices.Contains(n, node) {
			slices.Sort(n)
			node = n[0]
		}
		content := pveschema.SplitList(st.Content())
		slices.Sort(content)
		shared := 0
		if st.Shared() {
			shared = 1
		}
		out = append(out, map[string]any{"id": "storage/" + node + "/" + id, "storage": id, "node": node, "type": "storage",
			"plugintype": st.Type, "status": "unknown", "shared": shared, "content": strings.Join(content, ",")})
	}
	return out
}

func (s *backend) sortedPools(db *core.ConfigDB) []string {
	return slices.Sorted(maps.Keys(db.Pools))
}

// GET /pools[?poolid=]: pools without Pool.Audit are left out (K19).
func (s *backend) getPools(rc *core.Req) (any, error) {
	db := rc.DB()
	want := rc.Str("poolid")
	if want != "" && db.Pools[want] == nil {
		return nil, fmt.Errorf("pool '%s' does not exist", want)
	}
	out := []map[string]any{}
	for _, id := range s.sortedPools(db) {
		if want != "" && id != want {
			continue
		}
		if !core.HasPriv(db, rc.Who, "/pool/"+id, []string{"Pool.Audit"}, false) {
			continue
		}
		p := db.Pools[id]
		e := map[string]any{"poolid": id}
		if p.Comment != "" {
			e["comment"] = p.Comment
		}
		if want != "" {
			e["members"] = s.poolMembers(rc, p, rc.Str("type"))
		}
		out = append(out, e)
	}
	return out, nil
}

// GET /pools/{poolid}: read_pool is index(...)->[0] without the poolid the
// schema's returns do not list.
func (s *backend) getPoolDeprecated(rc *core.Req) (any, error) {
	db := rc.DB()
	p := db.Pools[rc.Str("poolid")]
	if p == nil {
		return nil, fmt.Errorf("pool '%s' does not exist", rc.Str("poolid"))
	}
	e := map[string]any{"members": s.poolMembers(rc, p, rc.Str("type"))}
	if p.Comment != "" {
		e["comment"] = p.Comment
	}
	return e, nil
}

func (s *backend) postPool(rc *core.Req) (any, error) {
	db := rc.DB()
	if aerr := s.CfsWriteLocked(db, "user.cfg", "create pool failed"); aerr != nil {
		return nil, aerr
	}
	id := rc.Str("poolid")
	if db.Pools[id] != nil {
		return nil, fmt.Errorf("create pool failed: pool '%s' already exists", id)
	}
	// Pool.pm create_pool: a nested pool's parent must exist, and the
	// (leaf) name starts with a letter.
	leaf := id
	if i := strings.LastIndex(id, "/"); i >= 0 {
		parent := id[:i]
		leaf = id[i+1:]
		if db.Pools[parent] == nil {
			return nil, fmt.Errorf("create pool failed: parent '%s' of pool '%s' does not exist", parent, id)
		}
	}
	if c := leaf + "_"; !('a' <= c[0] && c[0] <= 'z' || 'A' <= c[0] && c[0] <= 'Z') { // m!^[A-Za-z]!
		return nil, fmt.Errorf("create pool failed: pool name must start with a letter")
	}
	db.Pools[id] = &core.Pool{ID: id, Comment: rc.Str("comment")}
	db.Serial++
	s.SaveLocked()
	return nil, nil
}

// permModifyLocked is RPCEnvironment.pm check_perm_modify: Permissions.Modify
// or the object's Allocate privilege on the member's path. Inside
// lock_user_config the 403 exception is stringified into the wrapped
// message ("403 Permission check failed (...)": PVE::Exception stringify
// puts the code first).
func permModifyLocked(db *core.ConfigDB, who *core.Principal, path string) error {
	if who == nil {
		return nil
	}
	if ok, detail := core.RPCEnv(db, who).CheckPermModify(who.Full(), path); !ok {
		return fmt.Errorf("403 Permission check failed (%s)", detail)
	}
	return nil
}

// PUT /pools?poolid= and the deprecated PUT /pools/{poolid}: update_pool.
// All or nothing: it dies before writing user.cfg. Neither a guest's nor a
// storage's existence is checked.
func (s *backend) putPool(rc *core.Req) (any, error) {
	db := rc.DB()
	if aerr := s.CfsWriteLocked(db, "user.cfg", "update pools failed"); aerr != nil {
		return nil, aerr
	}
	fail := func(err error) (any, error) { return nil, fmt.Errorf("update pools failed: %v", err) }
	id := rc.Str("poolid")
	p := db.Pools[id]
	if p == nil {
		return fail(fmt.Errorf("pool '%s' does not exist", id))
	}
	members := slices.Clone(p.Members)
	moved := map[string][]string{} // other pools' members after allow-move
	del := rc.Bool("delete")
	if rc.Has("vms") {
		for _, v := range pveschema.SplitList(rc.Str("vms")) {
			vmid, _ := strconv.Atoi(v)
			if err := permModifyLocked(db, rc.Who, "/vms/"+v); err != nil {
				return fail(err)
			}
			isMember := func(m string) bool { n, ok := guests.MemberVMID(m); return ok && n == vmid }
			if del {
				if !slices.ContainsFunc(members, isMember) {
					return fail(fmt.Errorf("VM %d is not a pool member", vmid))
				}
				members = slices.DeleteFunc(members, isMember)
				continue
			}
			if slices.ContainsFunc(members, isMember) {
				return fail(fmt.Errorf("VM %d is already a pool member", vmid))
			}
			if other := guests.PoolOfGuestLocked(db, vmid); other != "" && other != id {
				if !rc.Bool("allow-move") {
					return fail(fmt.Errorf("VM %d belongs already to pool '%s' and 'allow-move' is not set", vmid, other))
				}
				if rc.Who != nil && !core.HasPriv(db, rc.Who, "/pool/"+other, []string{"Pool.Allocate"}, false) {
					return fail(fmt.Errorf("403 Permission check failed (/pool/%s, Pool.Allocate)", other))
				}
				left, ok := moved[other]
				if !ok {
					left = slices.Clone(db.Pools[other].Members)
				}
				moved[other] = slices.DeleteFunc(left, isMember)
			}
			typ := guests.VMKind.Type
			if e, ok := s.FindVMLocked(db, vmid); ok && e.Kind == guests.CTKind.Dir {
				typ = guests.CTKind.Type
			}
			members = append(members, fmt.Sprintf("%s/%d", typ, vmid))
		}
	}
	if rc.Has("storage") {
		for _, st := range pveschema.SplitList(rc.Str("storage")) {
			if err := permModifyLocked(db, rc.Who, "/storage/"+st); err != nil {
				return fail(err)
			}
			m := "storage/" + st
			switch {
			case del && !slices.Contains(members, m):
				//lint:ignore ST1005 PVE's own message (Pool.pm update_pool)
				return fail(fmt.Errorf("Storage '%s' is not a pool member", st))
			case del:
				members = slices.DeleteFunc(members, func(x string) bool { return x == m })
			case slices.Contains(members, m):
				//lint:ignore ST1005 PVE's own message (Pool.pm update_pool)
				return fail(fmt.Errorf("Storage '%s' is already a pool member", st))
			default:
				members = append(members, m)
			}
		}
	}
	if rc.Has("comment") {
		p.Comment = rc.Str("comment")
	}
	p.Members = members
	for other, left := range moved {
		db.Pools[other].Members = left
	}
	db.Serial++
	s.SaveLocked()
	return nil, nil
}

func (s *backend) deletePool(rc *core.Req) (any, error) {
	db := rc.DB()
	if aerr := s.CfsWriteLocked(db, "user.cfg", "delete pool failed"); aerr != nil {
		return nil, aerr
	}
	id := rc.Str("poolid")
	p := db.Pools[id]
	if p == nil {
		return nil, fmt.Errorf("delete pool failed: pool '%s' does not exist", id)
	}
	for _, m := range p.Members {
		typ, mid, _ := strings.Cut(m, "/")
		if typ == "storage" {
			// Members whose storage is gone do not count (storage_config noerr).
			if db.Storage[mid] == nil {
				continue
			}
			return nil, fmt.Errorf("delete pool failed: pool '%s' is not empty (contains storage '%s')", id, mid)
		}
		// ignore destroyed guests ($idlist->{$vmid})
		if n, ok := guests.MemberVMID(m); ok {
			if _, exists := s.FindVMLocked(db, n); !exists {
				continue
			}
		}
		return nil, fmt.Errorf("delete pool failed: pool '%s' is not empty (contains VM %s)", id, mid)
	}
	delete(db.Pools, id)
	db.Serial++
	s.SaveLocked()
	return nil, nil
}

// routes are the resource pools' endpoints (8.1+ and the deprecated /pools/{poolid}).
func (s *backend) routes() map[string]core.Handler {
	return map[string]core.Handler{
		"GET /pools":             s.getPools,
		"POST /pools":            s.postPool,
		"PUT /pools":             s.putPool,
		"DELETE /pools":          s.deletePool,
		"GET /pools/{poolid}":    s.getPoolDeprecated,
		"PUT /pools/{poolid}":    s.putPool,
		"DELETE /pools/{poolid}": s.deletePool,
	}
}

package core

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

// Resource pools, as pve-manager's PVE/API2/Pool.pm serves them from
// user.cfg (pve-access-control AccessControl.pm parse_user_config): a pool
// lists guests by VMID only — their type and node come from pmxcfs's
// .vmlist at read time, and a VMID without a guest is kept in user.cfg but
// not shown — and storages by ID. A guest is in one pool at most
// ($usercfg->{vms}->{$vmid}).

// memberVMID returns the VMID of a guest member ("qemu/100", "lxc/200").
func memberVMID(m string) (int, bool) {
	typ, id, _ := strings.Cut(m, "/")
	if typ == "storage" {
		return 0, false
	}
	n, err := strconv.Atoi(id)
	return n, err == nil
}

// poolOfGuestLocked is $usercfg->{vms}->{$vmid}: the pool holding vmid.
func poolOfGuestLocked(db *ConfigDB, vmid int) string {
	for _, id := range slices.Sorted(maps.Keys(db.Pools)) {
		for _, m := range db.Pools[id].Members {
			if n, ok := memberVMID(m); ok && n == vmid {
				return id
			}
		}
	}
	return ""
}

// addGuestToPoolLocked is AccessControl.pm add_vm_to_pool: the member is
// named after the guest's kind as .vmlist knows it.
func (s *Sim) addGuestToPoolLocked(db *ConfigDB, pool string, vmid int) {
	p := db.Pools[pool]
	if p == nil {
		return
	}
	typ := vmKind.typ
	if e, ok := s.findVMLocked(db, vmid); ok && e.Kind == ctKind.dir {
		typ = ctKind.typ
	}
	p.Members = append(p.Members, fmt.Sprintf("%s/%d", typ, vmid))
}

// poolMembers renders members as Pool.pm index does: guests through
// PVE::API2Tools::extract_vm_stats (id, vmid, node, type and the status
// numbers pvestatd broadcast — here the guest's live summary), storages
// through extract_storage_stats, once each, on the answering node unless
// the storage's `nodes` leave it out (then the first of them). typ is the
// `type` filter (qemu, lxc or storage).
func (s *Sim) poolMembers(rc *reqCtx, p *Pool, typ string) []map[string]any {
	db := rc.db()
	out := []map[string]any{}
	var vmids []int
	for _, m := range p.Members {
		if n, ok := memberVMID(m); ok {
			vmids = append(vmids, n)
		}
	}
	// sort keys %{ $pool_config->{vms} }: string order, as Perl sorts.
	slices.SortFunc(vmids, func(a, b int) int { return strings.Compare(strconv.Itoa(a), strconv.Itoa(b)) })
	for _, vmid := range vmids {
		e, ok := s.findVMLocked(db, vmid)
		if !ok {
			continue // a destroyed guest's VMID stays in user.cfg, unseen
		}
		k := vmKind
		if e.Kind == ctKind.dir {
			k = ctKind
		}
		if typ != "" && typ != k.typ {
			continue
		}
		entry := map[string]any{"id": k.member(vmid), "vmid": vmid, "node": e.Node, "type": k.typ, "status": "unknown"}
		if c, err := s.loadGuestConfLocked(db, k, e.Node, vmid); err == nil {
			var sum map[string]any
			if k == ctKind {
				sum = s.ctSummary(e.Node, vmid, c)
			} else {
				sum = s.vmSummary(e.Node, vmid, c)
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
		node := rc.origin // PVE::INotify::nodename(): the API node answering (no proxyto)
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

func (s *Sim) sortedPools(db *ConfigDB) []string {
	return slices.Sorted(maps.Keys(db.Pools))
}

// poolsOf lists, sorted, the pools with path among their members (a guest
// "/vms/N" or a storage "/storage/ID"): the pools whose ACLs
// $compile_acl_path adds on path (access.Env).
func (db *ConfigDB) poolsOf(path string) []string {
	var out []string
	for _, id := range sortedKeys(db.Pools) {
		member := false
		for _, m := range db.Pools[id].Members {
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

// GET /pools[?poolid=]: pools without Pool.Audit are left out (K19).
func (s *Sim) getPools(rc *reqCtx) (any, error) {
	db := rc.db()
	want := rc.str("poolid")
	if want != "" && db.Pools[want] == nil {
		return nil, fmt.Errorf("pool '%s' does not exist", want)
	}
	out := []map[string]any{}
	for _, id := range s.sortedPools(db) {
		if want != "" && id != want {
			continue
		}
		if !hasPriv(db, rc.who, "/pool/"+id, []string{"Pool.Audit"}, false) {
			continue
		}
		p := db.Pools[id]
		e := map[string]any{"poolid": id}
		if p.Comment != "" {
			e["comment"] = p.Comment
		}
		if want != "" {
			e["members"] = s.poolMembers(rc, p, rc.str("type"))
		}
		out = append(out, e)
	}
	return out, nil
}

// GET /pools/{poolid}: read_pool is index(...)->[0] without the poolid the
// schema's returns do not list.
func (s *Sim) getPoolDeprecated(rc *reqCtx) (any, error) {
	db := rc.db()
	p := db.Pools[rc.str("poolid")]
	if p == nil {
		return nil, fmt.Errorf("pool '%s' does not exist", rc.str("poolid"))
	}
	e := map[string]any{"members": s.poolMembers(rc, p, rc.str("type"))}
	if p.Comment != "" {
		e["comment"] = p.Comment
	}
	return e, nil
}

func (s *Sim) postPool(rc *reqCtx) (any, error) {
	db := rc.db()
	if aerr := s.cfsWriteLocked(db, "user.cfg", "create pool failed"); aerr != nil {
		return nil, aerr
	}
	id := rc.str("poolid")
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
	db.Pools[id] = &Pool{ID: id, Comment: rc.str("comment")}
	db.Serial++
	s.saveLocked()
	return nil, nil
}

// permModifyLocked is RPCEnvironment.pm check_perm_modify: Permissions.Modify
// or the object's Allocate privilege on the member's path. Inside
// lock_user_config the 403 exception is stringified into the wrapped
// message ("403 Permission check failed (...)": PVE::Exception stringify
// puts the code first).
func permModifyLocked(db *ConfigDB, who *principal, path string) error {
	if who == nil {
		return nil
	}
	if ok, detail := rpcEnv(db, who).CheckPermModify(who.full(), path); !ok {
		return fmt.Errorf("403 Permission check failed (%s)", detail)
	}
	return nil
}

// PUT /pools?poolid= and the deprecated PUT /pools/{poolid}: update_pool.
// All or nothing: it dies before writing user.cfg. Neither a guest's nor a
// storage's existence is checked.
func (s *Sim) putPool(rc *reqCtx) (any, error) {
	db := rc.db()
	if aerr := s.cfsWriteLocked(db, "user.cfg", "update pools failed"); aerr != nil {
		return nil, aerr
	}
	fail := func(err error) (any, error) { return nil, fmt.Errorf("update pools failed: %v", err) }
	id := rc.str("poolid")
	p := db.Pools[id]
	if p == nil {
		return fail(fmt.Errorf("pool '%s' does not exist", id))
	}
	members := slices.Clone(p.Members)
	moved := map[string][]string{} // other pools' members after allow-move
	del := rc.boolean("delete")
	if rc.has("vms") {
		for _, v := range pveschema.SplitList(rc.str("vms")) {
			vmid, _ := strconv.Atoi(v)
			if err := permModifyLocked(db, rc.who, "/vms/"+v); err != nil {
				return fail(err)
			}
			isMember := func(m string) bool { n, ok := memberVMID(m); return ok && n == vmid }
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
			if other := poolOfGuestLocked(db, vmid); other != "" && other != id {
				if !rc.boolean("allow-move") {
					return fail(fmt.Errorf("VM %d belongs already to pool '%s' and 'allow-move' is not set", vmid, other))
				}
				if rc.who != nil && !hasPriv(db, rc.who, "/pool/"+other, []string{"Pool.Allocate"}, false) {
					return fail(fmt.Errorf("403 Permission check failed (/pool/%s, Pool.Allocate)", other))
				}
				left, ok := moved[other]
				if !ok {
					left = slices.Clone(db.Pools[other].Members)
				}
				moved[other] = slices.DeleteFunc(left, isMember)
			}
			typ := vmKind.typ
			if e, ok := s.findVMLocked(db, vmid); ok && e.Kind == ctKind.dir {
				typ = ctKind.typ
			}
			members = append(members, fmt.Sprintf("%s/%d", typ, vmid))
		}
	}
	if rc.has("storage") {
		for _, st := range pveschema.SplitList(rc.str("storage")) {
			if err := permModifyLocked(db, rc.who, "/storage/"+st); err != nil {
				return fail(err)
			}
			m := "storage/" + st
			switch {
			case del && !slices.Contains(members, m):
				return fail(fmt.Errorf("Storage '%s' is not a pool member", st))
			case del:
				members = slices.DeleteFunc(members, func(x string) bool { return x == m })
			case slices.Contains(members, m):
				return fail(fmt.Errorf("Storage '%s' is already a pool member", st))
			default:
				members = append(members, m)
			}
		}
	}
	if rc.has("comment") {
		p.Comment = rc.str("comment")
	}
	p.Members = members
	for other, left := range moved {
		db.Pools[other].Members = left
	}
	db.Serial++
	s.saveLocked()
	return nil, nil
}

func (s *Sim) deletePool(rc *reqCtx) (any, error) {
	db := rc.db()
	if aerr := s.cfsWriteLocked(db, "user.cfg", "delete pool failed"); aerr != nil {
		return nil, aerr
	}
	id := rc.str("poolid")
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
		if n, ok := memberVMID(m); ok {
			if _, exists := s.findVMLocked(db, n); !exists {
				continue
			}
		}
		return nil, fmt.Errorf("delete pool failed: pool '%s' is not empty (contains VM %s)", id, mid)
	}
	delete(db.Pools, id)
	db.Serial++
	s.saveLocked()
	return nil, nil
}

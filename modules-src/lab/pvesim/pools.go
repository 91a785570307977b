package pvesim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

// poolMembers renders members as PVE does ({id,type,node,vmid|storage}).
// Guests arrive in part 2; storage members already work.
func (s *Sim) poolMembers(rc *reqCtx, p *Pool) []map[string]any {
	out := []map[string]any{}
	for _, m := range p.Members {
		typ, id, _ := strings.Cut(m, "/")
		if typ == "storage" {
			for _, node := range s.membersLocked(rc.node) {
				out = append(out, map[string]any{"id": "storage/" + node + "/" + id, "type": "storage", "node": node, "storage": id})
			}
		}
	}
	return out
}

func (s *Sim) sortedPools(db *ConfigDB) []string {
	return slices.Sorted(maps.Keys(db.Pools))
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
			e["members"] = s.poolMembers(rc, p)
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *Sim) getPoolDeprecated(rc *reqCtx) (any, error) {
	db := rc.db()
	p := db.Pools[rc.str("poolid")]
	if p == nil {
		return nil, fmt.Errorf("pool '%s' does not exist", rc.str("poolid"))
	}
	e := map[string]any{"members": s.poolMembers(rc, p)}
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
	db.Pools[id] = &Pool{ID: id, Comment: rc.str("comment")}
	db.Serial++
	s.saveLocked()
	return nil, nil
}

func (s *Sim) putPool(rc *reqCtx) (any, error) {
	db := rc.db()
	if aerr := s.cfsWriteLocked(db, "user.cfg", "update pools failed"); aerr != nil {
		return nil, aerr
	}
	id := rc.str("poolid")
	p := db.Pools[id]
	if p == nil {
		return nil, fmt.Errorf("update pools failed: pool '%s' does not exist", id)
	}
	if rc.has("comment") {
		p.Comment = rc.str("comment")
	}
	if rc.has("storage") {
		// Api2/Pool.pm update_pool: all or nothing (it dies before writing
		// user.cfg); it does not check that the storage exists.
		members := slices.Clone(p.Members)
		for _, st := range pveschema.SplitList(rc.str("storage")) {
			m := "storage/" + st
			switch {
			case rc.boolean("delete") && !slices.Contains(members, m):
				return nil, fmt.Errorf("update pools failed: Storage '%s' is not a pool member", st)
			case rc.boolean("delete"):
				members = slices.DeleteFunc(members, func(x string) bool { return x == m })
			case slices.Contains(members, m):
				return nil, fmt.Errorf("update pools failed: Storage '%s' is already a pool member", st)
			default:
				members = append(members, m)
			}
		}
		p.Members = members
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
		// Members whose storage is gone do not count (storage_config noerr).
		if typ == "storage" && db.Storage[mid] == nil {
			continue
		}
		if typ == "storage" {
			return nil, fmt.Errorf("delete pool failed: pool '%s' is not empty (contains storage '%s')", id, mid)
		}
		return nil, fmt.Errorf("delete pool failed: pool '%s' is not empty (contains VM %s)", id, mid)
	}
	delete(db.Pools, id)
	db.Serial++
	s.saveLocked()
	return nil, nil
}

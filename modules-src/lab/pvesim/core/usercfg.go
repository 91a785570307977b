package core

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
)

// user.cfg on disk: its lines (pools and access) are pvesim/access'; core
// keeps the model's copy of them (ConfigDB.Pools and Access) in step with
// the file.

// Pool is one resource pool of user.cfg (access.Pool).
type Pool = access.Pool

// PoolsOf lists, sorted, the pools with path among their members
// (access.PoolsOf), what access.Env.PoolsOf asks.
func (db *ConfigDB) PoolsOf(path string) []string { return access.PoolsOf(db.Pools, path) }

// readUserCfgLocked takes user.cfg (pools and access) and priv/token.cfg
// from db's directory when either differs from what the simulator last
// wrote.
func (s *Sim) readUserCfgLocked(db *ConfigDB, dir string) {
	ub, uerr := os.ReadFile(filepath.Join(dir, "user.cfg"))
	tb, _ := os.ReadFile(filepath.Join(dir, "priv", "token.cfg"))
	uk, tk := fileKey(db.ID, "user.cfg"), fileKey(db.ID, "priv/token.cfg")
	uw, uok := s.written[uk]
	tw, tok := s.written[tk]
	if uerr != nil || (uok && bytes.Equal(uw, ub) && tok && bytes.Equal(tw, tb)) {
		return
	}
	s.settleUserCfgLocked(db, ub, tb)
	s.written[uk], s.written[tk] = ub, tb
	db.Serial++
}

// settleUserCfgLocked makes the model what PVE would read back from the
// user.cfg and token.cfg just written. PVE keeps no model: every request
// parses user.cfg, and write_user_config/parse_user_config do not round-trip
// every value (encode_text leaves '%' as it is while decode_text decodes
// every %XX; a comment "0" is Perl-false and never written). The lab keeps
// one, so it parses what it wrote, as a PVE read would.
func (s *Sim) settleUserCfgLocked(db *ConfigDB, userCfg, tokenCfg []byte) {
	db.Pools = access.ParsePools(string(userCfg), db.Pools)
	db.Access = access.Parse(string(userCfg), string(tokenCfg), s.Cfg.Version, &db.Access)
}

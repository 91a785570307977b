package core

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
)

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
	db.Pools = parsePools(string(ub), db.Pools)
	db.Access = access.Parse(string(ub), string(tb), s.Cfg.Version, &db.Access)
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
	db.Pools = parsePools(string(userCfg), db.Pools)
	db.Access = access.Parse(string(userCfg), string(tokenCfg), s.Cfg.Version, &db.Access)
}

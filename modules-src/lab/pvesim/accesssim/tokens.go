package accesssim

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/access"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/core"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// API tokens (User.pm token methods, TokenConfig.pm): the secret is a UUID
// written to priv/token.cfg and returned once, by the creation.

func (s *backend) getTokens(rc *core.Req) (any, error) {
	db := rc.DB()
	user := rc.Str("userid")
	if db.Access.Users[user] == nil {
		return nil, fmt.Errorf("no such user ('%s')", user)
	}
	out := []map[string]any{}
	for _, id := range slices.Sorted(maps.Keys(db.Access.Tokens)) {
		if owner, name, _ := strings.Cut(id, "!"); owner == user {
			e := tokenInfo(db.Access.Tokens[id])
			e["tokenid"] = name
			out = append(out, e)
		}
	}
	return out, nil
}

func (s *backend) getToken(rc *core.Req) (any, error) {
	t, err := rc.DB().Access.TokenOf(rc.Str("userid"), rc.Str("tokenid"))
	if err != nil {
		return nil, err
	}
	return tokenInfo(t), nil
}

// POST: the existence checks before the lock answer 500 (no user) and 400
// (tokenid "Token already exists."), as generate_and_add_token's callers.
func (s *backend) postToken(rc *core.Req) (any, error) {
	db := rc.DB()
	user, name := rc.Str("userid"), rc.Str("tokenid")
	if db.Access.Users[user] == nil {
		return nil, fmt.Errorf("no such user ('%s')", user)
	}
	if db.Access.Tokens[user+"!"+name] != nil {
		return nil, core.ErrParams(map[string]string{"tokenid": "Token already exists."})
	}
	id := user + "!" + name
	var tok *access.Token
	err := s.lockUserCfg(db, "generating token failed", func(a *access.Config) error {
		if a.Tokens[id] != nil {
			return pvecommon.Error("Token already exists.")
		}
		tok = &access.Token{ID: id, Secret: core.NewUUID(), Privsep: !rc.Has("privsep") || rc.Bool("privsep"),
			Expire: int64(rc.Int("expire", 0)), Comment: rc.Str("comment")}
		a.Tokens[id] = tok
		return nil
	})
	if err != nil {
		return nil, err
	}
	info := map[string]any{"privsep": pvecommon.BoolNum(tok.Privsep)}
	if rc.Has("expire") {
		info["expire"] = tok.Expire
	}
	if tok.Comment != "" {
		info["comment"] = tok.Comment
	}
	return map[string]any{"info": info, "value": tok.Secret, "full-tokenid": id}, nil
}

func (s *backend) putToken(rc *core.Req) (any, error) {
	db := rc.DB()
	user, name := rc.Str("userid"), rc.Str("tokenid")
	if _, err := db.Access.TokenOf(user, name); err != nil {
		return nil, err
	}
	var out map[string]any
	err := s.lockUserCfg(db, "updating token info failed", func(a *access.Config) error {
		t, err := a.TokenOf(user, name)
		if err != nil {
			return err
		}
		if rc.Has("privsep") {
			t.Privsep = rc.Bool("privsep")
		}
		if rc.Has("expire") {
			t.Expire = int64(rc.Int("expire", 0))
		}
		if rc.Has("comment") {
			t.Comment = rc.Str("comment")
		}
		for _, k := range pveschema.SplitList(rc.Str("delete")) {
			if k != "comment" {
				return core.ErrParams(map[string]string{"delete": fmt.Sprintf("unknown option '%s'", k)})
			}
			t.Comment = ""
		}
		out = tokenInfo(t)
		return nil
	})
	return out, err
}

func (s *backend) deleteToken(rc *core.Req) (any, error) {
	db := rc.DB()
	user, name := rc.Str("userid"), rc.Str("tokenid")
	if _, err := db.Access.TokenOf(user, name); err != nil {
		return nil, err
	}
	return nil, s.lockUserCfg(db, "deleting token failed", func(a *access.Config) error {
		if _, err := a.TokenOf(user, name); err != nil {
			return err
		}
		delete(a.Tokens, user+"!"+name)
		// parse_user_config drops the ACL entries of a token that is gone.
		id := user + "!" + name
		kept := a.ACL[:0]
		for _, e := range a.ACL {
			if e.UGID != id {
				kept = append(kept, e)
			}
		}
		a.ACL = kept
		return nil
	})
}

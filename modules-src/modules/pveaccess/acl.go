package pveaccess

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
)

// ACL entries of one path (API2/ACL.pm): the roles the task names for
// each member it names, with its propagate flag, exactly — a role a named
// member holds at that path that the task does not name is removed, and a
// flag changed by hand is set back.

// aclEntry is one element of GET /access/acl.
type aclEntry struct {
	Path      string `json:"path"`
	Type      string `json:"type"`
	UGID      string `json:"ugid"`
	RoleID    string `json:"roleid"`
	Propagate any    `json:"propagate"`
}

// member is the entry's ugid as the task names it ("@group" for groups).
func (e aclEntry) member() string {
	if e.Type == "group" {
		return "@" + e.UGID
	}
	return e.UGID
}

func (e aclEntry) line() string {
	prop := "1"
	if fmt.Sprint(e.Propagate) == "0" || e.Propagate == false {
		prop = "0"
	}
	return fmt.Sprintf("%s %s propagate=%s", e.member(), e.RoleID, prop)
}

// members are the task's members, "@group" for groups.
func (a *access) members() []string {
	var out []string
	for _, g := range a.p.Groups {
		out = append(out, "@"+g)
	}
	out = append(out, a.p.Users...)
	out = append(out, a.p.Tokens...)
	return sortedCopy(out)
}

// readACL lists the entries at the task's path of the task's members.
func (a *access) readACL(ctx context.Context) ([]string, error) {
	var all []aclEntry
	if err := a.c.Get(ctx, "/access/acl", nil, &all); err != nil {
		return nil, fmt.Errorf("cannot read the ACL: %w", err)
	}
	mine := a.members()
	var out []string
	for _, e := range all {
		if e.Path == a.p.Path && slices.Contains(mine, e.member()) {
			out = append(out, e.line())
		}
	}
	slices.Sort(out)
	return out, nil
}

// wantACL is the entries the task asks for at its path.
func (a *access) wantACL() []string {
	if a.p.State == "absent" {
		return nil
	}
	prop := map[bool]string{true: "1", false: "0"}[a.p.Propagate]
	var out []string
	for _, m := range a.members() {
		for _, r := range sortedCopy(a.p.Roles) {
			out = append(out, fmt.Sprintf("%s %s propagate=%s", m, r, prop))
		}
	}
	slices.Sort(out)
	return out
}

// aclParams are PUT /access/acl's parameters for roles × members.
func (a *access) aclParams(roles, members []string, del bool) url.Values {
	v := url.Values{"path": {a.p.Path}, "roles": {strings.Join(roles, ",")}}
	var users, groups, tokens []string
	for _, m := range members {
		switch {
		case strings.HasPrefix(m, "@"):
			groups = append(groups, m[1:])
		case strings.Contains(m, "!"):
			tokens = append(tokens, m)
		default:
			users = append(users, m)
		}
	}
	for k, l := range map[string][]string{"users": users, "groups": groups, "tokens": tokens} {
		if len(l) > 0 {
			v.Set(k, strings.Join(l, ","))
		}
	}
	if del {
		v.Set("delete", "1")
	} else {
		v.Set("propagate", map[bool]string{true: "1", false: "0"}[a.p.Propagate])
	}
	return v
}

func (a *access) planACL(ctx context.Context) ([]ansible.Change, error) {
	for _, r := range a.p.Roles {
		if _, ok := a.roles[r]; !ok {
			if err := a.r.NotYet(ansible.Prerequisite{Option: "roles", Kind: ansible.CreatedRole, Name: r,
				Object: "role " + r, Predicts: "the entries granting it"},
				fmt.Errorf("roles: role %q does not exist on this cluster (create it first with type: role)", r)); err != nil {
				return nil, err
			}
		}
	}
	have, err := a.readACL(ctx)
	if err != nil {
		return nil, err
	}
	want := a.wantACL()
	a.existed = len(have) > 0
	a.final = map[string]any{"path": a.p.Path, "entries": have}
	if slices.Equal(have, want) {
		return nil, nil
	}
	// Entries to remove: roles not named (present), or every named one
	// (absent); what differs only by its flag is set by the add.
	var delRoles, delMembers, removed []string
	for _, line := range have {
		f := strings.Fields(line)
		if a.p.State == "absent" || !slices.Contains(a.p.Roles, f[1]) {
			delRoles, delMembers = append(delRoles, f[1]), append(delMembers, f[0])
			removed = append(removed, line)
		}
	}
	what := "ACL entries of " + a.p.Path
	diff := &ansible.Diff{Before: strings.Join(have, "\n") + "\n", After: strings.Join(want, "\n") + "\n",
		BeforeHeader: "acl " + a.p.Path, AfterHeader: "acl " + a.p.Path}
	a.final = map[string]any{"path": a.p.Path, "entries": want}
	// One change per write (a removal, then an addition), each settled and
	// verified by what it alone does: a lost answer to the removal is
	// settled by the removed entries being gone, which the task's end
	// state cannot show before the addition runs.
	var out []ansible.Change
	if len(delRoles) > 0 {
		out = append(out, a.aclChange("acl:remove:"+a.p.Path, "remove the "+what+" ["+strings.Join(removed, "; ")+"]",
			a.aclParams(sortedCopy(delRoles), sortedCopy(delMembers), true), func(got []string) error {
				if left := intersect(got, removed); len(left) > 0 {
					return fmt.Errorf("%s still hold [%s]", what, strings.Join(left, "; "))
				}
				return nil
			}))
	}
	if a.p.State != "absent" && !slices.Equal(intersect(have, want), want) {
		out = append(out, a.aclChange("acl:"+a.p.Path, "set the "+what, a.aclParams(sortedCopy(a.p.Roles), a.members(), false),
			func(got []string) error {
				if !slices.Equal(got, want) {
					return fmt.Errorf("%s are [%s], not [%s]", what, strings.Join(got, "; "), strings.Join(want, "; "))
				}
				return nil
			}))
	}
	out[0].Diff = diff // the task's one diff: the path's entries before and after
	return out, nil
}

// aclChange is one PUT /access/acl, settled and verified by check on the
// path's entries read back.
func (a *access) aclChange(id, summary string, params url.Values, check func(got []string) error) ansible.Change {
	req := a.request("PUT", "/access/acl", params)
	verify := func(ctx context.Context) error {
		got, err := a.readACL(ctx)
		if err != nil {
			return err
		}
		a.final = map[string]any{"path": a.p.Path, "entries": got}
		return check(got)
	}
	return ansible.Change{ID: id, Summary: summary,
		Apply: func(ctx context.Context) error {
			_, err := a.write(ctx, req, summary, false, func(ctx context.Context) (bool, error) {
				return verify(ctx) == nil, nil
			})
			return err
		}, Verify: verify}
}

func intersect(have, want []string) []string {
	var out []string
	for _, w := range want {
		if slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

package pveaccess

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// Users (User.pm), groups (Group.pm) and custom roles (Role.pm).

// userGone is the settle read of a user's delete.
func (a *access) userGone(ctx context.Context) (bool, error) {
	obj, err := a.readUser(ctx)
	return obj == nil, err
}

// userView is a user as the module compares and shows it.
func userView(obj map[string]any) map[string]string {
	if obj == nil {
		return nil
	}
	var groups []string
	switch l := obj["groups"].(type) {
	case []any:
		for _, g := range l {
			groups = append(groups, pveapi.String(g))
		}
	case string:
		groups = pveapi.SplitList(l)
	}
	enable := str(obj, "enable")
	if enable == "" {
		enable = "1"
	}
	expire := str(obj, "expire")
	if expire == "" {
		expire = "0"
	}
	return map[string]string{"enable": enable, "expire": expire, "groups": strings.Join(sortedCopy(groups), ","),
		"comment": str(obj, "comment"), "email": str(obj, "email"), "firstname": str(obj, "firstname"), "lastname": str(obj, "lastname")}
}

// wantUser is what the task asks for, PVE's keys and forms.
func (a *access) wantUser() map[string]string {
	want := map[string]string{}
	p := a.p
	if p.Enable != nil {
		want["enable"] = map[bool]string{true: "1", false: "0"}[*p.Enable]
	}
	if p.Expire != nil {
		want["expire"] = strconv.Itoa(*p.Expire)
	}
	if p.Groups != nil {
		want["groups"] = strings.Join(sortedCopy(p.Groups), ",")
	}
	for k, v := range map[string]*string{"comment": p.Comment, "email": p.Email, "firstname": p.Firstname, "lastname": p.Lastname} {
		if v != nil {
			want[k] = *v
		}
	}
	return want
}

func asAny(m map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (a *access) planUser(ctx context.Context) ([]ansible.Change, error) {
	obj, err := a.readUser(ctx)
	if err != nil {
		return nil, err
	}
	have, want, what := userView(obj), a.wantUser(), "user "+a.p.UserID
	a.existed, a.final = obj != nil, asAny(have)
	if a.p.State == "absent" {
		if obj == nil {
			return nil, nil
		}
		req := a.request("DELETE", "/access/users/{userid}", nil, a.p.UserID)
		del := a.deleteChange("user:delete", req, what, asAny(have))
		del.Apply = func(ctx context.Context) error {
			_, err := a.write(ctx, req, "remove "+what, false, a.userGone)
			return err
		}
		del.Verify = func(ctx context.Context) error {
			if gone, err := a.userGone(ctx); err != nil || !gone {
				return fmt.Errorf("%s still exists (%v)", what, err)
			}
			a.final = nil
			return nil
		}
		return []ansible.Change{del}, nil
	}
	if obj == nil {
		params := url.Values{"userid": {a.p.UserID}}
		for k, v := range want {
			if v != "" {
				params.Set(k, v)
			}
		}
		if a.p.Password != "" {
			params.Set("password", a.p.Password)
		}
		after := userView(map[string]any{})
		for k, v := range want {
			after[k] = v
		}
		a.final = asAny(after)
		req := a.request("POST", "/access/users", params)
		return []ansible.Change{{ID: "user:create", Summary: "create " + what,
			Diff: &ansible.Diff{Before: map[string]any{}, After: asAny(after), BeforeHeader: what, AfterHeader: what},
			Apply: func(ctx context.Context) error {
				_, err := a.write(ctx, req, "create "+what, true, func(ctx context.Context) (bool, error) {
					gone, err := a.userGone(ctx)
					return !gone, err
				})
				return err
			},
			Verify: a.verifyUser(want)}}, nil
	}
	set, changed, after := compareFields(have, want)
	var out []ansible.Change
	if len(changed) > 0 {
		a.final = after
		req := a.request("PUT", "/access/users/{userid}", set, a.p.UserID)
		out = append(out, ansible.Change{ID: "user:update", Summary: fmt.Sprintf("update %s (%s)", what, strings.Join(changed, ", ")),
			Diff: &ansible.Diff{Before: asAny(have), After: after, BeforeHeader: what, AfterHeader: what},
			Apply: func(ctx context.Context) error {
				_, err := a.write(ctx, req, "update "+what, false, a.userSettle(want))
				return err
			},
			Verify: a.verifyUser(want)})
	}
	if a.p.Password != "" && a.p.UpdatePassword == "always" {
		ch, err := a.passwordChange(what)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	return out, nil
}

// readUser finds the user in GET /access/users?full=1. PVE lists only the
// users one may see (User.Modify or Sys.Audit on /access/groups, or on a
// group of theirs): a user missing from the list is absent only when the
// caller may see every user, else the module cannot tell and says so (K19).
func (a *access) readUser(ctx context.Context) (map[string]any, error) {
	var users []map[string]any
	if err := a.c.Get(ctx, "/access/users", url.Values{"full": {"1"}}, &users); err != nil {
		return nil, fmt.Errorf("cannot list the users: %w", err)
	}
	for _, u := range users {
		if str(u, "userid") == a.p.UserID {
			return u, nil
		}
	}
	var perms map[string]map[string]any
	if err := a.c.Get(ctx, "/access/permissions", url.Values{"path": {"/access/groups"}}, &perms); err != nil {
		return nil, fmt.Errorf("cannot read this task's privileges: %w", err)
	}
	if p := perms["/access/groups"]; p["User.Modify"] == nil && p["Sys.Audit"] == nil {
		return nil, fmt.Errorf("userid: %s is not in the user list, which PVE filters: without User.Modify or Sys.Audit on /access/groups the module cannot tell whether it exists, and does not guess", a.p.UserID)
	}
	return nil, nil
}

// passwordChange sets the password of an existing user (PUT
// /access/password). PVE cannot show a password, so it is sent on every
// run that asks for it, and proven by the answer alone. change_password
// (AccessControl.pm) refuses API tokens (allowtoken 0) and asks every
// caller but root@pam for its own password (reauth_user_for_user_modification's
// confirmation-password): the module sends api_password there, and with a
// token refuses before the task's first write rather than after it.
func (a *access) passwordChange(what string) (ansible.Change, error) {
	params := url.Values{"userid": {a.p.UserID}, "password": {a.p.Password}}
	switch conn := a.p.Connection; {
	case a.c.Local(): // root@pam's ticket
	case conn.TokenID != "":
		return ansible.Change{}, fmt.Errorf("update_password: PVE does not let an API token change a password (PUT /access/password refuses tokens): run this task with api_user and api_password, or on a node without api_host (local mode, root@pam)")
	case conn.User != "root@pam":
		params.Set("confirmation-password", conn.Password)
	}
	req := a.request("PUT", "/access/password", params)
	return ansible.Change{ID: "user:password", Summary: "set the password of " + what + " (update_password: always)",
		Apply: func(ctx context.Context) error {
			// No read shows a password: a lost answer stays unverified
			// (changed, never sent again), never "nothing changed".
			_, err := pveansible.Dispatch(ctx, a.r, a.c, pveapi.Write{Method: req.Method, Path: req.Path, Params: req.Params,
				What: "set the password of " + what, Unreadable: "PVE shows no password, so no read can tell whether it was set"})
			return err
		},
		Verify: func(context.Context) error { return nil }, // PVE answered success; a password cannot be read back
	}, nil
}

func (a *access) userSettle(want map[string]string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		return a.verifyUser(want)(ctx) == nil, nil
	}
}

func (a *access) verifyUser(want map[string]string) func(context.Context) error {
	return func(ctx context.Context) error {
		obj, err := a.readUser(ctx)
		if err != nil {
			return err
		}
		if obj == nil {
			return fmt.Errorf("user %s does not exist", a.p.UserID)
		}
		have := userView(obj)
		a.final = asAny(have)
		return mismatch(have, want)
	}
}

// mismatch names every key of want that have does not hold.
func mismatch(have, want map[string]string) error {
	var wrong []string
	for k, v := range want {
		if have[k] != v {
			wrong = append(wrong, fmt.Sprintf("%s is %q, not %q", k, have[k], v))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("%s", strings.Join(wrong, "; "))
	}
	return nil
}

func (a *access) groupPath() string { return pveapi.Path("/access/groups/%s", a.p.GroupID) }

func (a *access) planGroup(ctx context.Context) ([]ansible.Change, error) {
	what := "group " + a.p.GroupID
	obj, err := a.readObj(ctx, a.groupPath(), what)
	if err != nil {
		return nil, err
	}
	var have map[string]string
	if obj != nil {
		have = map[string]string{"comment": str(obj, "comment")}
	}
	want := map[string]string{}
	if a.p.Comment != nil {
		want["comment"] = *a.p.Comment
	}
	a.existed, a.final = obj != nil, asAny(have)
	verify := func(ctx context.Context) error {
		obj, err := a.readObj(ctx, a.groupPath(), what)
		if err != nil || obj == nil {
			return fmt.Errorf("%s does not exist (%v)", what, err)
		}
		got := map[string]string{"comment": str(obj, "comment")}
		a.final = asAny(got)
		return mismatch(got, want)
	}
	switch {
	case a.p.State == "absent" && obj == nil:
		return nil, nil
	case a.p.State == "absent":
		return []ansible.Change{a.deleteChange("group:delete", a.request("DELETE", "/access/groups/{groupid}", nil, a.p.GroupID), what, asAny(have))}, nil
	case obj == nil:
		params := url.Values{"groupid": {a.p.GroupID}}
		if want["comment"] != "" {
			params.Set("comment", want["comment"])
		}
		a.final = map[string]any{"comment": want["comment"]}
		req := a.request("POST", "/access/groups", params)
		return []ansible.Change{{ID: "group:create", Summary: "create " + what,
			Diff: &ansible.Diff{Before: map[string]any{}, After: a.final, BeforeHeader: what, AfterHeader: what},
			Apply: func(ctx context.Context) error {
				_, err := a.write(ctx, req, "create "+what, true, a.there(a.groupPath(), what))
				return err
			}, Verify: verify}}, nil
	}
	set, changed, after := compareFields(have, want)
	if len(changed) == 0 {
		return nil, nil
	}
	a.final = after
	req := a.request("PUT", "/access/groups/{groupid}", set, a.p.GroupID)
	return []ansible.Change{{ID: "group:update", Summary: "update " + what + " (comment)",
		Diff: &ansible.Diff{Before: asAny(have), After: after, BeforeHeader: what, AfterHeader: what},
		Apply: func(ctx context.Context) error {
			_, err := a.write(ctx, req, "update "+what, false, func(ctx context.Context) (bool, error) {
				return verify(ctx) == nil, nil
			})
			return err
		}, Verify: verify}}, nil
}

var pveNamespace = regexp.MustCompile(`(?i)^PVE`)

// planRole: a custom role's privileges, exactly; a role PVE ships is
// refused, and every privilege is checked against the node's version.
func (a *access) planRole() ([]ansible.Change, error) {
	id, what := a.p.RoleID, "role "+a.p.RoleID
	if a.special[id] || pveNamespace.MatchString(id) {
		return nil, fmt.Errorf("roleid: %s is a role PVE ships (or in its PVE namespace), which cannot be created, changed or removed; name your own role, e.g. Automation", id)
	}
	want := sortedCopy(a.p.Privileges)
	for _, p := range want {
		if !a.valid[p] {
			return nil, fmt.Errorf("privileges: unknown privilege %q on PVE %d (valid: %s)", p, a.version, strings.Join(sortedKeys(a.valid), ", "))
		}
	}
	have, exists := a.roles[id]
	a.existed = exists
	view := func(privs []string) map[string]any { return map[string]any{"privileges": privs} }
	if exists {
		a.final = view(have)
	}
	path := pveapi.Path("/access/roles/%s", id)
	verify := func(ctx context.Context) error {
		obj, err := a.readObj(ctx, path, what)
		if err != nil || obj == nil {
			return fmt.Errorf("%s does not exist (%v)", what, err)
		}
		got := sortedKeys(obj)
		a.final = view(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("%s has %s, not %s", what, strings.Join(got, ","), strings.Join(want, ","))
		}
		return nil
	}
	switch {
	case a.p.State == "absent" && !exists:
		return nil, nil
	case a.p.State == "absent":
		return []ansible.Change{a.deleteChange("role:delete", a.request("DELETE", "/access/roles/{roleid}", nil, id), what, view(have))}, nil
	case exists && strings.Join(have, ",") == strings.Join(want, ","):
		return nil, nil
	}
	params, summary, creates := url.Values{"privs": {strings.Join(want, ",")}}, "set the privileges of "+what, false
	before, method := map[string]any{}, "PUT"
	var req apischema.Request
	if exists {
		before = view(have)
		req = a.request(method, "/access/roles/{roleid}", params, id)
	} else {
		method, summary, creates = "POST", "create "+what, true
		params.Set("roleid", id)
		req = a.request(method, "/access/roles", params)
	}
	a.final = view(want)
	return []ansible.Change{{ID: "role:" + strings.ToLower(method), Summary: summary,
		Diff: &ansible.Diff{Before: before, After: view(want), BeforeHeader: what, AfterHeader: what},
		Apply: func(ctx context.Context) error {
			_, err := a.write(ctx, req, summary, creates, func(ctx context.Context) (bool, error) {
				return verify(ctx) == nil, nil
			})
			return err
		}, Verify: verify}}, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return sortedCopy(out)
}

package pveaccess

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
)

// API tokens (User.pm): the secret is in PVE's answer to the creation and
// nowhere the user can read it again; it goes to the result only through
// SetRevealed (a no_log task gets it as token_secret, any other task the
// placeholder), and never in a diff, a warning or an error.

func (a *access) fullTokenID() string { return a.p.UserID + "!" + a.p.TokenID }

func (a *access) tokenPath() string {
	return pveapi.Path("/access/users/%s/token/%s", a.p.UserID, a.p.TokenID)
}

// tokenRequest is a write of the task's token (request).
func (a *access) tokenRequest(method string, params url.Values) apischema.Request {
	return a.request(method, "/access/users/{userid}/token/{tokenid}", params, a.p.UserID, a.p.TokenID)
}

func tokenView(obj map[string]any) map[string]string {
	if obj == nil {
		return nil
	}
	privsep, expire := str(obj, "privsep"), str(obj, "expire")
	if privsep == "" {
		privsep = "1"
	}
	if expire == "" {
		expire = "0"
	}
	return map[string]string{"privsep": privsep, "expire": expire, "comment": str(obj, "comment")}
}

func (a *access) wantToken() map[string]string {
	want := map[string]string{"privsep": map[bool]string{true: "1", false: "0"}[a.p.Privsep]}
	if a.p.Expire != nil {
		want["expire"] = strconv.Itoa(*a.p.Expire)
	}
	if a.p.Comment != nil {
		want["comment"] = *a.p.Comment
	}
	return want
}

func (a *access) planToken(ctx context.Context) ([]ansible.Change, error) {
	what := "token " + a.fullTokenID()
	obj, err := a.readObj(ctx, a.tokenPath(), what)
	if err != nil || obj == nil {
		if owner, uerr := a.ownerMissing(ctx); uerr != nil {
			return nil, uerr
		} else if owner {
			err = nil // assumed: an earlier task creates the user (check mode)
		}
	}
	if err != nil {
		return nil, err
	}
	have, want := tokenView(obj), a.wantToken()
	a.existed = obj != nil
	a.setFinal(have)
	switch {
	case a.p.State == "absent" && obj == nil:
		return nil, nil
	case a.p.State == "absent":
		return []ansible.Change{a.deleteChange("token:delete", a.tokenRequest("DELETE", nil), what, asAny(have))}, nil
	case obj == nil:
		return []ansible.Change{a.createToken(what, want)}, nil
	case a.p.State == "rotated":
		del := a.deleteChange("token:delete", a.tokenRequest("DELETE", nil), what, asAny(have))
		del.Summary = "delete " + what + " (rotation: its secret and ACL entries go with it)"
		return []ansible.Change{del, a.createToken(what, want)}, nil
	}
	a.r.Warn(fmt.Sprintf("%s exists: PVE shows a token's secret only once, when it is created, so it cannot be returned again; use state: rotated for a new one", what))
	set, changed, after := compareFields(have, want)
	if len(changed) == 0 {
		return nil, nil
	}
	a.setFinal(toStrings(after))
	req := a.tokenRequest("PUT", set)
	return []ansible.Change{{ID: "token:update", Summary: fmt.Sprintf("update %s (%v)", what, changed),
		Diff: &ansible.Diff{Before: asAny(have), After: after, BeforeHeader: what, AfterHeader: what},
		Apply: func(ctx context.Context) error {
			_, err := a.write(ctx, req, "update "+what, false, func(ctx context.Context) (bool, error) {
				return a.verifyToken(want)(ctx) == nil, nil
			})
			return err
		}, Verify: a.verifyToken(want)}}, nil
}

// ownerMissing tells whether the token's user does not exist and check
// mode assumes an earlier task creates it (created_earlier.users); a user
// that does not exist and is not named there is the real run's error
// (PVE: "no such user", a 403 on the token's path), in check mode too.
// false, nil: the user exists.
func (a *access) ownerMissing(ctx context.Context) (bool, error) {
	u, err := a.readUser(ctx)
	if err != nil || u != nil {
		return false, err
	}
	if a.p.State == "absent" {
		return true, nil // no user, no token: nothing to remove
	}
	return true, a.r.NotYet(ansible.Prerequisite{Option: "userid", Kind: ansible.CreatedUser, Name: a.p.UserID,
		Object: "user " + a.p.UserID, Predicts: "the token's creation"},
		fmt.Errorf("userid: user %s does not exist (create it first with type: user)", a.p.UserID))
}

func toStrings(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = pveapi.String(v)
	}
	return out
}

// setFinal records the token's info and full id for the result.
func (a *access) setFinal(v map[string]string) {
	if v == nil {
		a.final = nil
		return
	}
	a.final = asAny(v)
	a.final["full_tokenid"] = a.fullTokenID()
	a.r.Set("full_tokenid", a.fullTokenID())
}

// createToken is one POST; its answer's secret is revealed once. A lost
// answer settles whether the token exists, but its secret is gone: the
// task says so and that a rotation makes a new one.
func (a *access) createToken(what string, want map[string]string) ansible.Change {
	params := url.Values{}
	for k, v := range want {
		if k != "comment" || v != "" {
			params.Set(k, v)
		}
	}
	after := map[string]string{"privsep": want["privsep"], "expire": "0", "comment": ""}
	for k, v := range want {
		after[k] = v
	}
	a.setFinal(after)
	req := a.tokenRequest("POST", params)
	return ansible.Change{ID: "token:create", Summary: "create " + what,
		Diff: &ansible.Diff{Before: map[string]any{}, After: asAny(after), BeforeHeader: what, AfterHeader: what},
		Apply: func(ctx context.Context) error {
			out, err := a.write(ctx, req, "create "+what, true, a.there(a.tokenPath(), what))
			if err != nil {
				return err
			}
			var ans struct {
				Value string `json:"value"`
			}
			if out == nil || out.Data == nil || out.Decode(&ans) != nil || ans.Value == "" {
				a.r.Warn(fmt.Sprintf("%s was created but PVE's answer, the only place its secret is shown, was lost: run the task again with state: rotated for a new secret", what))
				return nil
			}
			if !a.r.SetRevealed("token_secret", ans.Value) {
				a.r.Warn(fmt.Sprintf("%s was created; its secret is masked in this result because the task has no no_log: true (Ansible prints a module's output at -v and -vvv). PVE shows it only once: run the task with no_log: true and register token_secret, or rotate it (state: rotated) from such a task", what))
			}
			return nil
		}, Verify: a.verifyToken(want)}
}

func (a *access) verifyToken(want map[string]string) func(context.Context) error {
	return func(ctx context.Context) error {
		what := "token " + a.fullTokenID()
		obj, err := a.readObj(ctx, a.tokenPath(), what)
		if err != nil {
			return err
		}
		if obj == nil {
			return fmt.Errorf("%s does not exist", what)
		}
		have := tokenView(obj)
		a.setFinal(have)
		return mismatch(have, want)
	}
}

package pveansible_test

import (
	"context"
	"errors"
	"io"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// The client a Run gets in check mode refuses writes by construction,
// before anything is sent (issue 16); in a real run it writes, once.
func TestForRunReadOnlyInCheckMode(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	for _, check := range []bool{true, false} {
		s.ResetRequests()
		var readOnly bool
		var dispatchErr error
		m := ansible.Module{Name: "gopve_unit", Spec: ansible.Spec{}, Run: func(r *ansible.Run) error {
			c, err := pveansible.ForRun(r, conn, pveapi.Options{Retry: &pveapitest.FastRetry})
			if err != nil {
				return err
			}
			readOnly = c.ReadOnly()
			_, dispatchErr = pveansible.Dispatch(r.Context(), r, c, pveapi.Write{Method: "POST", Path: "/storage",
				Params: url.Values{"storage": {"scratch"}, "type": {"dir"}, "path": {"/srv/scratch"}}, What: "create storage scratch", Creates: true,
				Settle: func(context.Context) (bool, error) { return false, nil }})
			return nil
		}}
		ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: map[string]any{}, CheckMode: check}, func(string) (string, bool) { return "", false }, io.Discard)
		var roe *pveapi.ReadOnlyError
		writes := len(pveapitest.Mutating(s))
		switch {
		case check && (!readOnly || !errors.As(dispatchErr, &roe) || writes != 0):
			t.Errorf("check mode: read-only %v, dispatch %v, %d writes", readOnly, dispatchErr, writes)
		case !check && (readOnly || dispatchErr != nil || writes != 1):
			t.Errorf("real run: read-only %v, dispatch %v, %d writes", readOnly, dispatchErr, writes)
		}
	}
}

// Dispatch's outcome as Apply returns it: PVE's refusal is NothingChanged,
// a lost answer nobody settled is not.
func TestDispatchNothingChangedOnlyWhenProved(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	var errs []error
	m := ansible.Module{Name: "gopve_unit", Run: func(r *ansible.Run) error {
		c, err := pveansible.ForRun(r, conn, pveapi.Options{Retry: &pveapitest.FastRetry})
		if err != nil {
			return err
		}
		for _, p := range []url.Values{{"storage": {"scratch"}, "type": {"dir"}}, {"storage": {"local"}, "type": {"dir"}, "path": {"/srv/y"}}} {
			_, err := pveansible.Dispatch(r.Context(), r, c, pveapi.Write{Method: "POST", Path: "/storage", Params: p, What: "create", Creates: true,
				Settle: func(context.Context) (bool, error) { return false, nil }})
			errs = append(errs, err)
		}
		return nil
	}}
	ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: map[string]any{}}, func(string) (string, bool) { return "", false }, io.Discard)
	if len(errs) != 2 || !ansible.IsNothingChanged(errs[0]) || !ansible.IsNothingChanged(errs[1]) ||
		!strings.Contains(errs[1].Error(), "already defined") {
		t.Errorf("refusals: %v", errs)
	}
}

// One builder for every connection option set (issue 16): the full set
// with environment fallbacks, a prefixed subset without them, aliases,
// and a clash is a bug.
func TestOptionSets(t *testing.T) {
	full := pveansible.Set{}.Options()
	if len(full) != len(pveansible.Names) || full["api_host"].EnvFallback[0] != "PROXMOX_HOST" || !full["api_token_secret"].NoLog {
		t.Errorf("full set: %+v", full)
	}
	prim := pveansible.Set{Prefix: "primary_", Only: []string{"api_password", "api_fingerprint"}, For: "join_method=api:",
		Aliases: map[string][]string{"api_password": {"primary_password"}}}.Options()
	pw, ok := prim["primary_api_password"]
	if len(prim) != 2 || !ok || pw.EnvFallback != nil || !pw.NoLog || pw.Aliases[0] != "primary_password" ||
		!strings.HasPrefix(pw.Description[0], "join_method=api: ") {
		t.Errorf("prefixed set: %+v", prim)
	}
	spec := pveansible.With(ansible.Spec{}, pveansible.Set{})
	if len(spec.RequiredTogether) != 1 || spec.RequiredTogether[0][0] != "api_token_id" {
		t.Errorf("token options must be required together: %v", spec.RequiredTogether)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("a module declaring a connection option itself must panic")
		}
	}()
	pveansible.With(ansible.Spec{Options: map[string]ansible.Option{"api_host": {}}}, pveansible.Set{})
}

// pveapi is a pure client: nothing of the Ansible runtime in its imports.
func TestPveapiDoesNotImportAnsible(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/gopve/proxmox/modules-src/pveapi").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "github.com/gopve/proxmox/modules-src/ansible\n") {
		t.Errorf("pveapi depends on the Ansible runtime")
	}
}

// Issue 23 §2, the runtime rule with pveapi's writes: Dispatch notes
// every write that may have acted, so an Apply that dispatched one and
// then claims NothingChanged ends changed, unverified — checked against
// the simulator's request log; a write PVE refused before acting is not
// noted, and NothingChanged stands.
func TestNothingChangedAfterADispatch(t *testing.T) {
	s := pveapitest.Start(t, 9, 1)
	conn := pveapitest.TokenConn(t, s, "pve01")
	for _, c := range []struct {
		name    string
		params  url.Values
		changed bool
	}{
		{"a pool created, then a lie", url.Values{"poolid": {"made"}}, true},
		{"refused by PVE (exists)", url.Values{"poolid": {"made"}}, false},
	} {
		s.ResetRequests()
		m := ansible.Module{Name: "gopve_unit", Run: func(r *ansible.Run) error {
			cl, err := pveansible.ForRun(r, conn, pveapi.Options{Retry: &pveapitest.FastRetry})
			if err != nil {
				return err
			}
			return r.Stage("s", func(context.Context, *ansible.World) ([]ansible.Change, error) {
				return []ansible.Change{{ID: "pool", Summary: "create pool made",
					Apply: func(ctx context.Context) error {
						_, err := pveansible.Dispatch(ctx, r, cl, pveapi.Write{Method: "POST", Path: "/pools", Params: c.params, What: "create pool made", Creates: true,
							Settle: func(context.Context) (bool, error) { return false, nil }})
						if err == nil {
							err = errors.New("the module lies")
						}
						return ansible.NothingChanged(err)
					},
					Verify: func(context.Context) error { return nil }}}, nil
			})
		}}
		res := ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: map[string]any{}}, func(string) (string, bool) { return "", false }, io.Discard)
		sent := pveapitest.Mutating(s)
		msg, _ := res["msg"].(string)
		if len(sent) != 1 || sent[0].Path != "/pools" || res["failed"] != true || res["changed"] != c.changed ||
			strings.Contains(msg, "a write had been sent (create pool made)") != c.changed {
			t.Errorf("%s: %d writes in the log, changed=%v (want %v): %s", c.name, len(sent), res["changed"], c.changed, msg)
		}
	}
}

// The full generic set is documented once, by the api doc fragment
// (issue 27 §3); a prefixed or re-worded set stays in the module's docs.
func TestFullSetExtendsTheAPIFragment(t *testing.T) {
	spec := pveansible.With(ansible.Spec{}, pveansible.Set{})
	if len(spec.Fragments) != 1 || spec.Fragments[0].Ref() != "gopve.proxmox.api" || len(spec.Fragments[0].Options) != len(pveansible.Names) {
		t.Errorf("full set: fragments %+v", spec.Fragments)
	}
	for _, s := range []pveansible.Set{{Prefix: "primary_"}, {Only: []string{"api_password"}}, {NoEnv: true},
		{Docs: map[string][]string{"api_host": {"This node."}}}} {
		if spec := pveansible.With(ansible.Spec{}, s); len(spec.Fragments) != 0 {
			t.Errorf("set %+v must stay in the module's docs, got fragments %v", s, spec.Fragments)
		}
	}
}

package pveaccess

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// access carries one run's knowledge from the stage to the report.
type access struct {
	r *ansible.Run
	c *pveapi.Client
	p params

	version int
	valid   map[string]bool // the version's privileges (the Administrator role's)
	special map[string]bool // the roles PVE ships
	roles   map[string][]string

	existed bool
	final   map[string]any // read back (real run) or predicted (check mode)
	refused error          // the first planned write the API schema refuses (request)
}

// roleEntry is one element of GET /access/roles.
type roleEntry struct {
	RoleID  string `json:"roleid"`
	Privs   string `json:"privs"`
	Special any    `json:"special"`
}

func (a *access) plan(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	v, err := a.c.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("cannot read the PVE version: %w", err)
	}
	a.version = v.Major
	var roles []roleEntry
	if err := a.c.Get(ctx, "/access/roles", nil, &roles); err != nil {
		return nil, fmt.Errorf("cannot read the roles: %w", err)
	}
	a.valid, a.special, a.roles = map[string]bool{}, map[string]bool{}, map[string][]string{}
	for _, r := range roles {
		privs := pveapi.SplitList(r.Privs)
		slices.Sort(privs)
		a.roles[r.RoleID] = privs
		if pveapi.String(r.Special) == "1" {
			a.special[r.RoleID] = true
		}
		if r.RoleID == "Administrator" {
			for _, p := range privs {
				a.valid[p] = true
			}
		}
	}
	changes, err := a.planKind(ctx)
	if err == nil && a.refused != nil {
		return nil, a.refused
	}
	return changes, err
}

func (a *access) planKind(ctx context.Context) ([]ansible.Change, error) {
	switch a.p.Type {
	case "user":
		return a.planUser(ctx)
	case "group":
		return a.planGroup(ctx)
	case "role":
		return a.planRole()
	case "acl":
		return a.planACL(ctx)
	}
	return a.planToken(ctx)
}

// request is one of the task's writes, built when it is planned and
// checked then against the API schema of the node's PVE version (schema
// is the schema's path, pathParams fill its {params}). A write PVE would
// refuse fails the plan, naming the option, before the task's first
// write: a task of several writes (a rotation, an update and a password,
// an ACL's removal and addition) never stops between them over bad input.
func (a *access) request(method, schema string, params url.Values, pathParams ...string) apischema.Request {
	req := apischema.New(method, schema, params, pathParams...)
	if err := req.Validate(a.version); err != nil && a.refused == nil {
		a.refused = pveansible.SchemaError(err, optionOf)
	}
	return req
}

// optionOf names the option behind a PVE parameter, for a schema refusal.
func optionOf(param string) string {
	if param == "privs" {
		return "privileges"
	}
	return param
}

// write sends req once, settled by settle when its answer is lost.
func (a *access) write(ctx context.Context, req apischema.Request, what string, creates bool, settle func(context.Context) (bool, error)) (*pveapi.Outcome, error) {
	return pveansible.Dispatch(ctx, a.r, a.c, pveapi.Write{Method: req.Method, Path: req.Path, Params: req.Params, What: what,
		Settle: settle, Creates: creates})
}

// readObj reads path into a map; nil when PVE says it does not exist. A
// 403 stays an error: not being allowed to see is not absent (K19).
func (a *access) readObj(ctx context.Context, path, what string) (map[string]any, error) {
	var out map[string]any
	err := a.c.Get(ctx, path, nil, &out)
	if pveapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	return out, nil
}

// gone is the settle read of a delete: the object is not there.
func (a *access) gone(path, what string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		obj, err := a.readObj(ctx, path, what)
		return obj == nil, err
	}
}

// there is the settle read of a create.
func (a *access) there(path, what string) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		obj, err := a.readObj(ctx, path, what)
		return obj != nil, err
	}
}

// deleteChange removes the object req deletes, verified gone.
func (a *access) deleteChange(id string, req apischema.Request, what string, before map[string]any) ansible.Change {
	return ansible.Change{
		ID: id, Summary: "remove " + what,
		Diff: &ansible.Diff{Before: before, After: map[string]any{}, BeforeHeader: what, AfterHeader: what},
		Apply: func(ctx context.Context) error {
			_, err := a.write(ctx, req, "remove "+what, false, a.gone(req.Path, what))
			return err
		},
		Verify: func(ctx context.Context) error {
			obj, err := a.readObj(ctx, req.Path, what)
			if err == nil && obj != nil {
				err = fmt.Errorf("%s still exists", what)
			}
			a.final = nil
			return err
		},
	}
}

// compareFields returns the options of want that differ from have (PVE's
// answer), as PUT parameters, and the object after them.
func compareFields(have, want map[string]string) (url.Values, []string, map[string]any) {
	set := url.Values{}
	var changed []string
	after := map[string]any{}
	for k, v := range have {
		after[k] = v
	}
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] != want[k] {
			set.Set(k, want[k])
			changed = append(changed, k)
			after[k] = want[k]
		}
	}
	return set, changed, after
}

// str is PVE's value of key in obj as a string ("" when unset).
func str(obj map[string]any, key string) string {
	if obj == nil || obj[key] == nil {
		return ""
	}
	return pveapi.String(obj[key])
}

func splitUser(id string) (name, realm string) {
	name, realm, _ = strings.Cut(id, "@")
	return name, realm
}

func cutToken(id string) (user, name string, ok bool) { return strings.Cut(id, "!") }

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// checkACLPath is AccessControl.pm normalize_path and check_path: a path
// PVE refuses fails naming path. Reconstruction of master's list.
func checkACLPath(path string) error {
	norm := regexp.MustCompile(`/+`).ReplaceAllString(path, "/")
	if norm != "/" {
		norm = strings.TrimSuffix(norm, "/")
	}
	if !strings.HasPrefix(norm, "/") {
		norm = "/" + norm
	}
	if path == "" || !aclPathRe.MatchString(norm) {
		return fmt.Errorf("path: invalid ACL path '%s' (PVE accepts /, /access[/groups/<g>|/realm/<r>], /nodes[/<node>], /pool[/<pool>], /sdn/…, /storage[/<id>], /vms[/<vmid>], /mapping/…)", path)
	}
	if norm != path {
		return fmt.Errorf("path: write the ACL path as PVE stores it, %q (not %q)", norm, path)
	}
	return nil
}

var aclPathRe = regexp.MustCompile(`^(?:/|/access|/access/groups|/access/groups/[[:alnum:]._-]+|/access/realm|/access/realm/[[:alnum:]._-]+` +
	`|/nodes|/nodes/[[:alnum:]._-]+|/pool|/pool/[A-Za-z0-9._-]+(?:/[A-Za-z0-9._-]+){0,2}` +
	`|/sdn(?:/[[:alnum:]._-]+){0,4}|/storage|/storage/[[:alnum:]._-]+|/vms|/vms/[1-9][0-9]{2,}` +
	`|/mapping|/mapping/[[:alnum:]._-]+|/mapping/[[:alnum:]._-]+/[[:alnum:]._-]+)$`)

func (a *access) report() {
	a.r.Set("existed", a.existed)
	pveansible.ReportVersion(a.r, a.version)
	out := map[string]any{}
	if a.final != nil {
		out = a.final
	}
	a.r.Set(a.p.Type, out)
}

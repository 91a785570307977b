package pvestorage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveansible"
)

// storage carries one run's knowledge from the stage to the report.
type storage struct {
	r    *ansible.Run
	c    *pveapi.Client
	p    params
	want map[string]string

	version int
	existed bool
	final   map[string]any // read back (real run) or predicted (check mode); nil when absent
}

func (s *storage) path() string { return pveapi.Path("/storage/%s", s.p.Storage) }

// pveString renders a task value in PVE's form: booleans 0/1, sorted
// comma lists, dicts as key=value lists.
func pveString(key string, v any) (string, error) {
	switch x := v.(type) {
	case bool:
		if key == "is_mountpoint" {
			return map[bool]string{true: "yes", false: "no"}[x], nil
		}
		return map[bool]string{true: "1", false: "0"}[x], nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case string:
		return normalise(key, x), nil
	case []any:
		parts := make([]string, 0, len(x))
		for _, e := range x {
			parts = append(parts, fmt.Sprint(e))
		}
		return normalise(key, strings.Join(parts, ",")), nil
	case map[string]any:
		if key == "encryption-key" { // a key file's JSON, as Ansible templated it
			b, err := json.Marshal(x)
			return string(b), err
		}
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, k+"="+pveapi.String(x[k]))
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("unsupported value %v (%T)", v, v)
}

// normalise puts a value in the form two equal settings share: lists
// sorted and de-duplicated, booleans as 0/1.
func normalise(key, v string) string {
	v = strings.TrimSpace(v)
	if key == "content" || key == "nodes" {
		items := pveapi.SplitList(v)
		slices.Sort(items)
		return strings.Join(slices.Compact(items), ",")
	}
	if o, ok := optSchemaAnyOK(key); ok && o.Type == "boolean" && v != "" {
		if b, err := pveapi.ParseBool(v); err == nil {
			return map[bool]string{true: "1", false: "0"}[b]
		}
	}
	return v
}

func optSchemaAnyOK(key string) (optSchema, bool) {
	if o, ok := schemaV9[key]; ok {
		return o, true
	}
	o, ok := schemaV8[key]
	return o, ok
}

// current is the value PVE uses for key: what the config says, else the
// schema's default (booleans default to 0).
func (s *storage) current(cfg map[string]any, key string) string {
	if v, ok := cfg[key]; ok {
		return normalise(key, pveapi.String(v))
	}
	o := schemaFor(s.version)[key]
	switch {
	case o.Type == "boolean":
		if b, err := pveapi.ParseBool(o.Default); err == nil && b {
			return "1"
		}
		return "0"
	case len(o.Enum) > 0 || key == "is_mountpoint":
		return o.Default
	}
	return ""
}

// read returns the storage's config and digest; nil config when it does
// not exist. A 403 stays an error: not being allowed to see is not absent (K19).
func (s *storage) read(ctx context.Context) (map[string]any, error) {
	var cfg map[string]any
	err := s.c.Get(ctx, s.path(), nil, &cfg)
	if pveapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		if pveapi.IsPermission(err) {
			return nil, fmt.Errorf("cannot read storage %s: %w; without Datastore.Allocate on /storage/%s the module cannot tell whether it exists, and does not guess", s.p.Storage, err, s.p.Storage)
		}
		return nil, fmt.Errorf("cannot read storage %s: %w", s.p.Storage, err)
	}
	return cfg, nil
}

func (s *storage) plan(ctx context.Context, _ *ansible.World) ([]ansible.Change, error) {
	v, err := s.c.Version(ctx)
	if err != nil {
		return nil, nameUnreachable(s.p.Connection.API(), s.c, fmt.Errorf("cannot read the PVE version: %w", err))
	}
	s.version = v.Major
	if s.p.State == "present" {
		if err := s.checkForVersion(); err != nil {
			return nil, err
		}
	}
	cfg, err := s.read(ctx)
	if err != nil {
		return nil, err
	}
	s.existed = cfg != nil
	s.final = cfg
	if s.p.State == "present" {
		if err := s.keepMembers(ctx, cfg); err != nil {
			return nil, err
		}
	}
	switch {
	case s.p.State == "absent" && cfg == nil:
		return nil, nil
	case s.p.State == "absent":
		return s.planDelete(ctx, cfg)
	case cfg == nil:
		return s.planCreate()
	}
	return s.planUpdate(cfg)
}

func (s *storage) checkForVersion() error {
	t, schema := storageTypes[s.p.Type], schemaFor(s.version)
	for _, key := range slices.Sorted(maps.Keys(s.want)) {
		if !t.Allows(key, s.version) {
			return fmt.Errorf("%s: not an option of storage type %s on PVE %d", optionName(key), s.p.Type, s.version)
		}
		if s.want[key] == "" {
			continue // removal
		}
		if err := checkValue(schema[key], s.want[key]); err != nil {
			return fmt.Errorf("%s: %w", optionName(key), err)
		}
	}
	return nil
}

func (s *storage) planCreate() ([]ansible.Change, error) {
	t := storageTypes[s.p.Type]
	for _, k := range t.MustGive() {
		if s.want[k] == "" {
			return nil, fmt.Errorf("%s: required to create a %s storage", optionName(k), s.p.Type)
		}
	}
	if s.want["master-pubkey"] != "" && s.want["encryption-key"] == "" {
		// PBSPlugin on_add_hook refuses it only after writing the password file.
		return nil, errors.New("master_pubkey: needs encryption_key on a new pbs storage (PVE: 'master-pubkey' can only be used together with 'encryption-key')")
	}
	params := url.Values{"storage": {s.p.Storage}, "type": {s.p.Type}}
	predicted := map[string]any{"storage": s.p.Storage, "type": s.p.Type}
	for k, v := range s.want {
		if v == "" {
			continue
		}
		if k == "master-pubkey" {
			v = masterPubkeyParam(v)
		}
		params.Set(k, v)
		if s.sensitive(k) || slices.Contains(secretKeys, k) {
			if m := secretMarker(k, v); m != nil {
				predicted[k] = m
			}
			continue
		}
		predicted[k] = v
	}
	s.final = predicted
	return []ansible.Change{{
		ID:      "storage:create",
		Summary: fmt.Sprintf("create %s storage %s", s.p.Type, s.p.Storage),
		Diff:    ansible.TextDiff(cfgHeader, "", section(predicted)),
		Apply:   func(ctx context.Context) error { return s.create(ctx, params) },
		Verify:  s.verify,
	}}, nil
}

// create sends the POST once. PVE writes storage.cfg at the end of a
// locked create, after the plugin's on_add_hook and activation (an NFS
// mount, a PBS login: pve-storage src/PVE/API2/Storage/Config.pm create),
// so a lost answer is settled by reading the storage back until it shows,
// within the run's deadline; absent until then is changed, unverified,
// never "nothing was changed", and the POST is never sent again.
func (s *storage) create(ctx context.Context, params url.Values) error {
	out, err := pveansible.Dispatch(ctx, s.r, s.c, pveapi.Write{
		Method: http.MethodPost, Path: "/storage", Params: params,
		What:   fmt.Sprintf("create storage %s", s.p.Storage),
		Settle: s.exists, Creates: true,
	})
	if err == nil {
		s.generatedKey(out)
	}
	return err
}

// exists is the settle read of a create: the storage is defined.
func (s *storage) exists(ctx context.Context) (bool, error) {
	cfg, err := s.read(ctx)
	return cfg != nil, err
}

func (s *storage) planUpdate(cfg map[string]any) ([]ansible.Change, error) {
	set, changed, after, err := s.updateParams(cfg)
	if err != nil || len(changed) == 0 {
		return nil, err
	}
	s.final = after
	return []ansible.Change{{
		ID:      "storage:update",
		Summary: fmt.Sprintf("update storage %s (%s)", s.p.Storage, strings.Join(changed, ", ")),
		Diff:    ansible.TextDiff(cfgHeader, section(cfg), section(after)),
		Apply:   func(ctx context.Context) error { return s.update(ctx, set) },
		Verify:  s.verify,
	}}, nil
}

// updateParams compares cfg with the task's options: the PUT's parameters
// (guarded by cfg's digest), the options that differ, and the config
// after the PUT. Nothing differs: no options.
func (s *storage) updateParams(cfg map[string]any) (url.Values, []string, map[string]any, error) {
	curType := pveapi.String(cfg["type"])
	if curType != s.p.Type {
		return nil, nil, nil, fmt.Errorf("type: storage %s is a %s storage, not %s; PVE cannot change a storage's type: remove it (state: absent) and declare it again if that is really meant", s.p.Storage, curType, s.p.Type)
	}
	t, schema := storageTypes[s.p.Type], schemaFor(s.version)
	set := url.Values{}
	var deletes, changed []string
	after := maps.Clone(cfg)
	for _, key := range slices.Sorted(maps.Keys(s.want)) {
		if s.sensitive(key) {
			s.planSecret(cfg, key, set, &deletes, &changed, after)
			continue
		}
		want, have := s.want[key], s.current(cfg, key)
		if want == have {
			continue
		}
		if _, present := cfg[key]; want == "" && !present {
			continue
		}
		if slices.Contains(t.Fixed, key) || !schema[key].Updatable {
			return nil, nil, nil, fmt.Errorf("%s: fixed for a %s storage: %s has %q and PVE cannot change it (wanted %q); nothing was changed. Declare a new storage under another ID instead", optionName(key), s.p.Type, s.p.Storage, have, want)
		}
		changed = append(changed, optionName(key))
		if want == "" {
			deletes = append(deletes, key)
			delete(after, key)
		} else {
			set.Set(key, want)
			after[key] = want
		}
	}
	if len(changed) == 0 {
		return nil, nil, nil, nil
	}
	if len(deletes) > 0 {
		set.Set("delete", strings.Join(deletes, ","))
	}
	if d := pveapi.String(cfg["digest"]); d != "" {
		set.Set("digest", d)
	}
	return set, changed, after, nil
}

// update sends the digest-guarded PUT once. PVE checks the digest under
// storage.cfg's lock before it writes anything (pve-storage
// API2/Storage/Config.pm update: assert_if_modified), so "detected
// modified configuration" proves this PUT wrote nothing: storage.cfg
// changed since the read — typically an earlier run's update whose answer
// was lost and which PVE finished meanwhile. The storage is then read
// again and only what still differs is sent, once, with the fresh digest;
// when nothing differs any more, the other write already made the change
// this task promised (the diff did happen during the task), and nothing
// is sent.
func (s *storage) update(ctx context.Context, set url.Values) error {
	err := s.put(ctx, set)
	if !pveapi.IsModified(err) {
		return err
	}
	refused := fmt.Errorf("%w: storage.cfg changed between reading and writing, and PVE wrote nothing", err)
	cfg, rerr := s.read(ctx)
	if rerr != nil {
		return ansible.NothingChanged(fmt.Errorf("%w; reading it again failed: %v", refused, rerr))
	}
	if cfg == nil {
		return ansible.NothingChanged(fmt.Errorf("%w; storage %s no longer exists", refused, s.p.Storage))
	}
	again, changed, _, perr := s.updateParams(cfg)
	if perr != nil {
		return ansible.NothingChanged(fmt.Errorf("%w; read again: %v", refused, perr))
	}
	if len(changed) == 0 {
		s.r.Warn(fmt.Sprintf("update storage %s: PVE refused the update because storage.cfg had changed since it was read (detected modified configuration), and wrote nothing; read again, the storage already has every option asked — another write (most likely an earlier run's update whose answer was lost) made the change, so nothing was sent again", s.p.Storage))
		return nil
	}
	s.r.Warn(fmt.Sprintf("update storage %s: PVE refused the update because storage.cfg had changed since it was read (detected modified configuration), and wrote nothing; read again, only %s still differ, sent once with the fresh digest", s.p.Storage, strings.Join(changed, ", ")))
	err = s.put(ctx, again)
	if pveapi.IsModified(err) {
		return ansible.NothingChanged(fmt.Errorf("%w: storage.cfg keeps changing under this task; run it again", err))
	}
	return err
}

// put is one PUT of the storage, settled by reading the options back
// when its answer is lost.
func (s *storage) put(ctx context.Context, set url.Values) error {
	out, err := pveansible.Dispatch(ctx, s.r, s.c, pveapi.Write{
		Method: http.MethodPut, Path: s.path(), Params: set,
		What:   fmt.Sprintf("update storage %s", s.p.Storage),
		Settle: func(ctx context.Context) (bool, error) { return s.verify(ctx) == nil, nil },
	})
	if err == nil {
		s.generatedKey(out)
	}
	return err
}

// verify reads the storage back and checks every option the task gave.
func (s *storage) verify(ctx context.Context) error {
	cfg, err := s.read(ctx)
	if err != nil {
		return err
	}
	if cfg == nil {
		return fmt.Errorf("storage %s does not exist", s.p.Storage)
	}
	var wrong []string
	for _, key := range slices.Sorted(maps.Keys(s.want)) {
		if s.sensitive(key) {
			if msg := s.verifySecret(cfg, key); msg != "" {
				wrong = append(wrong, msg)
			}
			continue
		}
		if got := s.current(cfg, key); got != s.want[key] {
			if _, present := cfg[key]; s.want[key] == "" && !present {
				continue
			}
			wrong = append(wrong, fmt.Sprintf("%s is %q, not %q", optionName(key), got, s.want[key]))
		}
	}
	s.final = cfg
	if len(wrong) > 0 {
		return errors.New(strings.Join(wrong, "; "))
	}
	return nil
}

func (s *storage) planDelete(ctx context.Context, cfg map[string]any) ([]ansible.Change, error) {
	if !s.p.Force {
		if err := s.checkNoGuestVolumes(ctx, cfg); err != nil {
			return nil, err
		}
	}
	s.final = nil
	return []ansible.Change{{
		ID:      "storage:delete",
		Summary: fmt.Sprintf("remove storage %s", s.p.Storage),
		Diff:    ansible.TextDiff(cfgHeader, section(cfg), ""),
		Apply: func(ctx context.Context) error {
			_, err := pveansible.Dispatch(ctx, s.r, s.c, pveapi.Write{
				Method: http.MethodDelete, Path: s.path(),
				What: fmt.Sprintf("remove storage %s", s.p.Storage),
				Settle: func(ctx context.Context) (bool, error) {
					there, err := s.exists(ctx)
					return !there, err
				},
			})
			return err
		},
		Verify: func(ctx context.Context) error {
			cfg, err := s.read(ctx)
			if err != nil {
				return err
			}
			if cfg != nil {
				return fmt.Errorf("storage %s still exists", s.p.Storage)
			}
			return nil
		},
	}}, nil
}

type node struct {
	Node   string `json:"node"`
	Status string `json:"status"`
}

// nodesOf lists the cluster nodes the storage applies to.
func (s *storage) nodesOf(ctx context.Context, cfg map[string]any) ([]node, error) {
	var all []node
	if err := s.c.Get(ctx, "/nodes", nil, &all); err != nil {
		return nil, err
	}
	restrict := pveapi.SplitList(pveapi.String(cfg["nodes"]))
	var out []node
	for _, n := range all {
		if len(restrict) == 0 || slices.Contains(restrict, n.Node) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b node) int { return strings.Compare(a.Node, b.Node) })
	return out, nil
}

// keepMembers leaves out of the wanted nodes every name that is not a
// member of the cluster (GET /nodes lists the members, online or not), with
// a warning naming it: a node whose join failed, or that is still to join,
// must not end up in storage.cfg, where PVE would accept any name (issue 15
// item 7). The members are read only when the nodes would change, so a
// converged run keeps its two reads.
func (s *storage) keepMembers(ctx context.Context, cfg map[string]any) error {
	want := s.want["nodes"]
	if want == "" || (cfg != nil && normalise("nodes", pveapi.String(cfg["nodes"])) == want) {
		return nil
	}
	var all []node
	if err := s.c.Get(ctx, "/nodes", nil, &all); err != nil {
		return fmt.Errorf("nodes: cannot list the cluster's members to check them: %w", err)
	}
	members := make([]string, 0, len(all))
	for _, n := range all {
		members = append(members, n.Node)
	}
	slices.Sort(members)
	// A check run of the whole site predicts the joins in the cluster
	// phase's tasks, not here: a node that would have joined by the time a
	// real run reaches this task is not a member yet. Check mode assumes it
	// joins, and predicts it as given, only when created_earlier names it;
	// every other non-member is handled as a real run handles it: left
	// out, or, with no node left, refused.
	var keep, drop []string
	for _, n := range pveapi.SplitList(want) {
		switch {
		case slices.Contains(members, n):
			keep = append(keep, n)
		case s.r.Assume(ansible.Prerequisite{Option: "nodes", Kind: ansible.CreatedNode, Name: n,
			Object: "cluster node " + n, Predicts: "it in the storage's nodes",
			RealRun: fmt.Sprintf("leaves it out while it is not a member (the members now: %s), and fails when no node is left",
				strings.Join(members, ", "))}, nil):
			keep = append(keep, n)
		default:
			drop = append(drop, n)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	if len(keep) == 0 {
		return fmt.Errorf("nodes: none of %s is a member of the cluster (its members: %s); nothing was changed",
			strings.Join(drop, ", "), strings.Join(members, ", "))
	}
	s.r.Warn(fmt.Sprintf("nodes: %s left out of storage %s: not a member of the cluster (its members: %s); a later run adds it once it has joined",
		strings.Join(drop, ", "), s.p.Storage, strings.Join(members, ", ")))
	s.want["nodes"] = strings.Join(keep, ",")
	return nil
}

type volume struct {
	VolID string `json:"volid"`
	VMID  int    `json:"vmid"`
}

// checkNoGuestVolumes refuses the removal while any guest has a volume on
// the storage, on any node it applies to. A node that cannot be asked
// blocks the removal too: an unanswered question is not "no volumes".
func (s *storage) checkNoGuestVolumes(ctx context.Context, cfg map[string]any) error {
	nodes, err := s.nodesOf(ctx, cfg)
	if err != nil {
		return fmt.Errorf("cannot list the nodes to look for guest volumes on %s: %w (force: true removes it anyway)", s.p.Storage, err)
	}
	var used []string
	for _, n := range nodes {
		if n.Status != "" && n.Status != "online" {
			return fmt.Errorf("cannot look for guest volumes on %s: node %s is %s (force: true removes it anyway)", s.p.Storage, n.Node, n.Status)
		}
		var vols []volume
		if err := s.c.Get(ctx, pveapi.Path("/nodes/%s/storage/%s/content", n.Node, s.p.Storage), nil, &vols); err != nil {
			return fmt.Errorf("cannot look for guest volumes on %s on node %s: %w (force: true removes it anyway)", s.p.Storage, n.Node, err)
		}
		for _, v := range vols {
			if v.VMID > 0 {
				used = append(used, fmt.Sprintf("%s (guest %d, on %s)", v.VolID, v.VMID, n.Node))
			}
		}
	}
	if len(used) > 0 {
		more := ""
		if len(used) > 5 {
			more = fmt.Sprintf(" and %d more", len(used)-5)
			used = used[:5]
		}
		return fmt.Errorf("storage %s still holds guest volumes: %s%s; move or remove them first, or set force: true to remove only the definition", s.p.Storage, strings.Join(used, ", "), more)
	}
	// An empty answer only means "no volumes" if we were allowed to see them (K19).
	if err := s.c.RequireAny(ctx, "/storage/"+s.p.Storage, "Datastore.Audit", "Datastore.AllocateSpace"); err != nil {
		return fmt.Errorf("cannot tell whether guests have volumes on %s: %w", s.p.Storage, err)
	}
	return nil
}

const cfgHeader = "/etc/pve/storage.cfg"

// section renders a config the way storage.cfg shows it.
func section(cfg map[string]any) string {
	if cfg == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", pveapi.String(cfg["type"]), pveapi.String(cfg["storage"]))
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if k == "type" || k == "storage" || k == "digest" || !isMarker(k, cfg[k]) {
			continue
		}
		fmt.Fprintf(&b, "\t%s %s\n", k, pveapi.String(cfg[k]))
	}
	return b.String()
}

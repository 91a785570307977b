package storage

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

func createSchema(t *testing.T, version int) *pveschema.Method {
	t.Helper()
	s, err := pveschema.Load(version)
	if err != nil {
		t.Fatal(err)
	}
	return s.Method("POST", "/storage")
}

// What Render writes, Parse reads back with PVE's JSON types (integers and
// booleans as numbers, SectionConfig), in the same order: storage.cfg in
// /etc/pve is the lab's model of the storages.
func TestRenderParseRoundTrip(t *testing.T) {
	create := createSchema(t, 9)
	in := []*Section{
		{ID: "local", Type: "dir", Options: map[string]any{"path": "/var/lib/vz", "content": "backup,iso,vztmpl", "comment": "the node's"}},
		{ID: "tank", Type: "zfspool", Options: map[string]any{"pool": "tank/vm", "sparse": 1, "blocksize": "16k", "disable": 1, "nodes": "pve01,pve02"}},
		{ID: "nas", Type: "nfs", Options: map[string]any{"server": "192.0.2.5", "export": "/export", "path": "/mnt/pve/nas", "content": "images"}},
	}
	text := Render(in)
	// SectionConfig::write_config: comment, then the bare disable, then the
	// plugin's non-optional keys before the others.
	if !strings.Contains(text, "zfspool: tank\n\tdisable\n\tpool tank/vm\n\tblocksize 16k\n") {
		t.Errorf("zfspool section:\n%s", text)
	}
	if !strings.HasPrefix(text, "dir: local\n\tcomment the node's\n\tpath /var/lib/vz\n") {
		t.Errorf("dir section:\n%s", text)
	}
	got, order := Parse(text, create)
	if want := []string{"local", "tank", "nas"}; !reflect.DeepEqual(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	for _, st := range in {
		if !reflect.DeepEqual(got[st.ID], st) {
			t.Errorf("%s read back as %+v, want %+v", st.ID, got[st.ID], st)
		}
	}
}

// parse_config is lenient: comments and bad lines are skipped, a bare
// boolean flag is 1, an unknown type is kept, lists stay as written.
func TestParseLenient(t *testing.T) {
	text := "# made by hand\ndir: d\n\tpath /srv/d\n\tshared\n\tcontent iso,backup\nbad line\n\tpath /ignored\n\nrbd: ceph\n\tpool rbd\n\tkrbd 1\n"
	got, order := Parse(text, createSchema(t, 9))
	if !reflect.DeepEqual(order, []string{"d", "ceph"}) {
		t.Fatalf("order %v", order)
	}
	if d := got["d"]; d.Options["shared"] != 1 || d.Options["content"] != "iso,backup" || d.Options["path"] != "/srv/d" {
		t.Errorf("dir d: %+v", d.Options)
	}
	if c := got["ceph"]; c.Type != "rbd" || c.Opt("pool") != "rbd" {
		t.Errorf("unknown type: %+v", c)
	}
}

// Config.pm create's checks before the lock, each with PVE's message.
func TestCheckCreate(t *testing.T) {
	for _, tc := range []struct {
		name, typ string
		params    map[string]any
		err       string
		path      string
	}{
		{"unknown type", "rbd", map[string]any{"pool": "x"}, "storage type 'rbd' is not simulated by the lab", ""},
		{"foreign option", "dir", map[string]any{"path": "/srv/a", "pool": "x"}, "unexpected property 'pool'", ""},
		{"content", "nfs", map[string]any{"server": "s", "export": "/e", "content": "none"}, "storage does not support content type 'none'", ""},
		{"required", "lvmthin", map[string]any{"vgname": "pve"}, "missing value for required option 'thinpool'", ""},
		{"dir path", "dir", map[string]any{"path": "srv/a"}, "illegal path for directory storage: srv/a", ""},
		{"canonpath", "dir", map[string]any{"path": "/srv//a/./"}, "", "/srv/a"},
		{"nfs default path", "nfs", map[string]any{"server": "s", "export": "/e"}, "", "/mnt/pve/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := CheckCreate(9, "x", tc.typ, tc.params)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.params["path"] != tc.path {
				t.Errorf("path %v, want %s", tc.params["path"], tc.path)
			}
		})
	}
}

// extract_sensitive_params: a pbs password leaves the parameters (never in
// storage.cfg), a deleted one is a nil entry.
func TestSensitiveLeaveParams(t *testing.T) {
	params := map[string]any{"server": "192.0.2.50", "datastore": "store1", "password": "pw", "username": "backup@pbs"}
	sens, err := CheckCreate(9, "pbs1", "pbs", params)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := params["password"]; ok || sens["password"] == nil || *sens["password"] != "pw" {
		t.Errorf("params %v, sensitive %v", params, sens)
	}
	st := NewSection("pbs1", "pbs", params, createSchema(t, 9))
	_, _, sens, err = CheckUpdate(9, st, map[string]any{"delete": "password,encryption-key"}, createSchema(t, 9))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := sens["password"]; !ok || p != nil {
		t.Errorf("deleted password: %v", sens)
	}
}

// Config.pm update: fixed keys refused even unchanged, required ones not
// deletable, nothing set and deleted at once; the rest typed and applied.
func TestCheckUpdate(t *testing.T) {
	create := createSchema(t, 9)
	st := &Section{ID: "d", Type: "dir", Options: map[string]any{"path": "/srv/d", "content": "iso", "shared": 1}}
	for params, want := range map[string]string{
		"path=/srv/d":                 "can't change value of fixed parameter 'path'",
		"pool=x":                      "unexpected property 'pool'",
		"delete=content&content=iso":  "cannot set and delete property 'content' at the same time!",
		"delete=path":                 "cannot delete required option 'path'",
		"content=iso,bogus":           "storage does not support content type 'bogus'",
		"delete=shared&digest=abc&mk": "unexpected property 'mk'",
	} {
		p := map[string]any{}
		for _, kv := range strings.Split(params, "&") {
			k, v, _ := strings.Cut(kv, "=")
			p[k] = v
		}
		if _, _, _, err := CheckUpdate(9, st, p, create); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", params, err, want)
		}
	}
	update, deletes, _, err := CheckUpdate(9, st, map[string]any{"delete": "shared", "content": "vztmpl,iso", "digest": "x"}, create)
	if err != nil {
		t.Fatal(err)
	}
	st.Apply(update, deletes)
	if want := map[string]any{"path": "/srv/d", "content": "iso,vztmpl"}; !reflect.DeepEqual(st.Options, want) {
		t.Errorf("after update %v, want %v", st.Options, want)
	}
}

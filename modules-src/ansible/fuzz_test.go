package ansible

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fuzzModules have specs with every type, aliases, choices, constraints
// and nested options, so random args files reach every validation path.
func fuzzModules() []Module {
	spec := Spec{
		Options: map[string]Option{
			"name":   {Type: TypeStr, Required: true, Aliases: []string{"nm"}},
			"count":  {Type: TypeInt, Choices: []any{1, 2, 3}},
			"ratio":  {Type: TypeFloat},
			"flag":   {Type: TypeBool, Default: true},
			"items":  {Type: TypeList, Elements: TypeInt},
			"labels": {Type: TypeDict},
			"path":   {Type: TypePath},
			"raw":    {Type: TypeRaw},
			"secret": {Type: TypeStr, NoLog: true, EnvFallback: []string{"FUZZ_SECRET"}},
			"disks": {Type: TypeList, Elements: TypeDict, Options: map[string]Option{
				"size": {Type: TypeInt, Required: true},
				"kind": {Type: TypeStr, Choices: []any{"ssd", "hdd"}, Aliases: []string{"k"}},
				"sub":  {Type: TypeDict, ApplyDefaults: true, Options: map[string]Option{"x": {Type: TypeBool, Default: false}}},
			}, Constraints: Constraints{MutuallyExclusive: [][]string{{"kind", "sub"}}}},
		},
		Constraints: Constraints{
			MutuallyExclusive: [][]string{{"ratio", "raw"}},
			RequiredTogether:  [][]string{{"path", "labels"}},
			RequiredIf:        []RequiredIf{{Key: "flag", Value: false, Requirements: []string{"count", "items"}, Any: true}},
			RequiredBy:        map[string][]string{"secret": {"name"}},
		},
	}
	echo := func(r *Run) error {
		var anyParams map[string]any
		if err := r.Decode(&anyParams); err != nil {
			return err
		}
		r.Set("echo", r.Params())
		r.Log(0, "params %v", r.Params())
		return r.Stage("s", func(context.Context, *World) ([]Change, error) {
			return []Change{{ID: "c", Summary: "change", Diff: TextDiff("f", "", r.inv.ModuleName),
				Apply: func(context.Context) error { return nil }, Verify: func(context.Context) error { return nil }}}, nil
		})
	}
	return []Module{{Name: "fuzz", Spec: spec, Run: echo}}
}

// FuzzMain: no args-file content may make the entry point panic or print
// anything but exactly one JSON object. `go test` runs the seed corpus;
// `go test -fuzz=FuzzMain ./modules-src/ansible` explores.
func FuzzMain(f *testing.F) {
	for _, seed := range []string{
		args214, args221, `{}`, `[]`, `null`, `"x"`, `{"name": "x"}`, `{"_gopve_module": "fuzz", "name": "a"}`,
		`{"_gopve_module": 5}`, `{"_ansible_check_mode": "maybe"}`, `{"_ansible_verbosity": [1]}`,
		`{"_gopve_module": "fuzz", "nm": 1, "count": "2", "ratio": "1e400", "items": "1,2,x", "labels": "a=1 b"}`,
		`{"_gopve_module": "fuzz", "name": "s", "disks": [{"size": "1", "k": "ssd", "sub": null}, "size=2", 7, null]}`,
		`{"_gopve_module": "fuzz", "name": "s", "disks": {"size": 1}, "secret": "s", "flag": "no"}`,
		`{"_gopve_module": "fuzz", "name": "x", "path": "~nobody/$HOME/${X", "raw": 1, "ratio": 2}`,
		`{"_gopve_module": "fuzz", "name": 1e308, "count": 9223372036854775808, "ratio": -0.0}`,
		`{"_gopve_module": "fuzz", "name": "\u0000\ud800", "secret": "a"}`,
		`{"_ansible_inject_invocation": false, "_gopve_module": "fuzz", "name": "n", "_ansible_ignore_unknown_opts": true, "zz": 1}`,
		"{\"name\": \"x\"} trailing", "\xff\xfe", "",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	mods := fuzzModules()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "args")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		p := &printer{w: &out}
		env := func(k string) (string, bool) {
			if k == "FUZZ_SECRET" {
				return "env-secret", true
			}
			return "", false
		}
		mainWith(context.Background(), mods, []string{"/x/fuzz", path}, env, io.Discard, p, time.Second, func(int) {})
		b := out.Bytes()
		if !bytes.HasPrefix(b, []byte("{")) || !bytes.HasSuffix(b, []byte("}\n")) || bytes.Count(b, []byte("\n")) != 1 {
			t.Fatalf("not exactly one JSON object line: %q", b)
		}
		var res map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		if err := dec.Decode(&res); err != nil || dec.More() {
			t.Fatalf("bad JSON %v: %q", err, b)
		}
		if _, ok := res["changed"].(bool); !ok {
			t.Fatalf("no boolean changed: %q", b)
		}
		if failed, ok := res["failed"]; ok && failed != true {
			t.Fatalf("failed present but not true: %q", b)
		}
		if res["failed"] == true {
			if msg, _ := res["msg"].(string); msg == "" {
				t.Fatalf("failed without msg: %q", b)
			}
		}
		if bytes.Contains(b, []byte("env-secret")) {
			t.Fatalf("fallback secret leaked: %q", b)
		}
	})
}

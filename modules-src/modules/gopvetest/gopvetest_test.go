//go:build gopve_testmodule

package gopvetest

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
)

// The file life cycle through the real driver: check mode predicts and
// writes nothing, the real run matches the prediction, a second run is a
// no-op, sabotage is caught by verify.
func TestFileLifecycle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.txt")
	m := Module()
	env := func(k string) (string, bool) { return os.LookupEnv(k) }
	steps := []struct {
		name        string
		params      map[string]any
		check       bool
		wantChanged bool
		wantFailed  bool
		wantFile    string // "" = absent
		wantMsg     string
	}{
		{"check mode create", map[string]any{"content": "a\n"}, true, true, false, "", ""},
		{"create", map[string]any{"content": "a\n"}, false, true, false, "a\n", ""},
		{"idempotent", map[string]any{"content": "a\n"}, false, false, false, "a\n", ""},
		{"check mode rewrite", map[string]any{"content": "b\n"}, true, true, false, "a\n", ""},
		{"sabotaged rewrite fails verify (the file changed all the same)", map[string]any{"content": "b\n", "break_verify": true}, false, true, true, "b\nsabotaged\n", `holds "b\nsabotaged\n", expected "b\n"`},
		{"check mode remove", map[string]any{"state": "absent"}, true, true, false, "b\nsabotaged\n", ""},
		{"remove", map[string]any{"state": "absent"}, false, true, false, "", ""},
		{"remove again", map[string]any{"state": "absent"}, false, false, false, "", ""},
	}
	for _, s := range steps {
		params := map[string]any{"name": "t", "path": path}
		for k, v := range s.params {
			params[k] = v
		}
		res := ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: params, CheckMode: s.check, Diff: true}, env, io.Discard)
		if (res["failed"] == true) != s.wantFailed || res["changed"] != s.wantChanged {
			t.Fatalf("%s: result %v", s.name, res)
		}
		if msg, _ := res["msg"].(string); !strings.Contains(msg, s.wantMsg) {
			t.Errorf("%s: msg %q lacks %q", s.name, msg, s.wantMsg)
		}
		data, err := os.ReadFile(path)
		if s.wantFile == "" && err == nil || s.wantFile != "" && string(data) != s.wantFile {
			t.Fatalf("%s: file = %q (err %v), want %q", s.name, data, err, s.wantFile)
		}
	}
}

func TestFactsAndMasking(t *testing.T) {
	m := Module()
	env := func(k string) (string, bool) {
		switch k {
		case "GOPVE_TEST_SECRET":
			return "from-env-secret", true
		case "GOPVE_TEST_ENV":
			return "probe", true
		}
		return "", false
	}
	t.Setenv("GOPVE_TEST_ENV", "probe")
	res := ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: map[string]any{"name": "n", "count": "5", "flag": "on"}}, env, io.Discard)
	facts := res["facts"].(map[string]any)
	echo := facts["echo"].(map[string]any)
	if echo["count"] != 5 || echo["flag"] != true || echo["secret"] != "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" {
		t.Errorf("echo = %v", echo)
	}
	if facts["env_probe"] != "probe" || facts["euid"] != os.Geteuid() {
		t.Errorf("facts = %v", facts)
	}
	if res["msg"] != "gopve_test ran for n; secret is ********" {
		t.Errorf("msg = %v", res["msg"])
	}
}

package pvestorage

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

// TestLocalModeRefusesSecrets: in local mode every API call is a pvesh
// command line, readable by any user of the node, so a task giving a
// secret fails before any request, naming the option and the way out,
// never showing the secret; without a secret local mode runs.
func TestLocalModeRefusesSecrets(t *testing.T) {
	const secret = "pbs-Pa55word"
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	pvesh := filepath.Join(dir, "pvesh")
	// a stand-in recording its command line; it answers nothing useful
	script := "#!/bin/sh\necho \"$*\" >> " + calls + "\necho 'no such API' >&2\nexit 1\n"
	if err := os.WriteFile(pvesh, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(args map[string]any) map[string]any {
		m := New(pveapi.Options{Pvesh: pvesh, LocalAllowed: func() bool { return true }, Retry: &pveapi.RetryPolicy{}})
		env := func(string) (string, bool) { return "", false }
		return ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: args}, env, io.Discard)
	}
	for option, args := range map[string]map[string]any{
		"password":       {"storage": "backup", "type": "pbs", "server": "10.0.0.5", "datastore": "main", "username": "backup@pbs", "password": secret},
		"encryption_key": {"storage": "backup", "type": "pbs", "server": "10.0.0.5", "datastore": "main", "encryption_key": `{"kdf": null, "data": "` + secret + `"}`},
		"cifs password":  {"storage": "share", "type": "cifs", "server": "10.0.0.6", "share": "vm", "password": secret},
	} {
		res := run(args)
		msg, _ := res["msg"].(string)
		name := strings.Fields(option)[len(strings.Fields(option))-1]
		if !failed(res) || res["changed"] != false || !strings.HasPrefix(msg, name+": a secret is never sent in local mode") || !strings.Contains(msg, "api_host") {
			t.Errorf("%s: %v", option, res)
		}
		if strings.Contains(msg, secret) {
			t.Errorf("%s: the message shows the secret", option)
		}
		if b, err := os.ReadFile(calls); err == nil {
			t.Fatalf("%s: pvesh ran (%q): the refusal must come before any request", option, b)
		}
	}
	// the same storage without a secret goes to pvesh: local mode itself works
	res := run(map[string]any{"storage": "backup", "type": "pbs", "server": "10.0.0.5", "datastore": "main"})
	b, _ := os.ReadFile(calls)
	if !failed(res) || !strings.HasPrefix(string(b), "get /version") {
		t.Errorf("without a secret: pvesh calls %q, result %v", b, res["msg"])
	}
}

package hamanager

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

// fakeAPI records the calls ha-manager makes and fails with err when set.
type fakeAPI struct {
	calls []string
	err   error
}

func (f *fakeAPI) Call(_ context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	f.calls = append(f.calls, method+" "+path+" "+params.Encode())
	return json.RawMessage("null"), f.err
}

func run(api *fakeAPI, args ...string) (int, string) {
	var out, errb bytes.Buffer
	t := &Tool{Env: &cli.Env{Args: args, Stdout: &out, Stderr: &errb}, API: api}
	return t.Run(), errb.String()
}

// The write commands are API calls with the options as parameters; wrong
// arity and API errors end 255 with the message on stderr.
func TestWriteCommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		call string
	}{
		{[]string{"add", "vm:100", "--state", "started"}, "POST /cluster/ha/resources sid=vm%3A100&state=started"},
		{[]string{"set", "vm:100", "--max_relocate", "2"}, "PUT /cluster/ha/resources/vm:100 max_relocate=2"},
		{[]string{"remove", "vm:100", "--purge"}, "DELETE /cluster/ha/resources/vm:100 purge=1"},
		{[]string{"groupadd", "g1", "--nodes", "pve01"}, "POST /cluster/ha/groups group=g1&nodes=pve01"},
		{[]string{"groupset", "g1", "--restricted", "1"}, "PUT /cluster/ha/groups/g1 restricted=1"},
		{[]string{"groupremove", "g1"}, "DELETE /cluster/ha/groups/g1 "},
		{[]string{"rules", "add", "node-affinity", "r1", "--resources", "vm:100"}, "POST /cluster/ha/rules resources=vm%3A100&rule=r1&type=node-affinity"},
		{[]string{"rules", "set", "node-affinity", "r1", "--strict", "1"}, "PUT /cluster/ha/rules/r1 strict=1&type=node-affinity"},
		{[]string{"rules", "remove", "r1"}, "DELETE /cluster/ha/rules/r1 "},
		{[]string{"crm-command", "stop", "vm:100", "0"}, "PUT /cluster/ha/resources/vm:100 state=stopped"},
	} {
		api := &fakeAPI{}
		if code, stderr := run(api, c.args...); code != 0 || stderr != "" || len(api.calls) != 1 || api.calls[0] != c.call {
			t.Errorf("%v: exit %d, stderr %q, calls %q; want %q", c.args, code, stderr, api.calls, c.call)
		}
		api = &fakeAPI{err: errors.New("500 no such resource 'vm:100'")}
		if code, stderr := run(api, c.args...); code != 255 || stderr != "500 no such resource 'vm:100'\n" {
			t.Errorf("%v with an API error: exit %d, stderr %q", c.args, code, stderr)
		}
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{nil, "ERROR: no command specified\n" + usage},
		{[]string{"add"}, "400 wrong number of arguments\nha-manager add <sid> [OPTIONS]\n"},
		{[]string{"groupremove", "a", "b"}, "400 wrong number of arguments\nha-manager groupremove <group>\n"},
		{[]string{"rules", "remove"}, "400 wrong number of arguments\nha-manager rules remove <rule>\n"},
		{[]string{"rules"}, "ERROR: no command specified\n" + usage},
		{[]string{"crm-command", "migrate"}, "ERROR: crm-command: only 'stop' is simulated by the lab\n"},
	} {
		api := &fakeAPI{}
		if code, stderr := run(api, c.args...); code != 255 || stderr != c.stderr || len(api.calls) != 0 {
			t.Errorf("%v: exit %d, stderr %q, calls %q; want 255 %q", c.args, code, stderr, api.calls, c.stderr)
		}
	}
}

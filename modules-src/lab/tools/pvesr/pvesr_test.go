package pvesr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

// fakeAPI records the calls pvesr makes and fails with err when set.
type fakeAPI struct {
	calls []string
	err   error
}

func (f *fakeAPI) Call(_ context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	f.calls = append(f.calls, method+" "+path+" "+params.Encode())
	return json.RawMessage(`{"id":"100-0","guest":100,"target":"pve02","type":"local"}`), f.err
}

func run(api *fakeAPI, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	t := &Tool{Env: &cli.Env{Args: args, Stdout: &out, Stderr: &errb}, Node: "pve01", API: api}
	return t.Run(), out.String(), errb.String()
}

// The job commands are API calls with the options as parameters; wrong
// arity and API errors end 255 with the message on stderr.
func TestJobCommands(t *testing.T) {
	for _, c := range []struct {
		args         []string
		call, stderr string
	}{
		{[]string{"create-local-job", "100-0", "pve02", "--schedule", "*/5"}, "POST /cluster/replication id=100-0&schedule=%2A%2F5&target=pve02&type=local", ""},
		{[]string{"update", "100-0", "--rate", "10"}, "PUT /cluster/replication/100-0 rate=10", ""},
		{[]string{"delete", "100-0"}, "DELETE /cluster/replication/100-0 ", "Replication job removal is a background task and will take some time.\n"},
		{[]string{"delete", "100-0", "--force"}, "DELETE /cluster/replication/100-0 force=1", ""},
		{[]string{"schedule-now", "100-0"}, "POST /nodes/pve01/replication/100-0/schedule_now ", ""},
		{[]string{"read", "100-0"}, "GET /cluster/replication/100-0 ", ""},
	} {
		api := &fakeAPI{}
		if code, _, stderr := run(api, c.args...); code != 0 || stderr != c.stderr || len(api.calls) != 1 || api.calls[0] != c.call {
			t.Errorf("%v: exit %d, stderr %q, calls %q; want %q", c.args, code, stderr, api.calls, c.call)
		}
		api = &fakeAPI{err: errors.New("500 no such job")}
		if code, _, stderr := run(api, c.args...); code != 255 || stderr != "500 no such job\n" {
			t.Errorf("%v with an API error: exit %d, stderr %q", c.args, code, stderr)
		}
	}
	if _, out, _ := run(&fakeAPI{}, "read", "100-0"); out == "" {
		t.Error("read printed nothing")
	}
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{nil, "ERROR: no command specified\n" + usage},
		{[]string{"create-local-job", "100-0"}, "400 wrong number of arguments\npvesr create-local-job <id> <target> [OPTIONS]\n"},
		{[]string{"update"}, "400 wrong number of arguments\npvesr update <id> [OPTIONS]\n"},
		{[]string{"read", "a", "b"}, "400 wrong number of arguments\npvesr read <id>\n"},
		{[]string{"frob"}, "ERROR: unknown command 'pvesr frob'\n" + usage},
	} {
		api := &fakeAPI{}
		if code, _, stderr := run(api, c.args...); code != 255 || stderr != c.stderr || len(api.calls) != 0 {
			t.Errorf("%v: exit %d, stderr %q, calls %q; want 255 %q", c.args, code, stderr, api.calls, c.stderr)
		}
	}
}

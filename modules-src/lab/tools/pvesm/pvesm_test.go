package pvesm

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/tools/cli"
)

type fakeAPI struct {
	data   string
	method string
	path   string
	params url.Values
}

func (f *fakeAPI) Call(_ context.Context, method, path string, params url.Values) (json.RawMessage, error) {
	f.method, f.path, f.params = method, path, params
	return json.RawMessage(f.data), nil
}

// The seed's `pvesm status` on pve02, byte for byte (sizes in bytes from the API).
func TestStatusMatchesSeed(t *testing.T) {
	api := &fakeAPI{data: `[
	 {"storage":"nvme-vm","type":"zfspool","active":1,"enabled":1,"total":495264219136,"used":12182331392,"avail":483081887744},
	 {"storage":"local","type":"dir","active":1,"enabled":1,"total":105089261568,"used":12776427520,"avail":86927347712}]`}
	var out bytes.Buffer
	code := (&Tool{Env: &cli.Env{Args: []string{"status"}, Stdout: &out, Stderr: &out}, Node: "pve02", API: api}).Run()
	want := "Name           Type     Status     Total (KiB)      Used (KiB) Available (KiB)        %\n" +
		"local           dir     active       102626232        12476980        84889988   12.16%\n" +
		"nvme-vm     zfspool     active       483656464        11896808       471759656    2.46%\n"
	if code != 0 || out.String() != want {
		t.Fatalf("exit %d\n%s\nwant\n%s", code, out.String(), want)
	}
	if api.method != "GET" || api.path != "/nodes/pve02/storage" {
		t.Errorf("called %s %s", api.method, api.path)
	}
}

// S4 and S2 map onto the API calls real pvesm makes.
func TestWritesCallTheAPI(t *testing.T) {
	for _, tc := range []struct {
		args         []string
		method, path string
		params       url.Values
	}{
		{[]string{"set", "local", "--content", "iso,vztmpl,backup,import,snippets"}, "PUT", "/storage/local",
			url.Values{"content": {"iso,vztmpl,backup,import,snippets"}}},
		{[]string{"add", "zfspool", "nvme-vm", "--pool", "nvme-vm", "--sparse", "1", "--nodes", "a,b"}, "POST", "/storage",
			url.Values{"type": {"zfspool"}, "storage": {"nvme-vm"}, "pool": {"nvme-vm"}, "sparse": {"1"}, "nodes": {"a,b"}}},
		{[]string{"remove", "nvme-vm"}, "DELETE", "/storage/nvme-vm", url.Values{}},
	} {
		api := &fakeAPI{data: "null"}
		var out bytes.Buffer
		code := (&Tool{Env: &cli.Env{Args: tc.args, Stdout: &out, Stderr: &out}, Node: "pve01", API: api}).Run()
		if code != 0 || api.method != tc.method || api.path != tc.path || api.params.Encode() != tc.params.Encode() {
			t.Errorf("%v: exit %d, called %s %s %v", tc.args, code, api.method, api.path, api.params)
		}
	}
}

func TestStatusUnknownStorageFails(t *testing.T) {
	var out bytes.Buffer
	code := (&Tool{Env: &cli.Env{Args: []string{"status", "--storage", "nope"}, Stdout: &out, Stderr: &out}, Node: "pve01",
		API: &fakeAPI{data: "[]"}}).Run()
	if code == 0 {
		t.Fatalf("pvesm status --storage nope exited 0: %s", out.String())
	}
}

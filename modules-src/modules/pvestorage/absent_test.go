package pvestorage

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/pveapi"
)

// The simulator has no guests yet, so the volume check runs against a fake
// node that answers like PVE: two nodes, a VM disk on pve02.
func TestAbsentRefusesWhileGuestsHaveVolumes(t *testing.T) {
	var mu sync.Mutex
	deleted := false
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		data := any(nil)
		switch p := strings.TrimPrefix(r.URL.Path, "/api2/json"); {
		case p == "/version":
			data = map[string]any{"version": "9.2.5", "release": "9.2"}
		case p == "/storage/tank" && r.Method == "GET":
			if deleted {
				w.WriteHeader(500)
				json.NewEncoder(w).Encode(map[string]any{"data": nil, "message": "storage 'tank' does not exist\n"})
				return
			}
			data = map[string]any{"storage": "tank", "type": "zfspool", "pool": "tank", "digest": "abc"}
		case p == "/storage/tank" && r.Method == "DELETE":
			deleted = true
		case p == "/nodes":
			data = []any{map[string]any{"node": "pve01", "status": "online"}, map[string]any{"node": "pve02", "status": "online"}}
		case p == "/nodes/pve02/storage/tank/content":
			data = []any{map[string]any{"volid": "tank:vm-101-disk-0", "vmid": "101", "content": "images"}}
		case strings.HasSuffix(p, "/content"):
			data = []any{}
		default:
			w.WriteHeader(501)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	hc := srv.Client()
	run := func(force, check bool) map[string]any {
		m := New(pveapi.Options{HTTPClient: hc})
		params := map[string]any{"storage": "tank", "state": "absent", "force": force,
			"api_host": u.Hostname(), "api_port": port, "api_token_id": "root@pam!ci", "api_token_secret": "x"}
		return ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: params, CheckMode: check}, func(string) (string, bool) { return "", false }, io.Discard)
	}
	res := run(false, false)
	if !failed(res) || !strings.Contains(res["msg"].(string), "tank:vm-101-disk-0 (guest 101, on pve02)") || deleted {
		t.Fatalf("absent with a guest volume: %v (deleted %v)", res["msg"], deleted)
	}
	if res := run(true, true); failed(res) || res["changed"] != true || deleted {
		t.Fatalf("force, check mode: %v", res["msg"])
	}
	if res := run(true, false); failed(res) || res["changed"] != true || !deleted {
		t.Fatalf("force: %v", res["msg"])
	}
}

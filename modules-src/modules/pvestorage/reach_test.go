package pvestorage

import (
	"net"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
)

// Issue 15 item 9: an API that cannot be reached fails naming the option to
// fix (api_host, api_port), with nothing sent.
func TestUnreachableNamesTheOption(t *testing.T) {
	w := newWorld(t, 9)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	for _, c := range []struct {
		conn map[string]any
		want []string
	}{
		{map[string]any{"api_host": "gopve-nowhere.invalid"}, []string{`api_host "gopve-nowhere.invalid" cannot be resolved`}},
		{map[string]any{"api_host": "127.0.0.1", "api_port": closed}, []string{`api_host "127.0.0.1", api_port`, "nothing accepts connections"}},
		{map[string]any{"api_host": "gopve-nowhere.invalid", "api_user": "root@pam", "api_password": "x", "api_token_id": nil, "api_token_secret": nil},
			[]string{`api_host "gopve-nowhere.invalid" cannot be resolved`}},
	} {
		saved := map[string]any{}
		for k, v := range w.conn {
			saved[k] = v
		}
		for k, v := range c.conn {
			if v == nil {
				delete(w.conn, k)
			} else {
				w.conn[k] = v
			}
		}
		w.sim.ResetRequests()
		res := w.run(zfsArgs(), false)
		w.conn = saved
		msg, _ := res["msg"].(string)
		t.Logf("%v: %s", c.conn, msg)
		for _, want := range c.want {
			if !failed(res) || !strings.Contains(msg, want) || res["changed"] != false {
				t.Errorf("%v: changed=%v %q, want %q", c.conn, res["changed"], msg, want)
			}
		}
		if len(pveapitest.Mutating(w.sim)) != 0 {
			t.Errorf("%v: writes %v", c.conn, pveapitest.Mutating(w.sim))
		}
	}
}

package qemu

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// canned answers a Get with a fixed JSON `data`, decoded as the client does.
type canned map[string]string

func (c canned) Get(_ context.Context, path string, params url.Values, out any) error {
	key := path
	if len(params) > 0 {
		key += "?" + params.Encode()
	}
	raw, ok := c[key]
	if !ok {
		return &pveapi.Error{Method: "GET", Path: path, Status: 404, Message: "no canned answer for " + key}
	}
	return pveapi.Decode(json.RawMessage(raw), out)
}

// TestGetPendingRows: the rows of config_with_pending_array as PVE sends
// them — numbers as numbers, the digest as a row, a forced delete as 2,
// cipassword masked — decode into live and next.
func TestGetPendingRows(t *testing.T) {
	g := canned{"/nodes/pve01/qemu/201/pending": `[
		{"key":"digest","value":"5f1e"},
		{"key":"cores","value":2,"pending":4},
		{"key":"net1","value":"virtio=BC:24:11:2A:3B:4D,bridge=vmbr0","delete":2},
		{"key":"cipassword","value":"**********","pending":"********** "},
		{"key":"ipconfig1","pending":"ip=dhcp"}]`,
		"/nodes/pve01/qemu/201/config?current=1": `{"cores":2,"digest":"5f1e","name":"web-1","onboot":1}`}
	p, err := GetPending(context.Background(), g, "pve01", 201)
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != "5f1e" || len(p.Items) != 4 {
		t.Fatalf("%+v", p)
	}
	live, next := p.Live().Values, p.Next().Values
	if live["cores"] != "2" || next["cores"] != "4" || live["net1"] == "" || next["net1"] != "" || next["ipconfig1"] != "ip=dhcp" ||
		live["cipassword"] != Masked {
		t.Errorf("live %v next %v", live, next)
	}
	for _, it := range p.Items {
		if it.Key == "net1" && it.Delete != 2 {
			t.Errorf("forced delete %+v", it)
		}
	}
	c, err := GetConfig(context.Background(), g, "pve01", 201, true)
	if err != nil || c.Digest != "5f1e" || c.Values["onboot"] != "1" || c.Values["cores"] != "2" {
		t.Errorf("current=1: %+v %v", c, err)
	}
}

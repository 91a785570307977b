package ha

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

type canned map[string]string

func (c canned) Get(_ context.Context, path string, _ url.Values, out any) error {
	raw, ok := c[path]
	if !ok {
		return &pveapi.Error{Method: "GET", Path: path, Status: 500, Message: "cannot index groups: ha groups have been migrated to rules"}
	}
	return pveapi.Decode(json.RawMessage(raw), out)
}

// TestDecodeAnswers: the answers as pve-ha-manager's API writes them
// (numbers, 0/1 booleans, the rule's order and feasibility errors) decode
// into the typed values.
func TestDecodeAnswers(t *testing.T) {
	g := canned{
		"/cluster/ha/resources": `[{"sid":"vm:201","type":"vm","state":"started","max_restart":2,"failback":0,"digest":"d"},
			{"sid":"ct:200","type":"ct","comment":"runner","digest":"d"}]`,
		"/cluster/ha/rules": `[{"rule":"b","type":"resource-affinity","resources":"vm:202,vm:201","affinity":"negative","order":2,
			"errors":{"resources":"rule defines more resources than available nodes"},"digest":"r"},
			{"rule":"a","type":"node-affinity","resources":"vm:201","nodes":"pve02:1,pve01:2","strict":1,"order":1,"digest":"r"}]`,
	}
	res, err := Resources(context.Background(), g)
	if err != nil || len(res) != 2 || res[0].SID.String() != "ct:200" || res[1].MaxRestart == nil || *res[1].MaxRestart != 2 ||
		res[1].Failback == nil || *res[1].Failback || res[0].MaxRestart != nil {
		t.Fatalf("%+v %v", res, err)
	}
	rules, err := Rules(context.Background(), g)
	if err != nil || len(rules) != 2 || rules[0].ID != "a" || !rules[0].Strict || rules[0].Nodes.String() != "pve01:2,pve02:1" ||
		rules[1].Resources[0].String() != "vm:201" || rules[1].Errors["resources"] == "" {
		t.Fatalf("%+v %v", rules, err)
	}
	// PVE 9 with no groups left: the groups read fails, and that means rules.
	if m, err := Detect(context.Background(), g, 9); err != nil || m != UseRules {
		t.Errorf("detect %s %v", m, err)
	}
	if m, _ := Detect(context.Background(), g, 8); m != UseGroups {
		t.Errorf("PVE 8: %s", m)
	}
}

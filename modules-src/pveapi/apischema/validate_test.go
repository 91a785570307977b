package apischema

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	cfg := "/nodes/{node}/qemu/{vmid}/config"
	for _, tc := range []struct {
		name    string
		version int
		req     Request
		param   string // "" = valid
		msg     string
	}{
		{"good NIC and disk", 9, New("PUT", cfg, url.Values{"net0": {"virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,tag=10,firewall=1"},
			"scsi0": {"local-lvm:vm-201-disk-0,iothread=1,discard=on,size=32G"}, "cores": {"4"}, "digest": {"abc"}}, "pve01", "201"), "", ""},
		{"NIC key PVE does not know (issue 17)", 9, New("PUT", cfg, url.Values{"net0": {"virtio,bridge=vmbr0,colour=blue"}}, "pve01", "201"),
			"net0", "invalid key in comma-separated list property: colour"},
		{"VLAN tag out of range", 8, New("PUT", cfg, url.Values{"net1": {"virtio,bridge=vmbr0,tag=4095"}}, "pve01", "201"),
			"net1", "value must have a maximum value of 4094"},
		{"NIC model unknown", 9, New("PUT", cfg, url.Values{"net0": {"virtio2,bridge=vmbr0"}}, "pve01", "201"),
			"net0", "does not have a value in the enumeration"},
		{"disk size PVE cannot parse (issue 17)", 9, New("PUT", cfg, url.Values{"scsi1": {"local-lvm:vm-201-disk-1,size=10GB"}}, "pve01", "201"),
			"scsi1", "value does not look like a valid disk size: 10GB"},
		{"malformed ipconfig0 (issue 17)", 9, New("PUT", cfg, url.Values{"ipconfig0": {"ip=10.0.0.5,gw=10.0.0.1"}}, "pve01", "201"),
			"ipconfig0", "valid ipv4 network configuration"},
		{"ipconfig index beyond net31", 9, New("PUT", cfg, url.Values{"ipconfig32": {"ip=dhcp"}}, "pve01", "201"),
			"ipconfig32", "property is not defined in schema"},
		{"leading zero index", 9, New("PUT", cfg, url.Values{"net01": {"virtio"}}, "pve01", "201"), "net01", "not defined"},
		{"cores is an integer", 8, New("PUT", cfg, url.Values{"cores": {"four"}}, "pve01", "201"), "cores", "type check ('integer') failed"},
		{"sshkeys must be URL-encoded (K12)", 9, New("PUT", cfg, url.Values{"sshkeys": {"ssh-ed25519 AAAA"}}, "pve01", "201"),
			"sshkeys", "invalid urlencoded string"},
		{"boot order", 9, New("PUT", cfg, url.Values{"boot": {"order=scsi0;ide2;net0"}}, "pve01", "201"), "", ""},
		{"boot legacy pattern", 9, New("PUT", cfg, url.Values{"boot": {"xyz"}}, "pve01", "201"), "boot", "regex pattern"},
		{"delete a key that exists", 9, New("PUT", cfg, url.Values{"delete": {"net1,scsi2"}}, "pve01", "201"), "", ""},
		{"delete a key that does not", 9, New("PUT", cfg, url.Values{"delete": {"nett1"}}, "pve01", "201"), "delete", "unknown option 'nett1'"},
		{"bad node in path", 9, New("PUT", cfg, url.Values{"cores": {"2"}}, "-bad", "201"), "node", "valid node name"},
		{"HA failback on PVE 9", 9, New("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:201"}, "failback": {"0"}}), "", ""},
		{"HA failback on PVE 8 (version gate)", 8, New("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:201"}, "failback": {"0"}}),
			"failback", "not defined"},
		{"ACL delete is a boolean, not a key list", 9, New("PUT", "/access/acl", url.Values{"path": {"/vms"}, "roles": {"PVEAuditor"}, "users": {"a@pve"}, "delete": {"1"}}), "", ""},
		{"user email-opt", 9, New("POST", "/access/users", url.Values{"userid": {"a@pve"}, "email": {"a at example"}}), "email", "valid email"},
		{"user email-opt empty", 8, New("POST", "/access/users", url.Values{"userid": {"a@pve"}, "email": {""}}), "", ""},
		{"HA state enum", 9, New("POST", "/cluster/ha/resources", url.Values{"sid": {"vm:201"}, "state": {"running"}}), "state", "enumeration"},
		{"HA sid required", 9, New("POST", "/cluster/ha/resources", url.Values{"state": {"started"}}), "sid", "property is missing"},
		{"rule nodes", 9, New("POST", "/cluster/ha/rules", url.Values{"rule": {"ha-201"}, "type": {"node-affinity"},
			"resources": {"vm:201"}, "nodes": {"pve01:2,pve02:1"}}), "", ""},
		{"rule bad node entry", 9, New("POST", "/cluster/ha/rules", url.Values{"rule": {"ha-201"}, "type": {"node-affinity"},
			"resources": {"vm:201"}, "nodes": {"pve01:two"}}), "nodes", "value does not look like a valid ha node"},
		{"replication id", 9, New("POST", "/cluster/replication", url.Values{"id": {"201-0"}, "type": {"local"}, "target": {"pve02"}}), "", ""},
		{"replication id reserved guest", 8, New("POST", "/cluster/replication", url.Values{"id": {"99-0"}, "type": {"local"}, "target": {"pve02"}}),
			"id", "regex pattern"},
		{"replication schedule", 9, New("POST", "/cluster/replication", url.Values{"id": {"201-0"}, "type": {"local"}, "target": {"pve02"}, "schedule": {"mon..fri 22:30"}}), "", ""},
		{"replication schedule PVE refuses", 8, New("POST", "/cluster/replication", url.Values{"id": {"201-0"}, "type": {"local"}, "target": {"pve02"}, "schedule": {"*/60"}}),
			"schedule", "invalid format - invalid calendar event '*/60'"},
		{"replication rate minimum", 9, New("POST", "/cluster/replication", url.Values{"id": {"201-0"}, "type": {"local"}, "target": {"pve02"}, "rate": {"0.5"}}),
			"rate", "minimum value of 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate(tc.version)
			if tc.param == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var errs *Errors
			if !errors.As(err, &errs) {
				t.Fatalf("want a refusal of %s, got %v", tc.param, err)
			}
			if errs.List[0].Param != tc.param || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %v; want parameter %s with %q", err, tc.param, tc.msg)
			}
			if !strings.Contains(err.Error(), "parameter '"+tc.param+"'") {
				t.Errorf("the message does not name the parameter: %v", err)
			}
		})
	}
}

func TestRequestPath(t *testing.T) {
	r := New("POST", "/nodes/{node}/replication/{id}/schedule_now", nil, "pve01", "201-0")
	if r.Path != "/nodes/pve01/replication/201-0/schedule_now" || r.PathParams["id"] != "201-0" {
		t.Errorf("%+v", r)
	}
	if s := New("PUT", "/cluster/ha/resources/{sid}", nil, "vm:201").Path; s != "/cluster/ha/resources/vm:201" {
		t.Errorf("path %s", s)
	}
	if _, err := For(7); err == nil {
		t.Error("PVE 7 has no table and must be refused")
	}
	if tb, err := For(10); err != nil || tb.Method("POST", "/cluster/ha/rules") == nil {
		t.Errorf("a newer major uses the newest table: %v", err)
	}
}

// A refused secret is named, never quoted, even where PVE's message would
// quote the value (a synthetic enum: no secret of the tables has one today).
func TestSecretNotQuoted(t *testing.T) {
	const pw = "Sup3r-Secret-Pw"
	m := &Method{Params: map[string]*Param{"password": {Type: "string", Enum: []string{"a"}}, "mode": {Type: "string", Enum: []string{"a"}}}}
	errs := ValidateParams(m, url.Values{"password": {pw}, "mode": {pw}})
	if len(errs) != 2 || errs[1].Param != "password" || strings.Contains(errs[1].Error(), pw) {
		t.Errorf("secret: %v", errs)
	}
	if !strings.Contains(errs[0].Error(), pw) {
		t.Errorf("a value that is no secret is quoted as PVE does: %v", errs[0])
	}
}

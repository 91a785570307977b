package pveschema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func mustLoad(t *testing.T, v int) *Schema {
	t.Helper()
	s, err := Load(v)
	if err != nil {
		t.Fatalf("Load(%d): %v", v, err)
	}
	return s
}

func TestLoadUnknownVersion(t *testing.T) {
	if _, err := Load(7); err == nil {
		t.Fatal("Load(7) succeeded; want an error naming the embedded versions")
	}
}

func TestLookup(t *testing.T) {
	s := mustLoad(t, 9)
	tests := []struct {
		method, path string
		wantSchema   string
		wantParams   map[string]string
		want501      bool
	}{
		{"GET", "/version", "/version", map[string]string{}, false},
		{"GET", "/cluster/config/join", "/cluster/config/join", map[string]string{}, false},
		{"GET", "/nodes/pve01/tasks/UPID:pve01:00001:0002:0003:clustercreate:c1:root@pam:/status",
			"/nodes/{node}/tasks/{upid}/status",
			map[string]string{"node": "pve01", "upid": "UPID:pve01:00001:0002:0003:clustercreate:c1:root@pam:"}, false},
		{"GET", "/nodes/pve02/storage/local/status", "/nodes/{node}/storage/{storage}/status",
			map[string]string{"node": "pve02", "storage": "local"}, false},
		{"GET", "/nope", "", nil, true},
		{"PATCH", "/version", "", nil, true},
		{"DELETE", "/version", "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			m, params, err := s.Lookup(tt.method, tt.path)
			if tt.want501 {
				var ni *NotImplementedError
				if !errors.As(err, &ni) {
					t.Fatalf("Lookup = %v, want NotImplementedError", err)
				}
				want := "Method '" + tt.method + " " + tt.path + "' not implemented"
				if err.Error() != want {
					t.Errorf("message %q, want %q", err.Error(), want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			if m.Path != tt.wantSchema || m.HTTPMethod != tt.method {
				t.Errorf("matched %s %s, want %s %s", m.HTTPMethod, m.Path, tt.method, tt.wantSchema)
			}
			for k, v := range tt.wantParams {
				if params[k] != v {
					t.Errorf("param %s = %q, want %q", k, params[k], v)
				}
			}
			if len(params) != len(tt.wantParams) {
				t.Errorf("params %v, want %v", params, tt.wantParams)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	fp := strings.TrimSuffix(strings.Repeat("AB:", 32), ":")
	tests := []struct {
		name    string
		version int
		method  string
		path    string
		params  map[string]any
		want    map[string]string // nil = valid; "" value = any message for that key
	}{
		{"create ok", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "link0": "10.0.0.1"}, nil},
		{"unknown param", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "colour": "red"},
			map[string]string{"colour": MsgUnknownProperty}},
		{"missing required", 9, "POST", "/cluster/config", map[string]any{},
			map[string]string{"clustername": MsgMissingProperty}},
		{"link7 in range", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "link7": "10.0.0.1"}, nil},
		{"link8 out of range", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "link8": "10.0.0.1"},
			map[string]string{"link8": MsgUnknownProperty}},
		{"link with priority", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "link0": "address=10.0.0.1,priority=10"}, nil},
		{"link priority too big", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "link0": "10.0.0.1,priority=300"},
			map[string]string{"link0": ""}},
		{"link unknown key", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "link0": "10.0.0.1,colour=red"},
			map[string]string{"link0": ""}},
		{"clustername too long", 9, "POST", "/cluster/config", map[string]any{"clustername": "a234567890123456"},
			map[string]string{"clustername": "value may only be 15 characters long"}},
		{"clustername bad format", 9, "POST", "/cluster/config", map[string]any{"clustername": "-bad"},
			map[string]string{"clustername": "invalid format - value does not look like a valid node name"}},
		{"integer as numeric string", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "nodeid": "3"}, nil},
		{"integer as JSON number", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "nodeid": float64(3)}, nil},
		{"integer wrong type", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "nodeid": "three"},
			map[string]string{"nodeid": "type check ('integer') failed - got 'three'"}},
		{"integer below minimum", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "votes": "0"},
			map[string]string{"votes": "value must have a minimum value of 1"}},
		{"token-coefficient only in PVE 9", 8, "POST", "/cluster/config", map[string]any{"clustername": "lab", "token-coefficient": "125"},
			map[string]string{"token-coefficient": MsgUnknownProperty}},
		{"token-coefficient PVE 9", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "token-coefficient": "125"}, nil},
		{"join ok", 9, "POST", "/cluster/config/join", map[string]any{"hostname": "10.0.0.1", "fingerprint": fp, "password": "x", "force": "1"}, nil},
		{"boolean JSON true", 9, "POST", "/cluster/config/join", map[string]any{"hostname": "h", "fingerprint": fp, "password": "x", "force": true}, nil},
		{"boolean string true rejected", 9, "POST", "/cluster/config/join", map[string]any{"hostname": "h", "fingerprint": fp, "password": "x", "force": "true"},
			map[string]string{"force": "type check ('boolean') failed - got 'true'"}},
		{"boolean 2 rejected", 8, "POST", "/cluster/config/join", map[string]any{"hostname": "h", "fingerprint": fp, "password": "x", "force": "2"},
			map[string]string{"force": "type check ('boolean') failed - got '2'"}},
		{"fingerprint pattern", 9, "POST", "/cluster/config/join", map[string]any{"hostname": "h", "fingerprint": "AB:CD", "password": "x"},
			map[string]string{"fingerprint": "value does not match the regex pattern"}},
		{"enum", 9, "GET", "/cluster/resources", map[string]any{"type": "vms"},
			map[string]string{"type": "value 'vms' does not have a value in the enumeration 'vm, storage, node, sdn'"}},
		{"enum ok", 9, "GET", "/cluster/resources", map[string]any{"type": "vm"}, nil},
		{"storage id format", 9, "POST", "/storage", map[string]any{"storage": "9bad", "type": "dir", "path": "/x"},
			map[string]string{"storage": "invalid format - storage ID '9bad' contains illegal characters"}},
		{"storage type enum (glusterfs gone in 9)", 9, "POST", "/storage", map[string]any{"storage": "g1", "type": "glusterfs"},
			map[string]string{"type": ""}},
		{"storage type glusterfs in 8", 8, "POST", "/storage", map[string]any{"storage": "g1", "type": "glusterfs"}, nil},
		{"replication schedule ok", 9, "POST", "/cluster/replication", map[string]any{"id": "100-0", "target": "pve02", "type": "local", "schedule": "mon..fri 22:30"}, nil},
		{"replication schedule refused as PVE does", 9, "POST", "/cluster/replication", map[string]any{"id": "100-0", "target": "pve02", "type": "local", "schedule": "every 15 minutes"},
			map[string]string{"schedule": "invalid format - invalid calendar event 'every 15 minutes' - unable to parse calendar event at 'every' - Context(\"weekday\")"}},
		{"path param node format", 9, "GET", "/nodes/{node}/status", map[string]any{"node": "bad_node"},
			map[string]string{"node": "invalid format - value does not look like a valid node name"}},
		{"content list format", 9, "POST", "/storage", map[string]any{"storage": "d1", "type": "dir", "path": "/x", "content": "images,bogus"},
			map[string]string{"content": ""}},
		{"net31 ok, net32 not (qemu)", 9, "POST", "/nodes/{node}/qemu/{vmid}/config", map[string]any{"node": "pve01", "vmid": "100", "net32": "virtio"},
			map[string]string{"net32": MsgUnknownProperty}},
		{"requires", 9, "POST", "/access/ticket", map[string]any{"username": "root@pam", "password": "x", "path": "/"},
			map[string]string{"privs": "missing property - 'path' requires this property"}},
		{"net alias model=mac", 9, "POST", "/nodes/{node}/qemu/{vmid}/config", map[string]any{"node": "pve01", "vmid": "100",
			"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1,mtu=1"}, nil},
		{"net model key", 9, "POST", "/nodes/{node}/qemu/{vmid}/config", map[string]any{"node": "pve01", "vmid": "100",
			"net0": "model=virtio,bridge=vmbr0"}, nil},
		{"net bad mac", 9, "POST", "/nodes/{node}/qemu/{vmid}/config", map[string]any{"node": "pve01", "vmid": "100",
			"net0": "virtio=nope,bridge=vmbr0"}, map[string]string{"net0": ""}},
		{"net model twice", 9, "POST", "/nodes/{node}/qemu/{vmid}/config", map[string]any{"node": "pve01", "vmid": "100",
			"net0": "virtio=BC:24:11:00:00:01,model=e1000"}, map[string]string{"net0": ""}},
		// Realistic part-2 requests (seed roles) must not be rejected by mistake.
		{"clone", 9, "POST", "/nodes/{node}/qemu/{vmid}/clone", map[string]any{"node": "pve01", "vmid": "9000",
			"newid": "201", "name": "web-01", "full": "1", "target": "pve02", "storage": "tank", "pool": "tenant-a"}, nil},
		{"cloud-init config", 8, "POST", "/nodes/{node}/qemu/{vmid}/config", map[string]any{"node": "pve01", "vmid": "201",
			"cores": "4", "memory": "4096", "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1", "ciuser": "admin",
			"sshkeys": "ssh-ed25519%20AAAAC3Nza%20me%40host", "agent": "enabled=1", "nameserver": "10.0.0.53",
			"searchdomain": "lab", "scsi0": "tank:vm-201-disk-0,size=32G"}, nil},
		{"resize", 9, "PUT", "/nodes/{node}/qemu/{vmid}/resize", map[string]any{"node": "pve01", "vmid": "201", "disk": "scsi0", "size": "40G"}, nil},
		{"no leading zero index", 9, "POST", "/cluster/config", map[string]any{"clustername": "lab", "link01": "10.0.0.1"},
			map[string]string{"link01": MsgUnknownProperty}},
	}
	schemas := map[int]*Schema{8: mustLoad(t, 8), 9: mustLoad(t, 9)}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := schemas[tt.version].Method(tt.method, tt.path)
			if m == nil {
				t.Fatalf("schema %d has no %s %s", tt.version, tt.method, tt.path)
			}
			got := m.Validate(tt.params)
			if tt.want == nil {
				if got != nil {
					t.Fatalf("Validate = %v, want valid", got)
				}
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("Validate = %v, want errors for %v", got, tt.want)
			}
			for k, msg := range tt.want {
				g, ok := got[k]
				if !ok {
					t.Errorf("no error for %q in %v", k, got)
				} else if msg != "" && g != msg {
					t.Errorf("error for %q = %q, want %q", k, g, msg)
				}
			}
		})
	}
}

func TestCheckValue(t *testing.T) {
	s := mustLoad(t, 9)
	joinInfo := s.Method("GET", "/cluster/config/join").Returns
	status := s.Method("GET", "/cluster/status").Returns
	taskStatus := s.Method("GET", "/nodes/{node}/tasks/{upid}/status").Returns
	fp := strings.TrimSuffix(strings.Repeat("AB:", 32), ":")
	tests := []struct {
		name     string
		schema   *Prop
		json     string
		problems int
	}{
		{"join info with corosync strings", joinInfo,
			`{"config_digest":"x","preferred_node":"pve01","totem":{},"nodelist":[{"name":"pve01","nodeid":"1","quorum_votes":"1","pve_addr":"10.0.0.1","pve_fp":"` + fp + `","ring0_addr":"10.0.0.1"}]}`, 0},
		{"join info bad fingerprint", joinInfo,
			`{"config_digest":"x","preferred_node":"pve01","totem":{},"nodelist":[{"name":"pve01","pve_addr":"10.0.0.1","pve_fp":"nope","quorum_votes":"1"}]}`, 1},
		{"join info unknown top key (additionalProperties 0)", joinInfo,
			`{"config_digest":"x","preferred_node":"pve01","totem":{},"nodelist":[],"extra":1}`, 1},
		{"join info missing key", joinInfo, `{"preferred_node":"pve01","totem":{},"nodelist":[]}`, 1},
		{"standalone status", status, `[{"type":"node","id":"node/pve01","name":"pve01","nodeid":0,"local":1,"online":1,"ip":"10.0.0.1","level":""}]`, 0},
		{"status wrong boolean", status, `[{"type":"node","id":"node/pve01","name":"pve01","online":"yes"}]`, 1},
		{"status bad enum", status, `[{"type":"nodes","id":"node/pve01","name":"pve01"}]`, 1},
		{"task status string pid", taskStatus, `{"upid":"u","node":"n","pid":"12","pstart":1,"starttime":1,"type":"t","id":"","user":"root@pam","status":"running"}`, 0},
		{"task status missing status", taskStatus, `{"upid":"u","node":"n","pid":1,"pstart":1,"starttime":1,"type":"t","id":"","user":"root@pam"}`, 1},
		{"null return", s.Method("DELETE", "/storage/{storage}").Returns, `null`, 0},
		{"non-null where null", s.Method("DELETE", "/storage/{storage}").Returns, `"x"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.json), &v); err != nil {
				t.Fatal(err)
			}
			got := CheckValue(tt.schema, v)
			if len(got) != tt.problems {
				t.Errorf("CheckValue = %q, want %d problem(s)", got, tt.problems)
			}
		})
	}
}

func TestEveryPathMatchesItself(t *testing.T) {
	for _, v := range Versions {
		s := mustLoad(t, v)
		for _, p := range s.Paths() {
			concrete := strings.NewReplacer("{", "x", "}", "").Replace(p)
			for hm := range s.methods[p] {
				m, _, err := s.Lookup(hm, concrete)
				if err != nil {
					t.Errorf("PVE %d: %s %s (as %s): %v", v, hm, p, concrete, err)
					continue
				}
				// A literal sibling may legitimately win (e.g. /nodes/xnode vs
				// literal paths); it must at least be a path with that method.
				if m.HTTPMethod != hm {
					t.Errorf("PVE %d: %s %s matched %s %s", v, hm, p, m.HTTPMethod, m.Path)
				}
			}
		}
	}
}

// Volume IDs with a slash reach {volume} whole, as pve-storage mounts the
// content subclass with an empty fragmentDelimiter (Status.pm); other paths keep
// one segment per parameter.
func TestLookupVolumeWithSlash(t *testing.T) {
	for _, v := range Versions {
		s, err := Load(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ path, volume string }{
			{"/nodes/pve01/storage/local/content/local:iso/debian.iso", "local:iso/debian.iso"},
			{"/nodes/pve01/storage/local/content/local:snippets/a/b.yaml", "local:snippets/a/b.yaml"},
			{"/nodes/pve01/storage/local-lvm/content/local-lvm:vm-100-disk-0", "local-lvm:vm-100-disk-0"},
			{"//nodes/pve01//storage/local/content/local:100/vm-100-disk-0.qcow2", "local:100/vm-100-disk-0.qcow2"},
		} {
			for _, hm := range []string{"GET", "PUT", "POST", "DELETE"} {
				m, params, err := s.Lookup(hm, c.path)
				if err != nil {
					t.Errorf("PVE %d %s %s: %v", v, hm, c.path, err)
					continue
				}
				if m.Path != "/nodes/{node}/storage/{storage}/content/{volume}" || params["volume"] != c.volume || params["storage"] == "" {
					t.Errorf("PVE %d %s %s: %s %v", v, hm, c.path, m.Path, params)
				}
			}
		}
		if m, _, err := s.Lookup("GET", "/nodes/pve01/storage/local/content"); err != nil || m.Path != "/nodes/{node}/storage/{storage}/content" {
			t.Errorf("PVE %d content list: %v %v", v, m, err)
		}
		if _, _, err := s.Lookup("GET", "/nodes/pve01/qemu/100/config/extra"); err == nil {
			t.Errorf("PVE %d: a path with an extra segment elsewhere matched", v)
		}
	}
}

// Cloud-init parameters as qemu-server declares them: ipconfigN is the
// pve-qm-ipconfig property string (ip=CIDR|dhcp|manual, gw needs ip,
// ip6=CIDR|auto|dhcp|manual, gw6 needs ip6; CIDR prefixes above 7), sshkeys
// must be URL-encoded (K12), cicustom names volumes. The 400's errors are
// keyed by the parameter, the message names the key ("ipconfig0.ip").
func TestCloudInitFormatsK12(t *testing.T) {
	for _, v := range Versions {
		s, err := Load(v)
		if err != nil {
			t.Fatal(err)
		}
		m := s.Method("PUT", "/nodes/{node}/qemu/{vmid}/config")
		base := map[string]any{"node": "pve01", "vmid": "100"}
		with := func(k, val string) map[string]any {
			p := map[string]any{k: val}
			for bk, bv := range base {
				p[bk] = bv
			}
			return p
		}
		for _, ok := range []struct{ k, v string }{
			{"ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1"}, {"ipconfig0", "ip=dhcp"}, {"ipconfig1", "ip6=auto"},
			{"ipconfig0", "ip=10.0.0.5/24,ip6=fd00::5/64,gw6=fd00::1"}, {"ipconfig2", "ip6=dhcp,ip=manual"},
			{"sshkeys", "ssh-ed25519%20AAAAC3Nza%20me%40host%0A"}, {"cicustom", "vendor=local:snippets/v.yaml,user=local:snippets/u.yaml"},
		} {
			if errs := m.Validate(with(ok.k, ok.v)); errs != nil {
				t.Errorf("PVE %d %s=%s refused: %v", v, ok.k, ok.v, errs)
			}
		}
		for _, bad := range []struct{ k, v, msg string }{
			{"ipconfig0", "ip=10.0.0.5", "invalid format - format error\nipconfig0.ip: invalid format - value does not look like a valid ipv4 network configuration"},
			{"ipconfig0", "ip=10.0.0.5/4", "invalid format - format error\nipconfig0.ip: invalid format - value does not look like a valid ipv4 network configuration"},
			{"ipconfig0", "ip6=10.0.0.5/24", "invalid format - format error\nipconfig0.ip6: invalid format - value does not look like a valid ipv6 network configuration"},
			{"ipconfig0", "gw=10.0.0.1", "invalid format - format error\nipconfig0.ip: missing property - 'gw' requires this property"},
			{"ipconfig0", "ip=dhcp,gw=fd00::1", "invalid format - format error\nipconfig0.gw: invalid format - value does not look like a valid IPv4 address"},
			{"ipconfig3", "address=10.0.0.5/24", "invalid format - invalid key in comma-separated list property: address"},
			{"sshkeys", "ssh-ed25519 AAAAC3Nza me@host", "invalid format - invalid urlencoded string: ssh-ed25519 AAAAC3Nza me@host"},
			{"sshkeys", "ssh-ed25519+AAAAC3Nza", "invalid format - invalid urlencoded string: ssh-ed25519+AAAAC3Nza"},
			{"cicustom", "vendor=v.yaml", "invalid format - format error\ncicustom.vendor: invalid format - unable to parse volume ID 'v.yaml'"},
		} {
			errs := m.Validate(with(bad.k, bad.v))
			if errs[bad.k] != bad.msg {
				t.Errorf("PVE %d %s=%s: %q, want %q", v, bad.k, bad.v, errs[bad.k], bad.msg)
			}
		}
	}
}

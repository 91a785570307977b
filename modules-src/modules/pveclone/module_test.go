package pveclone

import (
	"context"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/ansible"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/pveapitest"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

// world is one in-process simulator of a three-node cluster with a
// shared NFS storage and a cloud-init template on pve01.
type world struct {
	t    *testing.T
	sim  *pvesim.Sim
	conn map[string]any
	v    int
}

var testKeys = []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIO+41ky5/3r6MHW0g3kuxhnCGqqE9DOXW8NgoCbNBESi alice@example.org",
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBira7ZPiS2hWm2qpjB+ECuTmR5LfKgDChjWcfYYfdUj bob@example.org"}

func newWorld(t *testing.T, version int, more ...func(*pvesim.Config)) *world {
	t.Helper()
	// Allocating a volume takes less than the (scaled) lock timeout, as on
	// PVE (10 s cfs lock, sub-second thin allocation).
	s := pveapitest.StartWith(t, version, 3, func(c *pvesim.Config) {
		c.AllocDuration = 20 * time.Millisecond
		for _, f := range more {
			f(c)
		}
	})
	pveapitest.Cluster(t, s)
	c := pveapitest.TokenConn(t, s, "pve01")
	w := &world{t: t, sim: s, v: version, conn: map[string]any{
		"api_host": c.Host, "api_port": c.Port, "api_token_id": c.TokenID, "api_token_secret": c.TokenSecret,
		"api_fingerprint": c.Fingerprint,
	}}
	if _, err := w.client().Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/storage", What: "create storage shared",
		Params: url.Values{"storage": {"shared"}, "type": {"nfs"}, "server": {"192.0.2.10"}, "export": {"/srv/vm"},
			"path": {"/mnt/pve/shared"}, "content": {"images,iso,snippets"}},
		Settle: func(context.Context) (bool, error) { return false, nil }, Creates: true}); err != nil {
		t.Fatalf("shared storage: %v", err)
	}
	if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 9000, Template: true, Config: map[string]string{
		"name": "debian-12", "scsi0": "shared:4", "ide2": "shared:cloudinit", "net0": "virtio,bridge=vmbr0,firewall=1",
		"agent": "1", "memory": "2048", "cores": "1", "ostype": "l26", "scsihw": "virtio-scsi-single"}}); err != nil {
		t.Fatal(err)
	}
	// A template on pve01's local storage: it cannot be cloned to another node.
	if err := s.AddGuest("pve01", pvesim.GuestSpec{VMID: 9001, Template: true, Config: map[string]string{
		"name": "local-tpl", "scsi0": "local-lvm:2", "net0": "virtio,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) client() *pveapi.Client {
	c, err := pveapi.Connect(context.Background(), pveapitest.TokenConn(w.t, w.sim, "pve02"), pveapi.Options{})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// run invokes pve_clone like Ansible would, with diff mode on.
func (w *world) run(args map[string]any, check bool) map[string]any {
	w.t.Helper()
	full := maps.Clone(w.conn)
	maps.Copy(full, args)
	m := New(pveapi.Options{Retry: &pveapitest.FastRetry, TaskPoll: 20 * time.Millisecond})
	env := func(string) (string, bool) { return "", false }
	return ansible.Execute(context.Background(), &m, &ansible.Invocation{Params: full, CheckMode: check, Diff: true}, env, io.Discard)
}

func (w *world) config(node string, vmid int, current bool) qemu.Config {
	w.t.Helper()
	c, err := qemu.GetConfig(context.Background(), w.client(), node, vmid, current)
	if err != nil {
		w.t.Fatalf("config of %d on %s: %v", vmid, node, err)
	}
	return c
}

func writes(s *pvesim.Sim) []pvesim.Request {
	var out []pvesim.Request
	for _, r := range pveapitest.Mutating(s) {
		if r.Path != "/access/ticket" {
			out = append(out, r)
		}
	}
	return out
}

func failed(res map[string]any) bool { return res["failed"] == true }

func msg(res map[string]any) string { s, _ := res["msg"].(string); return s }

func webArgs() map[string]any {
	return map[string]any{
		"vmid": 201, "name": "web-1", "template": "debian-12", "node": "pve02",
		"cores": 2, "memory": 4096, "tags": []any{"tenant-a", "web"},
		"nets":   map[string]any{"net0": map[string]any{"bridge": "vmbr1", "tag": 30, "mtu": 1}},
		"disks":  map[string]any{"scsi0": "8G"},
		"ciuser": "debian", "sshkeys": []any{testKeys[0], testKeys[1]},
		"ipconfig": map[string]any{"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1"}, "nameservers": []any{"10.0.0.1"},
	}
}

func cfgOf(res map[string]any) map[string]string {
	out := map[string]string{}
	m, _ := res["config"].(map[string]any)
	for k, v := range m {
		out[k] = pveapi.String(v)
	}
	return out
}

// K2, K5, K12, K15, K16, K17: a clone from a template on pve01 into pve02,
// configured in the same task. Check mode sends no write and predicts the
// config the real run reads back, key by key (the values PVE draws at
// clone time excepted); the second run changes nothing and costs three
// reads.
func TestCloneAcrossNodes(t *testing.T) {
	for _, v := range []int{8, 9} {
		t.Run(map[int]string{8: "PVE8", 9: "PVE9"}[v], func(t *testing.T) {
			w := newWorld(t, v)
			w.sim.ResetRequests()
			check := w.run(webArgs(), true)
			if failed(check) || check["changed"] != true {
				t.Fatalf("check: %v", msg(check))
			}
			if m := writes(w.sim); len(m) != 0 {
				t.Fatalf("K15: check mode wrote %+v", m)
			}
			predicted := cfgOf(check)
			if !strings.Contains(predicted["net0"], qemu.AssignedAtClone) {
				t.Errorf("the predicted MAC is not marked as assigned at clone: %q", predicted["net0"])
			}

			w.sim.ResetRequests()
			res := w.run(webArgs(), false)
			if failed(res) || res["changed"] != true {
				t.Fatalf("real run: %v", msg(res))
			}
			// K2: the clone goes to the template's node, the destination in target.
			var clone *pvesim.Request
			for _, r := range writes(w.sim) {
				if strings.HasSuffix(r.Path, "/clone") {
					r := r
					clone = &r
				}
			}
			if clone == nil || clone.Path != "/nodes/pve01/qemu/9000/clone" || clone.Node != "pve01" && clone.Node != "" || clone.Params["target"] != "pve02" || clone.Params["newid"] != "201" {
				t.Errorf("K2: clone request %+v", clone)
			}
			got := w.config("pve02", 201, false)
			final := cfgOf(res)
			for k, pv := range predicted {
				rv := got.Values[k]
				switch {
				case k == "net0":
					pn, _ := qemu.ParseNet(k, pv)
					rn, _ := qemu.ParseNet(k, rv)
					pn.MAC = rn.MAC
					a, _ := pn.Render()
					if a != rv {
						t.Errorf("net0 predicted %q, read back %q", pv, rv)
					}
				case strings.Contains(pv, qemu.AssignedAtClone):
					if rv == "" {
						t.Errorf("%s predicted %q, missing after the real run", k, pv)
					}
				case k == "sshkeys":
					if !slices.Equal(qemu.DecodeSSHKeys(pv), qemu.DecodeSSHKeys(rv)) {
						t.Errorf("K12 sshkeys predicted %q, read back %q", pv, rv)
					}
				case pv != rv:
					t.Errorf("%s: predicted %q, read back %q", k, pv, rv)
				}
			}
			for k := range got.Values {
				if _, ok := predicted[k]; !ok {
					t.Errorf("%s=%q read back, not predicted by check mode", k, got.Values[k])
				}
			}
			nets, _ := got.Nets()
			n := nets["net0"]
			if n.Bridge != "vmbr1" || n.Tag != 30 || n.MTU != 1 || n.Firewall == nil || !*n.Firewall {
				t.Errorf("K9/K16 net0 merged key by key: %+v", n)
			}
			if !strings.Contains(pveapi.String(res["warnings"]), "K8") {
				t.Errorf("K8: firewall=1 kept on vmbr1 without a warning: %v", res["warnings"])
			}
			macs, _ := res["mac"].(map[string]any)
			if macs["net0"] != n.MAC || n.MAC == "" || final["net0"] != got.Values["net0"] {
				t.Errorf("K17: returned mac %v, config has %s", macs, n.MAC)
			}
			if got.Values["cores"] != "2" || got.Values["memory"] != "4096" || got.Values["tags"] != "tenant-a;web" {
				t.Errorf("K5: settings after the clone: %v", got.Values)
			}
			if got := got.SSHKeys(); !slices.Equal(got, testKeys) {
				t.Errorf("K12: sshkeys read back %q", got)
			}
			disks, _ := got.Disks()
			if disks["scsi0"].Size != 8<<30 || !strings.HasPrefix(disks["scsi0"].File, "shared:201/vm-201-disk-0") {
				t.Errorf("K11: scsi0 %+v", disks["scsi0"])
			}

			// Second run: nothing to do, three reads.
			w.sim.ResetRequests()
			again := w.run(webArgs(), false)
			if failed(again) || again["changed"] != false {
				t.Fatalf("second run: %v %v", msg(again), again["changes"])
			}
			reqs := w.sim.Requests()
			var gets []string
			for _, r := range reqs {
				if r.Path == "/access/ticket" {
					continue
				}
				gets = append(gets, r.Method+" "+r.Path)
			}
			if len(gets) > 3 || len(writes(w.sim)) != 0 {
				t.Errorf("the second run made %d requests, want at most three reads: %v", len(gets), gets)
			}
			if m := again["mac"].(map[string]any); m["net0"] != n.MAC {
				t.Errorf("K17: mac on a run that created nothing: %v", m)
			}
			w.sim.ResetRequests()
			if c := w.run(webArgs(), true); failed(c) || c["changed"] != false || len(writes(w.sim)) != 0 {
				t.Errorf("check on a converged VM: %v %v", msg(c), c["changes"])
			}
		})
	}
}

package pveclone

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/clusterguests"
)

// earlier is what the site's roles pass a clone on a node the cluster phase
// joins, on the storage the storage phase defines, in a pool an earlier
// VM's pool_create makes; typos names neighbours of each, not them.
var (
	earlier = map[string]any{"nodes": []any{"pve04"}, "storages": []any{"nvme-vm"}, "pools": []any{"tenant-z"}}
	typos   = map[string]any{"nodes": []any{"pve4"}, "storages": []any{"nvme"}, "pools": []any{"tenant-y"}, "guests": []any{"pve04", "nvme-vm", "tenant-z"}}
)

// A check run of the whole site meets the node the cluster phase joins, the
// storage the storage phase declares on the pool pve_zfs makes, and a pool,
// before any of them exists; created_earlier names them (ansible.NotYet): the clone is still predicted,
// with its config and its disks named on the storage, one warning per
// object, nothing written. A real run without them fails naming the option,
// changed=false, nothing written. K15: check mode tells the truth about a
// VM it cannot create yet, instead of skipping it; K6: the pool must exist
// by the time the clone is sent; K2: the clone goes to the template's node,
// the node not yet joined in target.
func TestK15NotYetNodeStoragePool(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		bare := with(webArgs(), "node", "pve04", "storage", "nvme-vm", "pool", "tenant-z")
		args := with(bare, "created_earlier", earlier)
		w.sim.ResetRequests()
		check := w.run(args, true)
		if failed(check) || check["changed"] != true {
			t.Fatalf("PVE %d check: %v", v, msg(check))
		}
		warnings := pveapi.String(check["warnings"])
		t.Logf("PVE %d check warnings: %s", v, warnings)
		for _, want := range []string{"node: cluster node pve04 does not exist yet", "storage: storage nvme-vm does not exist yet", "pool: pool tenant-z does not exist yet"} {
			if !strings.Contains(warnings, want+"; check mode assumes an earlier task of this run creates it (created_earlier.") {
				t.Errorf("PVE %d check: no warning %q in %s", v, want, warnings)
			}
		}
		if n, _ := check["not_yet"].([]any); len(n) != 3 {
			t.Errorf("PVE %d check: not_yet %v, want node, storage and pool", v, check["not_yet"])
		}
		changes := pveapi.String(check["changes"])
		if !strings.Contains(changes, "into VM 201 on pve01 → pve04") || !strings.Contains(changes, "configure VM 201") {
			t.Errorf("PVE %d check: the clone and its configuration are not both predicted: %s", v, changes)
		}
		if got := cfgOf(check)["scsi0"]; !strings.HasPrefix(got, "nvme-vm:vm-201-disk-0,") || !strings.Contains(got, "size=8G") {
			t.Errorf("PVE %d check: predicted scsi0 %q, want the clone's disk on nvme-vm, grown to 8G", v, got)
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Fatalf("PVE %d: check mode wrote %+v", v, m)
		}
		for _, c := range []struct {
			args map[string]any
			want string
		}{
			{args, "node: no such cluster node 'pve04' (the cluster has pve01, pve02, pve03)"},
			{with(args, "node", "pve02"), "storage: storage 'nvme-vm' does not exist"},
			{with(args, "node", "pve02", "storage", "shared"), "pool: pool 'tenant-z' does not exist"},
			// A disk the configuration adds to the clone, on a storage that
			// does not exist: refused before the clone, not after it.
			{with(args, "node", "pve02", "storage", "shared", "pool", nil, "disks", map[string]any{"scsi1": "sharde:4"}),
				"disks.scsi1: storage 'sharde' does not exist"},
		} {
			real := w.run(c.args, false)
			if !failed(real) || real["changed"] != false || !strings.Contains(msg(real), c.want) || real["not_yet"] != nil {
				t.Errorf("PVE %d real: failed %v changed %v %q, want %q", v, real["failed"], real["changed"], msg(real), c.want)
			}
			// K15 (typos): the same task without created_earlier, or with
			// other names in it, fails the check run with the real run's
			// message, unchanged, nothing assumed.
			for _, ce := range []any{nil, typos} {
				chk := w.run(with(c.args, "created_earlier", ce), true)
				if !failed(chk) || chk["changed"] != false || msg(chk) != msg(real) || chk["not_yet"] != nil {
					t.Errorf("PVE %d check, created_earlier %v: failed %v changed %v %q, want the real run's %q",
						v, ce, chk["failed"], chk["changed"], msg(chk), msg(real))
				}
			}
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Errorf("PVE %d: the refused real runs wrote %+v", v, m)
		}
		if _, ok := clusterguests.Find(w.guests(), 201); ok {
			t.Errorf("PVE %d: VM 201 exists after the refused runs", v)
		}

		// A bare VM on the node not joined yet, on a storage that exists:
		// nothing can be read of that node, the disk is named all the same.
		bare = map[string]any{"vmid": 311, "name": "bare-1", "node": "pve04", "disks": map[string]any{"scsi0": "local-lvm:8"},
			"created_earlier": earlier}
		check = w.run(bare, true)
		if failed(check) || check["changed"] != true || cfgOf(check)["scsi0"] != "local-lvm:vm-311-disk-0,size=8G" {
			t.Errorf("PVE %d bare check: %v scsi0 %q", v, msg(check), cfgOf(check)["scsi0"])
		}
		if real := w.run(bare, false); !failed(real) || real["changed"] != false || !strings.Contains(msg(real), "node: no such cluster node 'pve04'") {
			t.Errorf("PVE %d bare real: %v %q", v, real["changed"], msg(real))
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Errorf("PVE %d: the bare VM's runs wrote %+v", v, m)
		}
	}
}

// The same, as a site runs it: a bare VM whose storage and pool earlier
// tasks make. The check run's prediction (the disk's volume name included)
// is what the real run reads back once they exist.
func TestK15NotYetPredictionHoldsOnceCreated(t *testing.T) {
	w := newWorld(t, 9)
	args := map[string]any{"vmid": 310, "name": "db-1", "node": "pve03", "pool": "tenant-z", "memory": 2048,
		"created_earlier": earlier,
		"scsihw":          "virtio-scsi-single", "disks": map[string]any{"scsi0": "nvme-vm:8"},
		"nets": map[string]any{"net0": "virtio,bridge=vmbr0"}}
	w.sim.ResetRequests()
	check := w.run(args, true)
	if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
		t.Fatalf("check: %v %v", msg(check), writes(w.sim))
	}
	predicted := cfgOf(check)
	// The earlier tasks of the real run: pve_storage and a pool.
	c := w.client()
	for _, wr := range []pveapi.Write{
		{Method: "POST", Path: "/storage", What: "create storage nvme-vm", Params: url.Values{"storage": {"nvme-vm"},
			"type": {"zfspool"}, "pool": {"nvme-vm"}, "content": {"images,rootdir"}, "sparse": {"1"}}},
		{Method: "POST", Path: "/pools", What: "create pool tenant-z", Params: url.Values{"poolid": {"tenant-z"}}},
	} {
		wr.Settle, wr.Creates = func(context.Context) (bool, error) { return false, nil }, true
		if _, err := c.Dispatch(context.Background(), wr); err != nil {
			t.Fatalf("%s: %v", wr.What, err)
		}
	}
	res := w.run(args, false)
	if failed(res) || res["changed"] != true || res["not_yet"] != nil || strings.Contains(pveapi.String(res["warnings"]), "does not exist yet") {
		t.Fatalf("real: %v %v", msg(res), res["warnings"])
	}
	got := w.config("pve03", 310, false)
	if got.Values["scsi0"] != predicted["scsi0"] || got.Values["scsi0"] != "nvme-vm:vm-310-disk-0,size=8G" {
		t.Errorf("scsi0 predicted %q, read back %q", predicted["scsi0"], got.Values["scsi0"])
	}
	for _, k := range []string{"memory", "scsihw", "boot"} {
		if got.Values[k] != predicted[k] {
			t.Errorf("%s predicted %q, read back %q", k, predicted[k], got.Values[k])
		}
	}
	var pools []struct {
		Members []struct {
			VMID int `json:"vmid"`
		} `json:"members"`
	}
	if err := c.Get(context.Background(), "/pools", url.Values{"poolid": {"tenant-z"}}, &pools); err != nil || len(pools) != 1 ||
		len(pools[0].Members) != 1 || pools[0].Members[0].VMID != 310 {
		t.Errorf("pool tenant-z after the run: %+v %v", pools, err)
	}
}

// Seed 003's chain: a bare VM built, converted to a template (qm template),
// then cloned. In a check run the bare VM is only predicted and the
// conversion skipped, so the clone meets no template: created_earlier
// names it among the guests (by VMID or by name) and the check run
// predicts the clone and its configuration as one change, zero writes; the
// real run then makes exactly that. A template created_earlier does not
// name (a typo) fails the check run with the real run's message; what can
// be checked without the template (the node, the storages, the pool) is.
// K15: check mode tells the truth about a VM whose template does not exist
// yet.
func TestK15TemplateCreatedEarlier(t *testing.T) {
	for _, v := range []int{8, 9} {
		w := newWorld(t, v)
		seed := map[string]any{"vmid": 9100, "name": "debian-13", "node": "pve01", "scsihw": "virtio-scsi-single",
			"disks": map[string]any{"scsi0": "shared:2"}, "nets": map[string]any{"net0": "virtio,bridge=vmbr0"}}
		clone := map[string]any{"vmid": 205, "name": "app-5", "template": "9100", "node": "pve02", "memory": 1024,
			"created_earlier": map[string]any{"guests": []any{9100, "debian-13"}}}
		byName := with(clone, "template", "debian-13")
		w.sim.ResetRequests()
		for name, args := range map[string]map[string]any{"by VMID": clone, "by name": byName} {
			check := w.run(args, true)
			if failed(check) || check["changed"] != true {
				t.Fatalf("PVE %d check %s: %v", v, name, msg(check))
			}
			if w := pveapi.String(check["warnings"]); !strings.Contains(w, "template: template "+pveapi.String(args["template"])+
				" does not exist yet; check mode assumes an earlier task of this run creates it (created_earlier.guests names it)") {
				t.Errorf("PVE %d check %s: warnings %s", v, name, w)
			}
			if c := pveapi.String(check["changes"]); !strings.Contains(c, "full clone of template "+pveapi.String(args["template"])+" (made by an earlier task) into VM 205 on pve02") {
				t.Errorf("PVE %d check %s: changes %s", v, name, c)
			}
		}
		// Not named, or a typo: the real run's message, in both modes.
		for _, args := range []map[string]any{with(clone, "created_earlier", nil), with(clone, "template", "9101"),
			with(byName, "template", "debian-31")} {
			real, check := w.run(args, false), w.run(args, true)
			if !failed(real) || !failed(check) || real["changed"] != false || check["changed"] != false ||
				msg(check) != msg(real) || !strings.Contains(msg(real), "template: no ") {
				t.Errorf("PVE %d template %v: real %q, check %q", v, args["template"], msg(real), msg(check))
			}
		}
		// Assumed template, but a typo in the node, a storage or the pool:
		// refused as the real run refuses it.
		for _, c := range []struct {
			args map[string]any
			want string
		}{
			{with(clone, "node", "pve0x"), "node: no such cluster node 'pve0x'"},
			{with(clone, "storage", "sharde"), "storage: storage 'sharde' does not exist"},
			{with(clone, "disks", map[string]any{"scsi1": "sharde:4"}), "disks.scsi1: storage 'sharde' does not exist"},
			{with(clone, "pool", "tenant-q"), "pool: pool 'tenant-q' does not exist"},
		} {
			if check := w.run(c.args, true); !failed(check) || check["changed"] != false || !strings.Contains(msg(check), c.want) {
				t.Errorf("PVE %d check: %q, want %q", v, msg(check), c.want)
			}
		}
		if m := writes(w.sim); len(m) != 0 {
			t.Fatalf("PVE %d: check mode wrote %+v", v, m)
		}
		// The real run of the chain: the bare VM, the conversion, the clone.
		if res := w.run(seed, false); failed(res) || res["changed"] != true {
			t.Fatalf("PVE %d bare VM: %v", v, msg(res))
		}
		if _, err := w.client().Dispatch(context.Background(), pveapi.Write{Method: "POST", Path: "/nodes/pve01/qemu/9100/template",
			What: "qm template 9100", Task: &pveapi.TaskWrite{Node: "pve01", Types: []string{"qmtemplate"}, ID: "9100"}}); err != nil {
			t.Fatalf("PVE %d qm template 9100: %v", v, err)
		}
		res := w.run(clone, false)
		if failed(res) || res["changed"] != true || res["not_yet"] != nil {
			t.Fatalf("PVE %d clone: %v", v, msg(res))
		}
		if got := w.config("pve02", 205, false); got.Values["name"] != "app-5" || got.Values["memory"] != "1024" {
			t.Errorf("PVE %d: VM 205 after the run: %v", v, got.Values)
		}
	}
}

// A bare VM's disk on a dir storage an earlier task declares: with the
// type created_earlier.storage_types gives, the check run names the disk as
// PVE does on a file storage (<vmid>/vm-<vmid>-disk-0.raw), and that is
// what the real run reads back once the storage exists; without the type
// it is named as on a block storage, and the warning says which.
func TestK15NotYetStorageTypeNamesDisk(t *testing.T) {
	w := newWorld(t, 9)
	args := map[string]any{"vmid": 320, "name": "files-1", "node": "pve01", "disks": map[string]any{"scsi0": "newdir:4"},
		"created_earlier": map[string]any{"storages": []any{"newdir"}, "storage_types": map[string]any{"newdir": "dir"}}}
	w.sim.ResetRequests()
	check := w.run(args, true)
	if failed(check) || check["changed"] != true || len(writes(w.sim)) != 0 {
		t.Fatalf("check: %v %v", msg(check), writes(w.sim))
	}
	if got := cfgOf(check)["scsi0"]; got != "newdir:320/vm-320-disk-0.raw,size=4G" {
		t.Errorf("check: scsi0 predicted %q, want the dir storage's name", got)
	}
	if warned := pveapi.String(check["warnings"]); !strings.Contains(warned, "named as on a dir storage, as created_earlier.storage_types declares it (newdir:320/vm-320-disk-N.raw)") {
		t.Errorf("check: warnings %s", warned)
	}
	untyped := w.run(with(args, "created_earlier", map[string]any{"storages": []any{"newdir"}}), true)
	if got := cfgOf(untyped)["scsi0"]; failed(untyped) || got != "newdir:vm-320-disk-0,size=4G" ||
		!strings.Contains(pveapi.String(untyped["warnings"]), "named as on a block storage (newdir:vm-320-disk-N)") {
		t.Errorf("check without a type: %v scsi0 %q warnings %v", msg(untyped), got, untyped["warnings"])
	}
	c := w.client()
	wr := pveapi.Write{Method: "POST", Path: "/storage", What: "create storage newdir", Params: url.Values{"storage": {"newdir"},
		"type": {"dir"}, "path": {"/var/lib/newdir"}, "content": {"images"}}}
	wr.Settle, wr.Creates = func(context.Context) (bool, error) { return false, nil }, true
	if _, err := c.Dispatch(context.Background(), wr); err != nil {
		t.Fatalf("%s: %v", wr.What, err)
	}
	if res := w.run(args, false); failed(res) || res["changed"] != true {
		t.Fatalf("real: %v", msg(res))
	}
	if got := w.config("pve01", 320, false).Values["scsi0"]; got != cfgOf(check)["scsi0"] {
		t.Errorf("scsi0 read back %q, predicted %q", got, cfgOf(check)["scsi0"])
	}
}

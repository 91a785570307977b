package pveclone

// The role driven by the seeds' own variables, under the real
// ansible-playbook against the lab: seed 001's tenant variables
// (proxmox_clone_*) and seed 002's per-host NetBox-shaped variables (vmid,
// vcpus, memory, proxmox_api_host, proxmox_kvm's scsi/net/efidisk0…), each
// group with the one documented line pve_clone_vm: "{{
// pve_clone_vm_from_seed00N }}". Every VM is read back; check mode writes
// nothing; the rerun changes nothing and writes nothing.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
	"github.com/gopve/proxmox/modules-src/lab/labtest"
	"github.com/gopve/proxmox/modules-src/lab/pvesim"
	"github.com/gopve/proxmox/modules-src/pveapi"
	"github.com/gopve/proxmox/modules-src/pveapi/qemu"
)

func TestLabPlaybookSeedVariables(t *testing.T) {
	t.Parallel()
	lab, bin := labtest.Start(t, 9, 2)
	sim := lab.Sim()
	labtest.FormCluster(t, lab)
	if err := sim.AddGuest("pve01", pvesim.GuestSpec{VMID: 9000, Template: true, Config: map[string]string{
		"name": "debian-12", "scsi0": "local-lvm:2", "ide2": "local-lvm:cloudinit", "net0": "virtio,bridge=vmbr0,firewall=1", "memory": "1024"}}); err != nil {
		t.Fatal(err)
	}
	repo, _ := labctl.RepoRoot()
	coll := labtest.InstallCollection(t, repo, bin)
	dir := t.TempDir()
	vars := filepath.Join(dir, "vars.yml")
	if err := os.WriteFile(vars, []byte("pve_clone_concurrency: 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Seed 001's variables, as its tenant files and make variables give
	// them; seed 002's, as its NetBox records give them.
	inv := fmt.Sprintf(`pve_vms:
  children:
    tenant_a:
      vars:
        pve_clone_vm: "{{ pve_clone_vm_from_seed001 }}"
        proxmox_clone_vmid_modele: 9000
        proxmox_clone_noeud: pve01
        proxmox_clone_pont: vmbr1
        proxmox_clone_parefeu_interface: true
        proxmox_clone_coeurs: 2
        proxmox_clone_memoire: 2048
        proxmox_clone_taille_disque: 4G
        proxmox_clone_ciuser: debian
        proxmox_clone_cle_publique: %q
        proxmox_clone_dns: "10.12.0.1, 10.12.0.2"
        proxmox_clone_domaines_recherche: tenant-a.example
        proxmox_clone_demarrer: false
      hosts:
        web-a1: {proxmox_clone_vmid: 4101, proxmox_clone_nom: web-a1, proxmox_clone_vlan: 120, proxmox_clone_ipconfig0: "ip=10.12.0.21/24,gw=10.12.0.1"}
        web-a2: {proxmox_clone_vmid: 4102, proxmox_clone_nom: web-a2, proxmox_clone_ipconfig0: "ip=10.12.0.22/24,gw=10.12.0.1"}
    netbox:
      vars:
        pve_clone_vm: "{{ pve_clone_vm_from_seed002 }}"
        proxmox_api_host: pve02
        machine: q35
        bios: ovmf
        ostype: l26
        scsihw: virtio-scsi-single
        efidisk0: {storage: local-lvm, format: raw, efitype: 4m, pre_enrolled_keys: true}
        boot: order=scsi0;net0
        agent: enabled=1,fstrim_cloned_disks=1
        onboot: true
        tags: [production]
      hosts:
        db-1: {vmid: 310, vcpus: 4, memory: 8192, scsi: {scsi0: "local-lvm:4,discard=on,ssd=1"}, net: {net0: "virtio,bridge=vmbr0", net1: "virtio,bridge=vmbr1,tag=30"}}
`, testKeys[0])
	hosts := filepath.Join(dir, "vms.yml")
	if err := os.WriteFile(hosts, []byte(inv), 0o644); err != nil {
		t.Fatal(err)
	}
	pb := filepath.Join(repo, "playbooks", "clone.yml")
	writes := func() []string {
		var out []string
		for _, r := range sim.Requests() {
			if r.Mutating() && r.Path != "/access/ticket" {
				out = append(out, r.Method+" "+r.Path)
			}
		}
		return out
	}
	vms := []string{"web-a1", "web-a2", "db-1"}

	sim.ResetRequests()
	if out, err := labtest.Playbook(t, lab, coll, vars, pb, "-i", hosts, "--check"); err != nil {
		t.Fatalf("clone.yml --check: %v\n%s", err, out)
	} else if w := writes(); len(w) != 0 || labtest.RecapChanged(t, out, "web-a1") != 1 || labtest.RecapChanged(t, out, "db-1") != 1 {
		t.Errorf("check: writes %v\n%s", w, out)
	}

	sim.ResetRequests()
	out, err := labtest.Playbook(t, lab, coll, vars, pb, "-i", hosts)
	if err != nil {
		t.Fatalf("clone.yml: %v\n%s", err, out)
	}
	for _, h := range vms {
		if labtest.RecapChanged(t, out, h) != 1 {
			t.Errorf("%s did not change once\n%s", h, out)
		}
	}
	if w := writes(); len(w) == 0 {
		t.Error("the run reported changes the lab did not see")
	}
	if strings.Contains(out, "K8") {
		t.Errorf("a K8 warning although seed 001's rule disarms the firewall on vmbr1\n%s", out)
	}

	c, err := pveapi.Connect(context.Background(), labConn(t, lab), pveapi.Options{})
	if err != nil {
		t.Fatal(err)
	}
	read := func(node string, vmid int) qemu.Config {
		cfg, err := qemu.GetConfig(context.Background(), c, node, vmid, false)
		if err != nil {
			t.Fatalf("VM %d on %s: %v", vmid, node, err)
		}
		return cfg
	}
	for _, vm := range []struct {
		vmid     int
		name     string
		tag      int
		ipconfig string
	}{{4101, "web-a1", 120, "ip=10.12.0.21/24,gw=10.12.0.1"}, {4102, "web-a2", 0, "ip=10.12.0.22/24,gw=10.12.0.1"}} {
		cfg := read("pve01", vm.vmid)
		nets, _ := cfg.Nets()
		disks, _ := cfg.Disks()
		n := nets["net0"]
		if cfg.Values["name"] != vm.name || cfg.Values["cores"] != "2" || cfg.Values["memory"] != "2048" || n.Bridge != "vmbr1" || n.Tag != vm.tag ||
			n.MTU != 1 || n.Firewall == nil || *n.Firewall || disks["scsi0"].Size != 4<<30 {
			t.Errorf("seed 001 VM %d: %v", vm.vmid, cfg.Values)
		}
		if cfg.Values["ciuser"] != "debian" || !slices.Equal(cfg.SSHKeys(), testKeys[:1]) || !sameIPConfig(cfg.Values["ipconfig0"], vm.ipconfig) ||
			cfg.Values["nameserver"] != "10.12.0.1 10.12.0.2" || cfg.Values["searchdomain"] != "tenant-a.example" {
			t.Errorf("seed 001 VM %d cloud-init: %v", vm.vmid, cfg.Values)
		}
	}
	db := read("pve02", 310)
	nets, _ := db.Nets()
	disks, _ := db.Disks()
	if db.Values["name"] != "db-1" || db.Values["cores"] != "4" || db.Values["memory"] != "8192" || db.Values["machine"] != "q35" || db.Values["bios"] != "ovmf" ||
		db.Values["boot"] != "order=scsi0;net0" || db.Values["onboot"] != "1" || db.Values["tags"] != "production" || db.Values["efidisk0"] == "" ||
		disks["scsi0"].Size != 4<<30 || nets["net1"].Tag != 30 || nets["net0"].MAC == "" {
		t.Errorf("seed 002 VM: %v", db.Values)
	}

	sim.ResetRequests()
	again, err := labtest.Playbook(t, lab, coll, vars, pb, "-i", hosts)
	if err != nil || len(writes()) != 0 {
		t.Errorf("second run: %v, writes %v\n%s", err, writes(), again)
	}
	for _, h := range vms {
		if labtest.RecapChanged(t, again, h) != 0 {
			t.Errorf("second run changed %s\n%s", h, again)
		}
	}
}

// sameIPConfig compares two ipconfig strings key by key (PVE keeps the
// string it was sent; the order of its keys carries no meaning).
func sameIPConfig(a, b string) bool {
	x, errA := qemu.ParseIPConfig("ipconfig0", a)
	y, errB := qemu.ParseIPConfig("ipconfig0", b)
	ra, _ := x.Render()
	rb, _ := y.Render()
	return errA == nil && errB == nil && ra == rb
}

package labctl

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestLabZvolsAreTheGuestsVolumes: on a zfspool storage a container's root
// disk is a subvol-… dataset and a VM's disks are
// zvols in the node's ZFS — created, cloned (full and linked from a
// template's base-…@__base__), grown and destroyed with the guest — and at
// every step `zfs list` on the node, the storage's content API, the VM
// configs and the storage's status agree.
func TestLabZvolsAreTheGuestsVolumes(t *testing.T) {
	t.Parallel()
	lab := startLab(t, 9)
	// pve01 and pve02 in one cluster, for the migration below.
	nodes := lab.Nodes()
	if _, err := lab.Sim().CreateCluster("pve01", "labcluster", nodes[0].Addr); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := lab.Sim().AddNode("pve01", "pve02", nodes[1].Addr, false)
		return err == nil
	}, "pve02 could not join")
	waitFor(t, func() bool {
		_, err := lab.SSH("pve02", "pvesh get /version >/dev/null")
		return err == nil
	}, "pve02's API is not back after the join")
	onNode(t, lab, "pve01", "zpool create tank /dev/nvme0n1 && pvesm add zfspool tank --pool tank --content images,rootdir")

	// zvols: name → volsize in bytes, from the node's zfs.
	zvols := func() map[string]string {
		out := onNode(t, lab, "pve01", "zfs list -Hp -t volume -o name,volsize")
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 2 {
				got[f[0]] = f[1]
			}
		}
		return got
	}
	// content: volid → size from the API; each must be the zvol of its name.
	agree := func(step string, want map[string]string) {
		t.Helper()
		var vols []map[string]any
		if err := labAPI(lab, "pve01", "/nodes/pve01/storage/tank/content", &vols); err != nil {
			t.Fatal(err)
		}
		api := map[string]string{}
		for _, v := range vols {
			_, name, _ := strings.Cut(fmt.Sprint(v["volid"]), ":")
			api["tank/"+name[strings.LastIndex(name, "/")+1:]] = fmt.Sprintf("%.0f", v["size"])
		}
		z := zvols()
		if fmt.Sprint(z) != fmt.Sprint(want) || fmt.Sprint(api) != fmt.Sprint(want) {
			t.Errorf("%s: zfs list %v, content API %v, want %v", step, z, api, want)
		}
		// The storage's status is the pool's accounting, which counts the
		// thick zvols' reservations.
		used := strings.TrimSpace(onNode(t, lab, "pve01", "zfs get -Hp -o value used tank"))
		var st map[string]any
		if err := labAPI(lab, "pve01", "/nodes/pve01/storage/tank/status", &st); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%.0f", st["used"]) != used {
			t.Errorf("%s: storage status used %v, zfs says %s", step, st["used"], used)
		}
	}
	conf := func(vmid int) string { return onNode(t, lab, "pve01", fmt.Sprintf("qm config %d", vmid)) }
	const g1, g2 = "1073741824", "2147483648"

	// A container's root disk is a subvol-… filesystem with a refquota
	// (zfs_create_subvol), mounted under the pool's mountpoint.
	onNode(t, lab, "pve01", "mkdir -p /var/lib/vz/template/cache && head -c 4096 /dev/zero > /var/lib/vz/template/cache/debian-12-standard_12.7-1_amd64.tar.zst")
	onNode(t, lab, "pve01", "pct create 200 local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst --rootfs tank:2 --password Secret-1")
	if c := onNode(t, lab, "pve01", "pct config 200"); !strings.Contains(c, "rootfs: tank:subvol-200-disk-0,size=2G") {
		t.Errorf("CT 200's config:\n%s", c)
	}
	if got := onNode(t, lab, "pve01", "zfs get -H -o value type,refquota,acltype,xattr,mountpoint tank/subvol-200-disk-0"); got != "filesystem\n2G\nposix\nsa\n/tank/subvol-200-disk-0\n" {
		t.Errorf("CT 200's subvolume: %q", got)
	}
	var ctVols []map[string]any
	if err := labAPI(lab, "pve01", "/nodes/pve01/storage/tank/content", &ctVols); err != nil {
		t.Fatal(err)
	}
	if len(ctVols) != 1 || ctVols[0]["volid"] != "tank:subvol-200-disk-0" || ctVols[0]["size"] != float64(2<<30) {
		t.Errorf("content with CT 200: %v", ctVols)
	}
	onNode(t, lab, "pve01", "pct destroy 200")
	if fs := strings.TrimSpace(onNode(t, lab, "pve01", "zfs list -H -o name -t all")); fs != "tank" {
		t.Errorf("datasets left after pct destroy: %q", fs)
	}

	onNode(t, lab, "pve01", "qm create 100 --name src --scsi0 tank:1")
	if c := conf(100); !strings.Contains(c, "scsi0: tank:vm-100-disk-0,size=1G") {
		t.Errorf("VM 100's config:\n%s", c)
	}
	agree("create", map[string]string{"tank/vm-100-disk-0": g1})
	// A thick zvol carries the refreservation libzfs computes (1 GiB + indirect blocks).
	if r := strings.TrimSpace(onNode(t, lab, "pve01", "zfs get -Hp -o value refreservation tank/vm-100-disk-0")); r != "1092616192" {
		t.Errorf("refreservation of a 1G zvol: %s", r)
	}

	onNode(t, lab, "pve01", "qm clone 100 101 --full --name copy")
	if c := conf(101); !strings.Contains(c, "scsi0: tank:vm-101-disk-0,size=1G") {
		t.Errorf("VM 101's config:\n%s", c)
	}
	agree("full clone", map[string]string{"tank/vm-100-disk-0": g1, "tank/vm-101-disk-0": g1})

	onNode(t, lab, "pve01", "qm disk resize 101 scsi0 +1G")
	if c := conf(101); !strings.Contains(c, "scsi0: tank:vm-101-disk-0,size=2G") {
		t.Errorf("VM 101's config after the resize:\n%s", c)
	}
	agree("resize", map[string]string{"tank/vm-100-disk-0": g1, "tank/vm-101-disk-0": g2})
	// K11: shrinking is refused before zfs is asked.
	if r := run(t, lab, "pve01", "qm disk resize 101 scsi0 1G"); r.ExitCode == 0 || !strings.Contains(r.Stderr, "shrinking disks is not supported") {
		t.Errorf("shrink: %+v", r)
	}
	agree("refused shrink", map[string]string{"tank/vm-100-disk-0": g1, "tank/vm-101-disk-0": g2})

	// An offline migration takes the zvol along (storage_migrate): gone
	// from pve01's pool, on pve02's with its size, in pve02's content.
	onNode(t, lab, "pve02", "zpool create tank /dev/nvme0n1")
	onNode(t, lab, "pve01", "qm migrate 101 pve02")
	agree("migrated away", map[string]string{"tank/vm-100-disk-0": g1})
	if got := onNode(t, lab, "pve02", "zfs list -Hp -t volume -o name,volsize"); got != "tank/vm-101-disk-0\t"+g2+"\n" {
		t.Errorf("pve02's zvols after the migration: %q", got)
	}
	var vols2 []map[string]any
	if err := labAPI(lab, "pve02", "/nodes/pve02/storage/tank/content", &vols2); err != nil {
		t.Fatal(err)
	}
	if len(vols2) != 1 || vols2[0]["volid"] != "tank:vm-101-disk-0" || fmt.Sprintf("%.0f", vols2[0]["size"]) != g2 {
		t.Errorf("pve02's tank content after the migration: %v", vols2)
	}
	onNode(t, lab, "pve02", "qm destroy 101")
	if got := onNode(t, lab, "pve02", "zfs list -H -o name -t all"); got != "tank\n" {
		t.Errorf("pve02's datasets after destroying VM 101: %q", got)
	}

	// A template's disk becomes base-100-disk-0 with its __base__ snapshot;
	// a linked clone is a zfs clone of it.
	onNode(t, lab, "pve01", "qm template 100 && qm clone 100 102 --name linked")
	if c := conf(102); !strings.Contains(c, "scsi0: tank:base-100-disk-0/vm-102-disk-0,size=1G") {
		t.Errorf("VM 102's config:\n%s", c)
	}
	agree("template and linked clone", map[string]string{"tank/base-100-disk-0": g1, "tank/vm-102-disk-0": g1})
	if o := strings.TrimSpace(onNode(t, lab, "pve01", "zfs get -H -o value origin tank/vm-102-disk-0")); o != "tank/base-100-disk-0@__base__" {
		t.Errorf("the linked clone's origin: %q", o)
	}

	// Destroying the template while a linked clone uses its base is
	// refused before anything is freed (qemu-server destroy_vm's first
	// check for a template, volume_is_base_and_used): the template, its
	// base volume and its snapshot stay, on the node and in the API.
	r := run(t, lab, "pve01", "qm destroy 100")
	if r.ExitCode == 0 || !strings.Contains(r.Stderr, "base volume 'tank:base-100-disk-0' is still in use by linked cloned") {
		t.Errorf("qm destroy 100 of a template with a linked clone: %+v", r)
	}
	if c := conf(100); !strings.Contains(c, "template: 1") {
		t.Errorf("the refused destroy removed template 100's config:\n%s", c)
	}
	if snaps := onNode(t, lab, "pve01", "zfs list -H -o name -t snapshot"); !slices.Contains(strings.Fields(snaps), "tank/base-100-disk-0@__base__") {
		t.Errorf("the base snapshot went while a clone uses it: %q", snaps)
	}
	agree("template destroy refused under a linked clone", map[string]string{"tank/base-100-disk-0": g1, "tank/vm-102-disk-0": g1})

	onNode(t, lab, "pve01", "qm destroy 102")
	agree("clones destroyed", map[string]string{"tank/base-100-disk-0": g1})
	onNode(t, lab, "pve01", "qm destroy 100")
	agree("template destroyed once unused", map[string]string{})
	if fs := strings.TrimSpace(onNode(t, lab, "pve01", "zfs list -H -o name -t filesystem")); fs != "tank" {
		t.Errorf("filesystems left: %q", fs)
	}
}

package storage

import (
	"errors"
	"reflect"
	"testing"
)

var (
	dirSt  = &Section{ID: "local", Type: "dir", Options: map[string]any{"path": "/var/lib/vz"}}
	nfsSt  = &Section{ID: "nas", Type: "nfs", Options: map[string]any{"server": "s", "export": "/e"}}
	thinSt = &Section{ID: "local-lvm", Type: "lvmthin", Options: map[string]any{"vgname": "pve", "thinpool": "data"}}
	zfsSt  = &Section{ID: "tank", Type: "zfspool", Options: map[string]any{"pool": "tank/vm", "sparse": 1, "blocksize": "16k"}}
)

// parse_volname per plugin: file content types only where there is a
// path, a backup's owner from its vzdump name, images as each plugin names
// them, and each plugin's refusal.
func TestParseVolname(t *testing.T) {
	for _, tc := range []struct {
		st          *Section
		volid, typ  string
		owner       int
		path, error string
	}{
		{dirSt, "local:iso/debian.iso", "iso", 0, "/var/lib/vz/template/iso/debian.iso", ""},
		{dirSt, "local:vztmpl/debian-12.tar.zst", "vztmpl", 0, "/var/lib/vz/template/cache/debian-12.tar.zst", ""},
		{dirSt, "local:backup/vzdump-lxc-105-2025_01_01-00_00_00.tar.zst", "backup", 105, "/var/lib/vz/dump/vzdump-lxc-105-2025_01_01-00_00_00.tar.zst", ""},
		{dirSt, "local:snippets/user.yaml", "snippets", 0, "/var/lib/vz/snippets/user.yaml", ""},
		{dirSt, "local:100/vm-100-disk-0.qcow2", "images", 100, "/var/lib/vz/images/100/vm-100-disk-0.qcow2", ""},
		{nfsSt, "nas:101/vm-101-disk-1.raw", "images", 101, "/mnt/pve/nas/images/101/vm-101-disk-1.raw", ""},
		{thinSt, "local-lvm:vm-100-disk-0", "images", 100, "/dev/pve/vm-100-disk-0", ""},
		{thinSt, "local-lvm:base-100-disk-0/vm-101-disk-0", "images", 101, "/dev/pve/vm-101-disk-0", ""},
		{zfsSt, "tank:vm-102-disk-0", "images", 102, "/dev/zvol/tank/vm/vm-102-disk-0", ""},
		{dirSt, "local:vm-100-disk-0", "", 0, "", "unable to parse directory volume name 'vm-100-disk-0'"},
		{thinSt, "local-lvm:iso/x.iso", "", 0, "", "unable to parse lvm volume name 'iso/x.iso'"},
		{zfsSt, "tank:100/vm-100-disk-0.raw", "", 0, "", "unable to parse zfs volume name '100/vm-100-disk-0.raw'"},
	} {
		r, err := ParseVolname(tc.st, tc.volid)
		if tc.error != "" {
			if err == nil || err.Error() != tc.error {
				t.Errorf("%s: %v, want %q", tc.volid, err, tc.error)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.volid, err)
			continue
		}
		if r.Type != tc.typ || r.Owner != tc.owner || r.Path("raw") != tc.path {
			t.Errorf("%s: type %s owner %d path %s, want %s %d %s", tc.volid, r.Type, r.Owner, r.Path("raw"), tc.typ, tc.owner, tc.path)
		}
	}
	r, _ := ParseVolname(zfsSt, "tank:subvol-103-disk-0")
	if got := r.Path("subvol"); got != "/tank/vm/subvol-103-disk-0" {
		t.Errorf("zfs subvol path %s", got)
	}
}

// find_free_diskname counts the VMID's own volumes on the storage (a
// linked clone's <base>/vm-… included), not another VMID's or storage's.
func TestFreeDiskName(t *testing.T) {
	vols := map[string]*GuestVolume{
		"local-lvm:vm-100-disk-0":                {},
		"local-lvm:base-99-disk-0/vm-100-disk-2": {},
		"local-lvm:vm-101-disk-1":                {},
		"tank:vm-100-disk-1":                     {},
	}
	if got := FreeDiskName(thinSt, vols, 100, "vm", "raw"); got != "vm-100-disk-1" {
		t.Errorf("lvmthin: %s, want vm-100-disk-1", got)
	}
	if got := FreeDiskName(thinSt, vols, 101, "vm", "raw"); got != "vm-101-disk-0" {
		t.Errorf("lvmthin 101: %s", got)
	}
	vols["local-lvm:vm-100-disk-1"] = &GuestVolume{}
	if got := FreeDiskName(thinSt, vols, 100, "vm", "raw"); got != "vm-100-disk-3" {
		t.Errorf("lvmthin after 0-2: %s, want vm-100-disk-3", got)
	}
	// nfs: suffix-sensitive, so a .raw disk-0 leaves n=0 to a qcow2.
	nfsVols := map[string]*GuestVolume{"nas:100/vm-100-disk-0.raw": {}}
	if got := FreeDiskName(nfsSt, nfsVols, 100, "vm", "qcow2"); got != "vm-100-disk-0" {
		t.Errorf("nfs qcow2: %s", got)
	}
	if got := VolName(nfsSt, 100, "vm-100-disk-0", "qcow2"); got != "100/vm-100-disk-0.qcow2" {
		t.Errorf("nfs volume name %s", got)
	}
	if got := VolName(thinSt, 100, "vm-100-disk-0", "raw"); got != "vm-100-disk-0" {
		t.Errorf("lvmthin volume name %s", got)
	}
}

// create_base and clone_image names: vm- → base-, the clone under its base.
func TestBaseAndLinkedClone(t *testing.T) {
	if got := BaseVolid("tank:vm-100-disk-0"); got != "tank:base-100-disk-0" || !IsBase(got) || IsBase("tank:vm-100-disk-0") {
		t.Errorf("base %s", got)
	}
	if !CanLink(zfsSt, "tank:base-100-disk-0") || CanLink(zfsSt, "tank:vm-100-disk-0") {
		t.Errorf("zfspool linking")
	}
	lvm := &Section{ID: "vg", Type: "lvm", Options: map[string]any{"vgname": "vg0"}}
	if CanLink(lvm, "vg:base-100-disk-0") {
		t.Errorf("thick LVM cannot link")
	}
	vols := map[string]*GuestVolume{"tank:base-100-disk-0": {}}
	if volid, name := LinkedClone(zfsSt, vols, "tank:base-100-disk-0", 101); volid != "tank:base-100-disk-0/vm-101-disk-0" || name != "vm-101-disk-0" {
		t.Errorf("zfs clone %s %s", volid, name)
	}
	if volid, _ := LinkedClone(dirSt, nil, "local:100/base-100-disk-0.qcow2", 101); volid != "local:100/base-100-disk-0.qcow2/101/vm-101-disk-0.qcow2" {
		t.Errorf("dir clone %s", volid)
	}
}

// The zfs commands ZFSPoolPlugin runs: KiB sizes, -s/-b from the storage,
// a raw zvol's new size rounded up to 1 MiB, a subvol's refquota.
func TestZFSArgs(t *testing.T) {
	if got := ZvolCreate(zfsSt, "vm-100-disk-0", 1<<30); !reflect.DeepEqual(got, []string{"create", "-s", "-b", "16k", "-V", "1048576k", "tank/vm/vm-100-disk-0"}) {
		t.Errorf("zvol %v", got)
	}
	if got := SubvolCreate(zfsSt, "subvol-100-disk-0", 0); got[len(got)-2] != "refquota=none" {
		t.Errorf("subvol %v", got)
	}
	if got := Resize(zfsSt, "vm-100-disk-0", "raw", 1<<30+4096); got[1] != "volsize=1049600k" {
		t.Errorf("resize %v", got)
	}
	if got := Resize(zfsSt, "subvol-100-disk-0", "subvol", 8<<30); got[1] != "refquota=8388608k" {
		t.Errorf("subvol resize %v", got)
	}
}

// check_volume_access without a VM context: Datastore.Allocate opens all;
// templates need read access, backups AllocateSpace and VM.Backup, images
// Audit and VM.Config.Disk, each refusal naming what is missing.
func TestCheckVolumeAccess(t *testing.T) {
	grant := func(held ...string) Privs {
		return func(path string, privs []string, any bool) bool {
			n := 0
			for _, p := range privs {
				for _, h := range held {
					if h == path+" "+p {
						n++
					}
				}
			}
			return n == len(privs) || any && n > 0
		}
	}
	ref := func(volid string) *VolRef {
		r, err := ParseVolname(dirSt, volid)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tc := range []struct {
		volid  string
		held   []string
		denied string
	}{
		{"local:iso/x.iso", []string{"/storage/local Datastore.Allocate"}, ""},
		{"local:iso/x.iso", []string{"/storage/local Datastore.Audit"}, ""},
		{"local:iso/x.iso", nil, "/storage/local, Datastore.AllocateSpace|Datastore.Audit"},
		{"local:backup/vzdump-qemu-100-2025_01_01-00_00_00.vma.zst", []string{"/storage/local Datastore.AllocateSpace"}, "/vms/100, VM.Backup"},
		{"local:backup/vzdump-qemu-100-2025_01_01-00_00_00.vma.zst", []string{"/storage/local Datastore.AllocateSpace", "/vms/100 VM.Backup"}, ""},
		{"local:100/vm-100-disk-0.qcow2", []string{"/storage/local Datastore.Audit"}, "/vms/100, VM.Config.Disk"},
		{"local:100/vm-100-disk-0.qcow2", []string{"/vms/100 VM.Config.Disk"}, "/storage/local, Datastore.Audit"},
	} {
		err := CheckVolumeAccess(grant(tc.held...), ref(tc.volid))
		var d *DeniedError
		switch {
		case tc.denied == "" && err != nil:
			t.Errorf("%s with %v: %v", tc.volid, tc.held, err)
		case tc.denied != "" && (!errors.As(err, &d) || d.Detail != tc.denied):
			t.Errorf("%s with %v: %v, want denied %q", tc.volid, tc.held, err, tc.denied)
		}
	}
	if err := CheckVolumeAccess(grant(), ref("local:snippets/x.yaml")); err == nil || err.Error() != "missing privileges to access local:snippets/x.yaml" {
		t.Errorf("snippets: %v", err)
	}
}

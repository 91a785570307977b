package qemu

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/apischema"
	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

func TestNetRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		want    Net
	}{
		{"virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1,tag=10", "",
			Net{Model: "virtio", MAC: "BC:24:11:2A:3B:4C", Bridge: "vmbr0", Tag: 10, Firewall: Ptr(true)}},
		{"virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=0,link_down=1,mtu=1,queues=4,rate=12.5,trunks=10;20-30", "",
			Net{Model: "virtio", MAC: "BC:24:11:2A:3B:4C", Bridge: "vmbr0", Firewall: Ptr(false), LinkDown: Ptr(true), MTU: 1,
				Queues: Ptr(4), Rate: Ptr(12.5), Trunks: "10;20-30"}},
		{"e1000,bridge=vmbr1", "", Net{Model: "e1000", Bridge: "vmbr1"}},
		{"model=virtio,macaddr=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=yes", "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1",
			Net{Model: "virtio", MAC: "BC:24:11:2A:3B:4C", Bridge: "vmbr0", Firewall: Ptr(true)}},
		{"virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,host-tunnel=1", "",
			Net{Model: "virtio", MAC: "BC:24:11:2A:3B:4C", Bridge: "vmbr0", Other: pveformat.Props{{Key: "host-tunnel", Value: "1"}}}},
	} {
		n, err := ParseNet("net0", tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !reflect.DeepEqual(n, tc.want) {
			t.Errorf("ParseNet(%q) = %+v, want %+v", tc.in, n, tc.want)
		}
		out, err := n.Render()
		want := tc.out
		if want == "" {
			want = tc.in
		}
		if err != nil || out != want {
			t.Errorf("Render = %q, %v; want %q", out, err, want)
		}
	}
	if _, err := ParseNet("net0", "virtio,tag=ten"); err == nil || !strings.Contains(err.Error(), "net0: tag") {
		t.Errorf("a non-integer tag: %v", err)
	}
}

// TestNetMACKept: K16 — changing the bridge and VLAN of a parsed NIC keeps
// its MAC and the keys we do not model.
func TestNetMACKept(t *testing.T) {
	n, _ := ParseNet("net0", "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,host-tunnel=1")
	n.Bridge, n.Tag = "vmbr1", 20
	out, _ := n.Render()
	if out != "virtio=BC:24:11:2A:3B:4C,bridge=vmbr1,host-tunnel=1,tag=20" {
		t.Errorf("got %q", out)
	}
}

func TestDriveRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		want    Drive
	}{
		{"local-lvm:vm-201-disk-0,cache=writeback,discard=on,iothread=1,size=32G", "",
			Drive{File: "local-lvm:vm-201-disk-0", Cache: "writeback", Discard: "on", IOThread: Ptr(true), Size: 32 << 30}},
		{"local:iso/debian-12.iso,media=cdrom,size=628M", "", Drive{File: "local:iso/debian-12.iso", Media: "cdrom", Size: 628 << 20}},
		{"local-lvm:vm-201-cloudinit,media=cdrom", "", Drive{File: "local-lvm:vm-201-cloudinit", Media: "cdrom"}},
		{"volume=tank:vm-201-disk-1,size=1024M,ssd=on,replicate=0", "tank:vm-201-disk-1,replicate=0,size=1G,ssd=1",
			Drive{File: "tank:vm-201-disk-1", Size: 1 << 30, SSD: Ptr(true), Replicate: Ptr(false)}},
		{"local-lvm:vm-201-disk-2,efitype=4m,pre-enrolled-keys=1,size=4M", "",
			Drive{File: "local-lvm:vm-201-disk-2", Size: 4 << 20, Other: pveformat.Props{{Key: "efitype", Value: "4m"}, {Key: "pre-enrolled-keys", Value: "1"}}}},
		{"local-lvm:32", "", Drive{File: "local-lvm:32"}},
	} {
		d, err := ParseDrive("scsi0", tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if !reflect.DeepEqual(d, tc.want) {
			t.Errorf("ParseDrive(%q) = %+v, want %+v", tc.in, d, tc.want)
		}
		out, err := d.Render()
		want := tc.out
		if want == "" {
			want = tc.in
		}
		if err != nil || out != want {
			t.Errorf("Render = %q, %v; want %q", out, err, want)
		}
	}
	if _, err := ParseDrive("scsi1", "local-lvm:vm-201-disk-1,size=10GB"); err == nil || !strings.Contains(err.Error(), "scsi1: size") {
		t.Errorf("a size PVE cannot parse (issue 17): %v", err)
	}
	d, _ := ParseDrive("ide2", "local-lvm:vm-201-cloudinit,media=cdrom")
	if !d.IsCloudInit() || !d.IsCDROM() {
		t.Error("the cloud-init drive is a CD-ROM and cloud-init")
	}
	if st, gib, ok := NewDisk("local-lvm", 32).Allocation(); !ok || st != "local-lvm" || gib != 32 {
		t.Errorf("allocation %s %v %v", st, gib, ok)
	}
	if _, _, ok := (Drive{File: "local-lvm:vm-201-disk-0"}).Allocation(); ok {
		t.Error("a volume is no allocation")
	}
	if v, err := ParseUnused("unused0", "local-lvm:vm-201-disk-3"); err != nil || v != "local-lvm:vm-201-disk-3" {
		t.Errorf("unused %q %v", v, err)
	}
}

// K12: ipconfigN checked as qemu-server's pve-qm-ipconfig format before
// anything is sent.
func TestIPConfig(t *testing.T) {
	for _, tc := range []struct {
		in, out, err string
	}{
		{in: "ip=10.0.0.5/24,gw=10.0.0.1", out: "gw=10.0.0.1,ip=10.0.0.5/24"},
		{in: "ip=dhcp", out: "ip=dhcp"},
		{in: "ip6=auto", out: "ip6=auto"},
		{in: "ip=10.0.0.5/24,ip6=fd00::5/64,gw6=fd00::1", out: "gw6=fd00::1,ip=10.0.0.5/24,ip6=fd00::5/64"},
		{in: "ip=10.0.0.5", err: "ipconfig0: ip: value does not look like a valid ipv4 network configuration"},
		{in: "ip=10.0.0.5/24,gw=fd00::1", err: "ipconfig0: gw: value does not look like a valid IPv4 address"},
		{in: "gw=10.0.0.1", err: "gateway specified without specifying an IP address"},
		{in: "ip=dhcp,gw=10.0.0.1", err: "gateway specified together with DHCP"},
		{in: "ip6=auto,gw6=fd00::1", err: "IPv6 gateway specified together with auto address"},
		{in: "ip=10.0.0.5/24,dns=1.1.1.1", err: "invalid key in comma-separated list property: dns"},
	} {
		c, err := ParseIPConfig("ipconfig0", tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseIPConfig(%q) = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if out, _ := c.Render(); out != tc.out {
			t.Errorf("Render(%q) = %q, want %q", tc.in, out, tc.out)
		}
	}
	if e := (IPConfig{}).Effective(); e.IP != "dhcp" || e.IP6 != "dhcp" {
		t.Errorf("no address means DHCP on both: %+v", e)
	}
}

func TestAgentBootSSHKeys(t *testing.T) {
	for in, out := range map[string]string{"1": "1", "enabled=1,fstrim_cloned_disks=1": "1,fstrim_cloned_disks=1",
		"0": "0", "1,type=isa,freeze-fs-on-backup=0": "1,freeze-fs-on-backup=0,type=isa"} {
		a, err := ParseAgent(in)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := a.Render(); got != out {
			t.Errorf("agent %q → %q, want %q", in, got, out)
		}
	}
	b, err := ParseBoot("order=scsi0;ide2;net0")
	if err != nil || !slices.Equal(b.Order, []string{"scsi0", "ide2", "net0"}) {
		t.Fatalf("%+v %v", b, err)
	}
	if s, _ := b.Render(); s != "order=scsi0;ide2;net0" {
		t.Errorf("boot %q", s)
	}
	if s, _ := (Boot{Legacy: "cdn"}).Render(); s != "cdn" {
		t.Errorf("legacy boot %q", s)
	}
	keys := []string{"ssh-ed25519 AAAAC3Nza alice@host", "ssh-rsa AAAAB3+/= bob"}
	enc := EncodeSSHKeys(keys)
	if err := pveformat.CheckFormat("urlencoded", enc); err != nil {
		t.Errorf("K12: %v", err)
	}
	if got := DecodeSSHKeys(enc + "%0A%0A"); !slices.Equal(got, keys) {
		t.Errorf("decoded %q", got)
	}
}

func TestConfigAndPending(t *testing.T) {
	c := ConfigFrom(map[string]any{"digest": "d1", "cores": float64(4), "net0": "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0",
		"scsi0": "local-lvm:vm-201-disk-0,size=32G", "unused0": "local-lvm:vm-201-disk-9", "template": float64(1),
		"ipconfig0": "ip=dhcp", "sshkeys": "ssh-ed25519%20AAAA"})
	if c.Digest != "d1" || c.Values["cores"] != "4" || !c.Template() {
		t.Errorf("%+v", c)
	}
	macs, _ := c.MACs()
	disks, _ := c.Disks()
	unused, _ := c.Unused()
	if macs["net0"] != "BC:24:11:2A:3B:4C" || disks["scsi0"].Size != 32<<30 || unused["unused0"] != "local-lvm:vm-201-disk-9" || len(disks) != 1 {
		t.Errorf("macs %v disks %v unused %v", macs, disks, unused)
	}
	if _, ok, _ := c.Agent(); ok {
		t.Error("no agent key: not configured (K20)")
	}
	if b, _ := c.Boot(); b.Legacy != "cdn" {
		t.Errorf("default boot %+v", b)
	}
	if k := c.SSHKeys(); len(k) != 1 || k[0] != "ssh-ed25519 AAAA" {
		t.Errorf("sshkeys %q", k)
	}

	p := Pending{Items: []PendingItem{
		{Key: "cores", Value: "2", HasValue: true, Pending: "4", HasPending: true},
		{Key: "memory", Value: "2048", HasValue: true},
		{Key: "net1", Value: "virtio=BC:24:11:2A:3B:4D,bridge=vmbr0", HasValue: true, Delete: 1},
		{Key: "net2", Pending: "virtio,bridge=vmbr1", HasPending: true},
	}}
	live, next := p.Live(), p.Next()
	if live.Values["cores"] != "2" || next.Values["cores"] != "4" || live.Values["net1"] == "" || next.Values["net1"] != "" ||
		live.Values["net2"] != "" || next.Values["net2"] == "" || next.Values["memory"] != "2048" {
		t.Errorf("live %v next %v", live.Values, next.Values)
	}
	var changed []string
	for _, it := range p.Changes() {
		changed = append(changed, it.Key)
	}
	if !slices.Equal(changed, []string{"cores", "net1", "net2"}) {
		t.Errorf("changes %v", changed)
	}
}

// TestShapesMatchSchema: the shapes written here from qemu-server's
// formats agree with the official schema of PVE 8 and 9 (default key,
// aliases), and every boolean and size key the schema has is normalised.
func TestShapesMatchSchema(t *testing.T) {
	for _, v := range apischema.Versions {
		tb, _ := apischema.For(v)
		m := tb.Method("PUT", ConfigPath)
		for key, ours := range map[string]pveformat.Shape{"net0": netShape, "scsi0": driveShape, "efidisk0": driveShape,
			"tpmstate0": driveShape, "agent": agentShape, "unused0": unusedShape, "boot": bootShape, "ipconfig0": {}} {
			p, ok := m.Param(key)
			if !ok {
				t.Fatalf("PVE %d: no %s", v, key)
			}
			theirs := p.Shape()
			if theirs.DefaultKey != ours.DefaultKey {
				t.Errorf("PVE %d %s: default key %q, schema %q", v, key, ours.DefaultKey, theirs.DefaultKey)
			}
			for k, a := range theirs.Aliases {
				if key == "agent" && (k == "freeze-fs-on-backup" || k == "guest-fsfreeze") {
					continue // kept verbatim: an alias on PVE 9 only (agentShape)
				}
				if ours.Aliases[k] != a {
					t.Errorf("PVE %d %s: alias %s = %+v, schema %+v", v, key, k, ours.Aliases[k], a)
				}
			}
			for _, b := range theirs.Booleans {
				if !slices.Contains(ours.Booleans, b) {
					t.Errorf("PVE %d %s: boolean %s not normalised", v, key, b)
				}
			}
			for _, s := range theirs.Sizes {
				if !slices.Contains(ours.Sizes, s) {
					t.Errorf("PVE %d %s: size %s not formatted", v, key, s)
				}
			}
		}
	}
}

func TestRequests(t *testing.T) {
	u := Update{Node: "pve01", VMID: 201, Digest: "abc", Delete: []string{"net2", "ide2"}}
	n, _ := ParseNet("net0", "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0")
	n.Tag = 30
	if err := u.SetTyped("net0", n); err != nil {
		t.Fatal(err)
	}
	u.SetValue("sshkeys", EncodeSSHKeys([]string{"ssh-ed25519 AAAA a@b"}))
	r := u.Request()
	if r.Path != "/nodes/pve01/qemu/201/config" || r.Params.Get("delete") != "ide2,net2" || r.Params.Get("digest") != "abc" {
		t.Errorf("%+v", r)
	}
	for _, v := range apischema.Versions {
		if err := r.Validate(v); err != nil {
			t.Errorf("PVE %d: %v", v, err)
		}
	}
	bad := Update{Node: "pve01", VMID: 201, Set: map[string]string{"net0": "virtio,bridge=vmbr0,speed=10"}}
	if err := bad.Request().Validate(9); err == nil || !strings.Contains(err.Error(), "parameter 'net0'") {
		t.Errorf("unknown NIC key: %v", err)
	}
	c := Clone{Node: "pve01", VMID: 9000, NewID: 201, Name: "web", Target: "pve02", Full: Ptr(true), Storage: "local-lvm"}.Request()
	if c.Path != "/nodes/pve01/qemu/9000/clone" || c.Params.Get("target") != "pve02" || c.Params.Get("full") != "1" {
		t.Errorf("%+v", c)
	}
	if h := c.Task; h == nil || h.Node != "pve01" || h.ID != "9000" || h.Types[0] != "qmclone" {
		t.Errorf("the clone's task is a qmclone on the template's node for the template's VMID: %+v", h)
	}
	if u.Request().Task != nil || u.AsyncRequest().Task.Types[0] != "qmconfig" {
		t.Error("PUT config is synchronous, POST a qmconfig task")
	}
	if same := (Clone{Node: "pve01", VMID: 9000, NewID: 201, Target: "pve01"}).Request(); same.Params.Has("target") {
		t.Error("K2: target is omitted when it is the template's node")
	}
	for _, r := range []apischema.Request{c, Create("pve01", 202, map[string]string{"scsi0": "local-lvm:32", "net0": "virtio,bridge=vmbr0"}),
		Resize("pve01", 201, "scsi0", 40<<30, ""), Power("pve01", 201, "start"), Destroy("pve01", 201, true)} {
		for _, v := range apischema.Versions {
			if err := r.Validate(v); err != nil {
				t.Errorf("PVE %d %s: %v", v, r, err)
			}
		}
	}
}

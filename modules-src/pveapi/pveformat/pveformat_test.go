package pveformat

import (
	"strings"
	"testing"
)

var netShape = Shape{DefaultKey: "model", Booleans: []string{"firewall", "link_down"},
	Aliases: map[string]Alias{"virtio": {To: "macaddr", NameIn: "model"}, "e1000": {To: "macaddr", NameIn: "model"}}}

var driveShape = Shape{DefaultKey: "file", Booleans: []string{"iothread", "ssd", "backup"}, Sizes: []string{"size"},
	Aliases: map[string]Alias{"volume": {To: "file"}}}

// TestRoundTrip: what PVE prints parses and prints back unchanged, unknown
// keys included; other spellings print as PVE would store them.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		shape Shape
		in    string
		out   string // "" = same as in
		get   map[string]string
	}{
		{"net with MAC alias", netShape, "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1,tag=10", "",
			map[string]string{"model": "virtio", "macaddr": "BC:24:11:2A:3B:4C", "tag": "10"}},
		{"net model only", netShape, "e1000,bridge=vmbr1", "", map[string]string{"model": "e1000"}},
		{"net unknown key kept (K16: nothing dropped)", netShape, "virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,host-tunnel=1", "",
			map[string]string{"host-tunnel": "1"}},
		{"net spelled out, booleans on/off", netShape, "bridge=vmbr0,macaddr=BC:24:11:2A:3B:4C,model=virtio,firewall=on,link_down=no",
			"virtio=BC:24:11:2A:3B:4C,bridge=vmbr0,firewall=1,link_down=0", map[string]string{"firewall": "1", "link_down": "0"}},
		{"drive", driveShape, "local-lvm:vm-100-disk-0,cache=writeback,discard=on,iothread=1,size=32G", "",
			map[string]string{"file": "local-lvm:vm-100-disk-0", "size": "32G"}},
		{"drive volume alias, size normalised", driveShape, "volume=local:iso/d.iso,media=cdrom,size=1024M",
			"local:iso/d.iso,media=cdrom,size=1G", map[string]string{"file": "local:iso/d.iso"}},
		{"drive size in bytes", driveShape, "local-lvm:vm-100-disk-1,size=1536", "", map[string]string{"size": "1536"}},
		{"no default key", Shape{}, "ip=10.0.0.5/24,gw=10.0.0.1", "gw=10.0.0.1,ip=10.0.0.5/24", map[string]string{"ip": "10.0.0.5/24"}},
		{"empty parts skipped", Shape{}, "ip=dhcp,,", "ip=dhcp", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse(tc.in, tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			for k, want := range tc.get {
				if got, _ := p.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
			out, err := Print(p, tc.shape)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.out
			if want == "" {
				want = tc.in
			}
			if out != want {
				t.Errorf("printed %q, want %q", out, want)
			}
			again, _ := Parse(out, tc.shape)
			if o2, _ := Print(again, tc.shape); o2 != out {
				t.Errorf("second round trip %q != %q", o2, out)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		in    string
		want  string
	}{
		{netShape, "virtio,e1000", "duplicate key in comma-separated list property: model"},
		{netShape, "bridge=a,bridge=b", "duplicate key in comma-separated list property: bridge"},
		{netShape, "model=virtio,virtio=BC:24:11:2A:3B:4C", "key alias 'model' is already defined"},
		{netShape, "macaddr=BC:24:11:2A:3B:4C,virtio=BC:24:11:2A:3B:4D", "key 'macaddr' is already defined (via alias)"},
		{Shape{}, "dhcp", "value without key, but schema does not define a default key"},
		{Shape{}, "ip=", "missing key in comma-separated list property"},
	} {
		_, err := Parse(tc.in, tc.shape)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	if _, err := Print(Props{{"comment", "a,b"}}, Shape{}); err == nil || !strings.Contains(err.Error(), "illegal value with commas for comment") {
		t.Errorf("a comma in a value printed: %v", err)
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		in    string
		bytes int64
		out   string
	}{
		{"32G", 32 << 30, "32G"}, {"32GiB", 32 << 30, "32G"}, {"1024M", 1 << 30, "1G"}, {"1.5G", 1536 << 20, "1536M"},
		{"512", 512, "512"}, {"4K", 4096, "4K"}, {"2T", 2 << 40, "2T"}, {"0", 0, "0T"}, {"1536", 1536, "1536"},
	} {
		n, err := ParseSize(tc.in)
		if err != nil || n != tc.bytes {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tc.in, n, err, tc.bytes)
		}
		if got := FormatSize(n); got != tc.out {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, tc.out)
		}
	}
	for _, bad := range []string{"", "10 G", "10g", "-1G", "1.G", "10GB", "G"} {
		if _, err := ParseSize(bad); err == nil || !strings.Contains(err.Error(), "valid disk size") {
			t.Errorf("ParseSize(%q) accepted: %v", bad, err)
		}
	}
}

func TestFormats(t *testing.T) {
	for _, tc := range []struct {
		format, value string
		ok            bool
	}{
		{"pve-ipv4-config", "dhcp", true}, {"pve-ipv4-config", "manual", true}, {"pve-ipv4-config", "10.0.0.5/24", true},
		{"pve-ipv4-config", "10.0.0.5", false}, {"pve-ipv4-config", "10.0.0.5/7", false}, {"pve-ipv4-config", "10.0.0.5/33", false},
		{"pve-ipv4-config", "auto", false}, {"pve-ipv4-config", "010.0.0.5/24", false},
		{"pve-ipv6-config", "auto", true}, {"pve-ipv6-config", "fd00::5/64", true}, {"pve-ipv6-config", "fd00::5", false},
		{"ipv4", "10.0.0.1", true}, {"ipv4", "fd00::1", false}, {"ipv6", "fd00::1", true}, {"ipv6", "fe80::1%eth0", false},
		{"mac-addr", "BC:24:11:2A:3B:4C", true}, {"mac-addr", "01:24:11:2A:3B:4C", false}, {"mac-addr", "BC-24-11-2A-3B-4C", false},
		{"pve-vmid", "201", true}, {"pve-vmid", "99", false}, {"pve-vmid", "0201", false},
		{"pve-replication-job-id", "201-0", true}, {"pve-replication-job-id", "099-1", false}, {"pve-replication-job-id", "201", false},
		{"pve-ha-resource-id", "vm:201", true}, {"pve-ha-resource-id", "201", false}, {"pve-ha-resource-or-vm-id", "201", true},
		{"pve-ha-node-list", "pve01:2,pve02", true}, {"pve-ha-node-list", "pve01:x", false},
		{"pve-node-list", "pve01,pve02", true}, {"pve-node-list", "pve01,-x", false},
		{"disk-size", "32G", true}, {"disk-size", "32GB", false},
		{"urlencoded", "ssh-ed25519%20AAAA%0A", true}, {"urlencoded", "ssh-ed25519 AAAA", false},
		{"pve-calendar-event", "*/15", true}, {"pve-calendar-event", "mon..fri 02:30", true}, {"pve-calendar-event", "sat 1..3:00/20 UTC", true},
		{"pve-calendar-event", "weekly", true}, {"pve-calendar-event", "every 15 minutes", false}, {"pve-calendar-event", "*/60", false},
		{"pve-calendar-event", "", false}, {"pve-calendar-event", "mon-fri", false},
		{"some-format-we-do-not-know", "anything", true},
	} {
		err := CheckFormat(tc.format, tc.value)
		if (err == nil) != tc.ok {
			t.Errorf("CheckFormat(%s, %q) = %v, want ok=%v", tc.format, tc.value, err, tc.ok)
		}
	}
}

// TestURLEncoding: K12 — sshkeys go to PVE URL-encoded in the set the
// "urlencoded" format allows, and come back decoded as uri_unescape does.
func TestURLEncoding(t *testing.T) {
	keys := "ssh-ed25519 AAAAC3Nza+/= alice@host\nssh-rsa AAAAB3 bob"
	enc := EncodeURL(keys)
	if want := "ssh-ed25519%20AAAAC3Nza%2B%2F%3D%20alice%40host%0Assh-rsa%20AAAAB3%20bob"; enc != want {
		t.Errorf("EncodeURL = %q, want %q", enc, want)
	}
	if err := CheckFormat("urlencoded", enc); err != nil {
		t.Errorf("the encoding is refused by PVE's format: %v", err)
	}
	if dec := DecodeURL(enc); dec != keys {
		t.Errorf("DecodeURL = %q", dec)
	}
	if dec := DecodeURL("a+b%2x%41%"); dec != "a+b%2xA%" {
		t.Errorf("uri_unescape keeps what is not %%XX: %q", dec)
	}
}

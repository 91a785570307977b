package zfs

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

// The seed's real output (scan line included), -P form.
const seedStatus = `  pool: nvme-vm
 state: ONLINE
  scan: scrub repaired 0B in 00:00:11 with 0 errors on Sun Aug  9 00:24:12 2026
config:

	NAME                                                         STATE     READ WRITE CKSUM
	nvme-vm                                                      ONLINE       0     0     0
	  /dev/disk/by-id/nvme-eui.0000000624aabbccddeeff0011-part1  ONLINE       0     0     0

errors: No known data errors
`

const mirrorWithLogs = `  pool: tank
 state: DEGRADED
config:

	NAME                                    STATE     READ WRITE CKSUM
	tank                                    DEGRADED     0     0     0
	  mirror-0                              DEGRADED     0     0     0
	    /dev/disk/by-id/wwn-0x1-part1       ONLINE       0     0     0
	    /dev/disk/by-id/wwn-0x2-part1       UNAVAIL      0     0     0
	  mirror-1                              ONLINE       0     0     0
	    /dev/disk/by-id/wwn-0x3-part1       ONLINE       0     0     0
	    /dev/disk/by-id/wwn-0x4-part1       ONLINE       0     0     0
	logs
	  /dev/disk/by-id/nvme-eui.9-part1      ONLINE       0     0     0
	cache
	  /dev/disk/by-id/nvme-eui.8-part1      ONLINE       0     0     0

errors: No known data errors
`

func TestParseStatus(t *testing.T) {
	cases := []struct {
		name   string
		in     string
		layout string
		leaves []string
		state  string
	}{
		{"seed single", seedStatus, "single", []string{"/dev/disk/by-id/nvme-eui.0000000624aabbccddeeff0011-part1"}, "ONLINE"},
		{"mirrors with log and cache", mirrorWithLogs, "mirror",
			[]string{"/dev/disk/by-id/wwn-0x1-part1", "/dev/disk/by-id/wwn-0x2-part1", "/dev/disk/by-id/wwn-0x3-part1", "/dev/disk/by-id/wwn-0x4-part1"}, "DEGRADED"},
		{"raidz legacy name", "  pool: r\n state: ONLINE\nconfig:\n\n\tNAME STATE\n\tr ONLINE\n\t  raidz-0 ONLINE\n\t    /dev/sda ONLINE\n\t    /dev/sdb ONLINE\n", "raidz1", []string{"/dev/sda", "/dev/sdb"}, "ONLINE"},
		{"stripe", "  pool: s\n state: ONLINE\nconfig:\n\n\tNAME STATE\n\ts ONLINE\n\t  /dev/sda ONLINE\n\t  /dev/sdb ONLINE\n", "stripe", []string{"/dev/sda", "/dev/sdb"}, "ONLINE"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := ParseStatus(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if st.Layout() != c.layout || !reflect.DeepEqual(st.Leaves(), c.leaves) || st.State != c.state {
				t.Errorf("got layout %s leaves %q state %s", st.Layout(), st.Leaves(), st.State)
			}
		})
	}
	if _, err := ParseStatus("garbage"); err == nil {
		t.Error("garbage parsed")
	}
}

func TestParseUsageAndProps(t *testing.T) {
	u, err := ParseUsage("1056964608\t454656\t1056509952\tONLINE\n")
	if err != nil || u != (Usage{1056964608, 454656, 1056509952, "ONLINE"}) {
		t.Errorf("usage = %+v %v", u, err)
	}
	if _, err := ParseUsage("1008M\t444K\tONLINE\n"); err == nil {
		t.Error("non -p output accepted")
	}
	p, err := ParseProps("mountpoint\t/nvme-vm\tlocal\ncompression\tlz4\tlocal\nchecksum\ton\tdefault\n")
	if err != nil || p["mountpoint"] != (Prop{"/nvme-vm", "local"}) || p["checksum"].Source != "default" {
		t.Errorf("props = %v %v", p, err)
	}
	if _, err := ParseProps("NAME  PROPERTY  VALUE  SOURCE\n"); err == nil {
		t.Error("header-style output accepted")
	}
}

const poolLine = "zpool list -H -p -o name,size,alloc,free,health,ashift nvme-vm"

// TestExists: Z1 — "no such pool" means absent, any other failure is an error.
func TestExists(t *testing.T) {
	cases := []struct {
		reply   hosttest.Reply
		want    bool
		wantErr bool
	}{
		{hosttest.Reply{Stdout: "nvme-vm\t511101108224\t470220800\t510630887424\tONLINE\t12\n"}, true, false},
		{hosttest.Reply{Exit: 1, Stderr: "cannot open 'nvme-vm': no such pool\n"}, false, false},
		{hosttest.Reply{Exit: 1, Stderr: "The ZFS modules are not loaded.\n"}, false, true},
		{hosttest.Reply{Stdout: "nvme-vm\n"}, false, true}, // not the columns asked for
		// a pool zfs cannot open still exists (Z1: never created again)
		{hosttest.Reply{Stdout: "nvme-vm\t-\t-\t-\tUNAVAIL\t12\n"}, true, false},
		{hosttest.Reply{Stdout: "nvme-vm\tbig\t0\t0\tONLINE\t12\n"}, false, true},
	}
	for _, c := range cases {
		f := hosttest.New().On(poolLine, c.reply)
		got, err := Client{Runner: f}.Exists(context.Background(), "nvme-vm")
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%+v: got %v, %v", c.reply, got, err)
		}
	}
}

// TestPool: existence, capacity, health and ashift come from one command.
func TestPool(t *testing.T) {
	f := hosttest.New().On(poolLine, hosttest.Reply{Stdout: "nvme-vm\t511101108224\t470220800\t510630887424\tDEGRADED\t12\n"})
	info, found, err := Client{Runner: f}.Pool(context.Background(), "nvme-vm")
	want := PoolInfo{Usage: Usage{511101108224, 470220800, 510630887424, "DEGRADED"}, Ashift: "12"}
	if err != nil || !found || info != want {
		t.Errorf("got %+v %v %v, want %+v", info, found, err, want)
	}
	if calls := f.Calls(); len(calls) != 1 {
		t.Errorf("calls = %q, want one zpool list", calls)
	}
}

// TestMemo: before Stop a read runs once however often it is asked; after
// Stop every read runs on the node, and what was remembered before is gone
// (a Verify after an Apply must see the node, not the memo).
func TestMemo(t *testing.T) {
	ctx := context.Background()
	health := "ONLINE"
	f := hosttest.New().OnFunc(poolLine, func(host.Command) hosttest.Reply {
		return hosttest.Reply{Stdout: "nvme-vm\t1\t0\t1\t" + health + "\t12\n"}
	})
	f.On("zpool list -H -p -o name,size,alloc,free,health,ashift gone", hosttest.Reply{Exit: 1, Stderr: "cannot open 'gone': no such pool\n"})
	f.On("zpool list -H -p -o name,size,alloc,free,health,ashift broken", hosttest.Reply{Exit: -1})
	memo := NewMemo()
	c := Client{Runner: f, Memo: memo}
	for range 3 {
		if info, _, err := c.Pool(ctx, "nvme-vm"); err != nil || info.Health != "ONLINE" {
			t.Fatalf("read: %+v %v", info, err)
		}
		if ok, err := c.Exists(ctx, "gone"); ok || err != nil {
			t.Fatalf("gone: %v %v", ok, err)
		}
		c.Exists(ctx, "broken")
	}
	if got := count(f.Calls(), "nvme-vm"); got != 1 {
		t.Errorf("before Stop: the pool was read %d times, want 1", got)
	}
	if got := count(f.Calls(), "gone"); got != 1 {
		t.Errorf("an absent pool is an answer, remembered: read %d times, want 1", got)
	}
	if got := count(f.Calls(), "broken"); got != 3 {
		t.Errorf("a command that could not run is not an answer: ran %d times, want 3", got)
	}

	health = "DEGRADED" // what an Apply would change on the node
	memo.Stop()
	for i := range 2 {
		info, _, err := c.Pool(ctx, "nvme-vm")
		if err != nil || info.Health != "DEGRADED" {
			t.Fatalf("after Stop, read %d: %+v %v (stale answer from the memo)", i, info, err)
		}
	}
	if got := count(f.Calls(), "nvme-vm"); got != 3 {
		t.Errorf("after Stop: the pool was read %d times in all, want 1 + 2", got)
	}
	var nilMemo *Memo
	nilMemo.Stop() // a Client without a memo may be stopped too
}

func count(calls []string, suffix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasSuffix(c, " "+suffix) {
			n++
		}
	}
	return n
}

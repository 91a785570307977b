package zfs

import (
	"context"
	"reflect"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

// Outputs of `zpool list -v -P -p -o name,size,alloc,free,health,ashift
// POOL` in the shapes of OpenZFS's print_header, print_pool and
// print_list_stats (cmd/zpool/zpool_main.c): the -o columns on the pool's
// line, the fixed SIZE ALLOC FREE CKPOINT EXPANDSZ FRAG CAP DEDUP HEALTH on
// each vdev's, names indented by depth and padded to the widest (at least
// 9), class lines of dashes at depth 0.
const (
	// the seed's pool: one disk, which ZFS partitioned (-part1)
	treeSingle = `NAME                                                           SIZE      ALLOC           FREE  HEALTH  ASHIFT
nvme-vm                                                511101108224  470220800   510630887424  ONLINE      12
  /dev/disk/by-id/nvme-eui.0000000624aabbccddeeff0011-part1  512110190592  470220800  510630887424        -         -      0      0      -    ONLINE
`
	// two mirrors, one disk unavailable, a log and a cache device
	treeMirrorsLogsCache = `NAME                                        SIZE          ALLOC           FREE    HEALTH  ASHIFT
tank                               3985729650688  798863917056  3186865733632  DEGRADED      12
  mirror-0                         1992864825344  399431958528  1593432866816        -         -      2     20      -  DEGRADED
    /dev/disk/by-id/wwn-0x1-part1  2000381018112      -      -        -         -      -      -      -    ONLINE
    /dev/disk/by-id/wwn-0x2-part1              -      -      -        -         -      -      -      -   UNAVAIL
  mirror-1                         1992864825344  399431958528  1593432866816        -         -      2     20      -    ONLINE
    /dev/disk/by-id/wwn-0x3-part1  2000381018112      -      -        -         -      -      -      -    ONLINE
    /dev/disk/by-id/wwn-0x4-part1  2000381018112      -      -        -         -      -      -      -    ONLINE
logs                                   -      -      -        -         -      -      -      -         -
  /dev/disk/by-id/nvme-eui.9-part1    16642998272  4096  16642994176        -         -      0      0      -    ONLINE
cache                                  -      -      -        -         -      -      -      -         -
  /dev/disk/by-id/nvme-eui.8-part1   256060514304  1073741824  254986772480        -         -      0      0      -    ONLINE
`
	// raidz2 with a disk being replaced (replacing-1 nests one level
	// deeper), a mirrored special class and a spare
	treeRaidzReplacingSpecialSpare = `NAME                  SIZE    ALLOC     FREE  HEALTH  ASHIFT
r            4294967296  1048576  4293918720  ONLINE       9
  raidz2-0     4294967296  1048576  4293918720        -         -      0      0      -    ONLINE
    /dev/sda   1073741824      -      -        -         -      -      -      -    ONLINE
    replacing-1      -      -      -        -         -      -      -      -    ONLINE
      /dev/sdb 1073741824      -      -        -         -      -      -      -    ONLINE
      /dev/sdf 1073741824      -      -        -         -      -      -      -    ONLINE
    /dev/sdc   1073741824      -      -        -         -      -      -      -    ONLINE
    /dev/sdd   1073741824      -      -        -         -      -      -      -    ONLINE
special                -      -      -        -         -      -      -      -         -
  mirror-1     1073741824    65536  1073676288        -         -      0      0      -    ONLINE
    /dev/sdg   1073741824      -      -        -         -      -      -      -    ONLINE
    /dev/sdh   1073741824      -      -        -         -      -      -      -    ONLINE
spare                  -      -      -        -         -      -      -      -         -
  /dev/sde     1073741824      -      -        -         -      -      -      -     AVAIL
`
)

// TestParseTree: the tree is what Z4's comparison reads (layout, member
// disks by their -P paths, ashift) and what says a pool exists (Z1): each
// shape is parsed to its data vdevs, the classes kept apart, and an output
// that is not the -v tree of this pool is an error.
func TestParseTree(t *testing.T) {
	cases := []struct {
		name, in, pool string
		info           PoolInfo
		layout         string
		leaves         []string
		states         []string // of the data vdevs
		classes        map[string][]string
	}{
		{"seed single", treeSingle, "nvme-vm", PoolInfo{Usage{511101108224, 470220800, 510630887424, "ONLINE"}, "12"},
			"single", []string{"/dev/disk/by-id/nvme-eui.0000000624aabbccddeeff0011-part1"}, []string{"ONLINE"}, map[string][]string{}},
		{"mirrors with log and cache", treeMirrorsLogsCache, "tank", PoolInfo{Usage{3985729650688, 798863917056, 3186865733632, "DEGRADED"}, "12"},
			"mirror", []string{"/dev/disk/by-id/wwn-0x1-part1", "/dev/disk/by-id/wwn-0x2-part1", "/dev/disk/by-id/wwn-0x3-part1", "/dev/disk/by-id/wwn-0x4-part1"},
			[]string{"DEGRADED", "ONLINE"},
			map[string][]string{"logs": {"/dev/disk/by-id/nvme-eui.9-part1"}, "cache": {"/dev/disk/by-id/nvme-eui.8-part1"}}},
		{"raidz2, replacing, special, spare", treeRaidzReplacingSpecialSpare, "r", PoolInfo{Usage{4294967296, 1048576, 4293918720, "ONLINE"}, "9"},
			"raidz2", []string{"/dev/sda", "/dev/sdb", "/dev/sdf", "/dev/sdc", "/dev/sdd"}, []string{"ONLINE"},
			map[string][]string{"special": {"/dev/sdg", "/dev/sdh"}, "spare": {"/dev/sde"}}},
		{"stripe, legacy raidz name", "NAME SIZE ALLOC FREE HEALTH ASHIFT\ns 2 1 1 ONLINE 12\n  /dev/sda 1 1 0 - - 0 50 - ONLINE\n  raidz-1 1 0 1 - - 0 0 - ONLINE\n    /dev/sdb 1 - - - - - - - ONLINE\n", "s",
			PoolInfo{Usage{2, 1, 1, "ONLINE"}, "12"}, "mixed(disk,raidz1)", []string{"/dev/sda", "/dev/sdb"}, []string{"ONLINE", "ONLINE"}, map[string][]string{}},
		// the header gives the order, whatever it is
		{"columns in another order", "NAME  HEALTH  ASHIFT  FREE  ALLOC  SIZE\np  UNAVAIL  12  -  -  -\n  /dev/sda  -  -  -  -  -  -  -  -  UNAVAIL\n", "p",
			PoolInfo{Usage{0, 0, 0, "UNAVAIL"}, "12"}, "single", []string{"/dev/sda"}, []string{"UNAVAIL"}, map[string][]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tree, err := ParseTree(c.in, c.pool)
			if err != nil {
				t.Fatal(err)
			}
			st := tree.Status()
			var states []string
			for _, v := range tree.Vdevs {
				states = append(states, v.State)
			}
			classes := map[string][]string{}
			for k, vs := range tree.Classes {
				for _, v := range vs {
					classes[k] = append(classes[k], v.Devices...)
				}
			}
			if tree.PoolInfo != c.info || st.Layout() != c.layout || !reflect.DeepEqual(st.Leaves(), c.leaves) ||
				!reflect.DeepEqual(states, c.states) || !reflect.DeepEqual(classes, c.classes) || st.Pool != c.pool || st.State != c.info.Health {
				t.Errorf("got %+v layout %s leaves %q states %q classes %q", tree.PoolInfo, st.Layout(), st.Leaves(), states, classes)
			}
		})
	}
	for _, bad := range []struct{ name, in string }{
		{"garbage", "garbage"},
		{"-H output (no header, no nesting)", "nvme-vm\t1\t0\t1\tONLINE\t12\n\t/dev/sda\t1\t-\t-\t-\t-\t-\t-\t-\tONLINE\n"},
		{"no ASHIFT column", "NAME SIZE ALLOC FREE HEALTH\nnvme-vm 1 0 1 ONLINE\n"},
		{"no vdevs (-v ignored)", "NAME SIZE ALLOC FREE HEALTH ASHIFT\nnvme-vm 1 0 1 ONLINE 12\n"},
		{"another pool's line", "NAME SIZE ALLOC FREE HEALTH ASHIFT\ntank 1 0 1 ONLINE 12\n"},
		{"sizes not in bytes (no -p)", "NAME SIZE ALLOC FREE HEALTH ASHIFT\nnvme-vm 476G 444K 476G ONLINE 12\n"},
		{"a disk outside any vdev", "NAME SIZE ALLOC FREE HEALTH ASHIFT\nnvme-vm 1 0 1 ONLINE 12\n    /dev/sda 1 - - - - - - - ONLINE\n"},
		{"a second pool", "NAME SIZE ALLOC FREE HEALTH ASHIFT\nnvme-vm 1 0 1 ONLINE 12\ntank 1 0 1 ONLINE 12\n"},
	} {
		if tree, err := ParseTree(bad.in, "nvme-vm"); err == nil {
			t.Errorf("%s: parsed as %+v", bad.name, tree)
		}
	}
}

func TestParseProps(t *testing.T) {
	p, err := ParseProps("mountpoint\t/nvme-vm\tlocal\ncompression\tlz4\tlocal\nchecksum\ton\tdefault\n")
	if err != nil || p["mountpoint"] != (Prop{"/nvme-vm", "local"}) || p["checksum"].Source != "default" {
		t.Errorf("props = %v %v", p, err)
	}
	if _, err := ParseProps("NAME  PROPERTY  VALUE  SOURCE\n"); err == nil {
		t.Error("header-style output accepted")
	}
}

const poolLine = "zpool list -v -P -p -o name,size,alloc,free,health,ashift nvme-vm"

// poolOut is pool nvme-vm as `zpool list -v` prints it, with these values
// on its line.
func poolOut(size, alloc, free, health string) string {
	return "NAME                       SIZE      ALLOC          FREE  HEALTH  ASHIFT\n" +
		"nvme-vm  " + size + "  " + alloc + "  " + free + "  " + health + "  12\n" +
		"  /dev/disk/by-id/wwn-0x1-part1  512110190592  470220800  510630887424        -         -      0      0      -    " + health + "\n"
}

// TestExists: Z1 — "no such pool" means absent, any other failure is an error.
func TestExists(t *testing.T) {
	cases := []struct {
		reply   hosttest.Reply
		want    bool
		wantErr bool
	}{
		{hosttest.Reply{Stdout: poolOut("511101108224", "470220800", "510630887424", "ONLINE")}, true, false},
		{hosttest.Reply{Exit: 1, Stderr: "cannot open 'nvme-vm': no such pool\n"}, false, false},
		{hosttest.Reply{Exit: 1, Stderr: "The ZFS modules are not loaded.\n"}, false, true},
		{hosttest.Reply{Stdout: "NAME\nnvme-vm\n"}, false, true}, // not the columns asked for
		// a pool zfs cannot open still exists (Z1: never created again)
		{hosttest.Reply{Stdout: poolOut("-", "-", "-", "UNAVAIL")}, true, false},
		{hosttest.Reply{Stdout: poolOut("big", "0", "0", "ONLINE")}, false, true},
	}
	for _, c := range cases {
		f := hosttest.New().On(poolLine, c.reply)
		got, err := Client{Runner: f}.Exists(context.Background(), "nvme-vm")
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%+v: got %v, %v", c.reply, got, err)
		}
	}
}

// TestPool: existence, capacity, health, ashift and the member disks come
// from one command, however many of them a run asks for (with a memo).
func TestPool(t *testing.T) {
	f := hosttest.New().On(poolLine, hosttest.Reply{Stdout: poolOut("511101108224", "470220800", "510630887424", "DEGRADED")})
	c := Client{Runner: host.NewMemo().Runner(f)}
	info, found, err := c.Pool(context.Background(), "nvme-vm")
	want := PoolInfo{Usage: Usage{511101108224, 470220800, 510630887424, "DEGRADED"}, Ashift: "12"}
	if err != nil || !found || info != want {
		t.Errorf("got %+v %v %v, want %+v", info, found, err, want)
	}
	tree, _, err := c.Tree(context.Background(), "nvme-vm")
	if err != nil || !reflect.DeepEqual(tree.Status().Leaves(), []string{"/dev/disk/by-id/wwn-0x1-part1"}) {
		t.Errorf("tree = %+v %v", tree, err)
	}
	if calls := f.Calls(); len(calls) != 1 {
		t.Errorf("calls = %q, want one zpool list", calls)
	}
}

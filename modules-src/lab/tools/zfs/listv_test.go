package zfs

import (
	"bytes"
	"testing"

	hostzfs "github.com/gopve/proxmox/modules-src/host/zfs"
)

// TestListVerbose: `zpool list -v` prints each pool's line (its -o
// columns) and under it the vdev tree with print_list_stats's fixed
// columns, names indented by depth and the name column as wide as the
// widest indented name (at least 9), as OpenZFS's zpool_main.c does; and
// what it prints is what pve_zfs's parser reads (host/zfs.ParseTree).
func TestListVerbose(t *testing.T) {
	disk := func(n string) Device { return Device{Path: "/dev/disk/by-id/wwn-0x500000000000000" + n, Size: 1 << 30} }
	mirror := &Pool{Name: "tank", Layout: "mirror", Devices: []Device{disk("1"), disk("2")}, Ashift: 12, Props: map[string]string{"ashift": "12"}}
	stripe := &Pool{Name: "nvme-vm", Layout: "stripe", Devices: []Device{disk("3"), disk("4")}, Ashift: 12, Props: map[string]string{"ashift": "12"}}
	fields := []string{"name", "size", "allocated", "free", "health", "ashift"}
	print := func(p *Pool, parsable, scripted bool) string {
		var cols []column
		var row []string
		for _, f := range fields {
			cols = append(cols, poolColumn[f])
			if f == "name" {
				row = append(row, p.Name)
			} else {
				row = append(row, poolValue(p, f, parsable))
			}
		}
		rows := listRows(p, true, false)
		cols[0].min = 9
		for _, r := range rows {
			cols[0].min = max(cols[0].min, r.depth+len(r.name))
		}
		var b bytes.Buffer
		writeTableWith(&b, cols, [][]string{row}, scripted, false, func(int) {
			for _, r := range rows {
				r.write(&b, cols[0].min, scripted, parsable)
			}
		})
		return b.String()
	}
	for _, tc := range []struct {
		name               string
		p                  *Pool
		parsable, scripted bool
		want               string
	}{
		{"mirror, human", mirror, false, false, "" +
			"NAME                                         SIZE  ALLOC   FREE    HEALTH  ASHIFT\n" +
			"tank                                        1008M   444K  1008M    ONLINE      12\n" +
			"  mirror-0                                  1008M   444K  1008M        -         -     0%  0.04%      -    ONLINE\n" +
			"    /dev/disk/by-id/wwn-0x5000000000000001     1G      -      -        -         -      -      -      -    ONLINE\n" +
			"    /dev/disk/by-id/wwn-0x5000000000000002     1G      -      -        -         -      -      -      -    ONLINE\n"},
		{"mirror, -p", mirror, true, false, "" +
			"NAME                                              SIZE   ALLOC        FREE    HEALTH  ASHIFT\n" +
			"tank                                        1056964608  454656  1056509952    ONLINE      12\n" +
			"  mirror-0                                  1056964608  454656  1056509952        -         -      0      0      -    ONLINE\n" +
			"    /dev/disk/by-id/wwn-0x5000000000000001  1073741824      -      -        -         -      -      -      -    ONLINE\n" +
			"    /dev/disk/by-id/wwn-0x5000000000000002  1073741824      -      -        -         -      -      -      -    ONLINE\n"},
		{"stripe, -p", stripe, true, false, "" +
			"NAME                                            SIZE   ALLOC        FREE    HEALTH  ASHIFT\n" +
			"nvme-vm                                   2113929216  454656  2113474560    ONLINE      12\n" +
			"  /dev/disk/by-id/wwn-0x5000000000000003  1073741824  227328  1056737280        -         -      0      0      -    ONLINE\n" +
			"  /dev/disk/by-id/wwn-0x5000000000000004  1073741824  227328  1056737280        -         -      0      0      -    ONLINE\n"},
		// -H: a tab before every vdev cell, the name not indented
		{"mirror, -Hp", mirror, true, true, "" +
			"tank\t1056964608\t454656\t1056509952\tONLINE\t12\n" +
			"\tmirror-0\t1056964608\t454656\t1056509952\t-\t-\t0\t0\t-\tONLINE\n" +
			"\t/dev/disk/by-id/wwn-0x5000000000000001\t1073741824\t-\t-\t-\t-\t-\t-\t-\tONLINE\n" +
			"\t/dev/disk/by-id/wwn-0x5000000000000002\t1073741824\t-\t-\t-\t-\t-\t-\t-\tONLINE\n"},
	} {
		got := print(tc.p, tc.parsable, tc.scripted)
		if got != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
		}
		if !tc.parsable || tc.scripted {
			continue
		}
		tree, err := hostzfs.ParseTree(got, tc.p.Name)
		if err != nil {
			t.Errorf("%s: pve_zfs cannot parse the lab's output: %v", tc.name, err)
			continue
		}
		if st := tree.Status(); len(st.Leaves()) != len(tc.p.Devices) || st.Leaves()[0] != tc.p.Devices[0].Path || tree.Ashift != "12" || tree.Size != tc.p.Size() {
			t.Errorf("%s: parsed as %+v", tc.name, tree)
		}
	}
}

package modprobe

import "testing"

func TestSet(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"installer file (B4)", "options zfs zfs_arc_max=3353346048\n", "options zfs zfs_arc_max=4294967296\n"},
		{"empty file", "", "options zfs zfs_arc_max=4294967296\n"},
		{"keeps other options on the line", "options zfs zfs_arc_min=1 zfs_arc_max=2 l2arc_noprefetch=0\n",
			"options zfs zfs_arc_min=1 zfs_arc_max=4294967296 l2arc_noprefetch=0\n"},
		{"keeps comments and other modules", "# ARC\noptions spl spl_hostid=1\noptions zfs zfs_prefetch_disable=1\n",
			"# ARC\noptions spl spl_hostid=1\noptions zfs zfs_prefetch_disable=1\noptions zfs zfs_arc_max=4294967296\n"},
		{"later duplicate removed", "options zfs zfs_arc_max=1\noptions zfs zfs_arc_max=2\n", "options zfs zfs_arc_max=4294967296\n"},
		{"no trailing newline", "options zfs zfs_arc_max=1", "options zfs zfs_arc_max=4294967296\n"},
		{"commented key ignored", "#options zfs zfs_arc_max=1\n", "#options zfs zfs_arc_max=1\noptions zfs zfs_arc_max=4294967296\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Set(c.in, "zfs", "zfs_arc_max", "4294967296"); got != c.want {
				t.Errorf("Set:\n got %q\nwant %q", got, c.want)
			}
			if v, ok := Get(Set(c.in, "zfs", "zfs_arc_max", "4294967296"), "zfs", "zfs_arc_max"); !ok || v != "4294967296" {
				t.Errorf("Get after Set = %q, %v", v, ok)
			}
		})
	}
}

func TestGetLastWins(t *testing.T) {
	v, ok := Get("options zfs zfs_arc_max=1\noptions zfs zfs_arc_max=2 # x\n", "zfs", "zfs_arc_max")
	if !ok || v != "2" {
		t.Fatalf("Get = %q, %v; want 2", v, ok)
	}
	if _, ok := Get("options spl zfs_arc_max=1\n", "zfs", "zfs_arc_max"); ok {
		t.Fatal("Get found an option of another module")
	}
}

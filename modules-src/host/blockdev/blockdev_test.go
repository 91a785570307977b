package blockdev

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

// fakeDisks builds /dev with two NVMe disks and the usual zoo of links (Z2).
func fakeDisks(t *testing.T) host.Root {
	t.Helper()
	root := t.TempDir()
	byid := filepath.Join(root, "dev/disk/by-id")
	if err := os.MkdirAll(byid, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"nvme0n1", "nvme0n1p1", "nvme1n1", "sda", "sda1", "sdz"} {
		if err := os.WriteFile(filepath.Join(root, "dev", d), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "sys/class/block/sda1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sys/class/block/sda1/partition"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"nvme-Samsung_SSD_980_S64A":       "nvme0n1",
		"nvme-Samsung_SSD_980_S64A_1":     "nvme0n1",
		"nvme-eui.0025385b21404321":       "nvme0n1",
		"nvme-eui.0025385b21404321-part1": "nvme0n1p1",
		"nvme-WD_Blue_SN570_2222":         "nvme1n1",
		"ata-QEMU_HARDDISK_QM0001":        "sda",
		"wwn-0x5000c500a1b2c3d4":          "sda",
		"nvme-dangling":                   "nvme9n1",
	}
	for name, target := range links {
		if err := os.Symlink("../../"+target, filepath.Join(byid, name)); err != nil {
			t.Fatal(err)
		}
	}
	return host.Root(root)
}

func TestResolve(t *testing.T) {
	root := fakeDisks(t)
	cases := []struct {
		given, kernel, byID, wantErr string
	}{
		{"/dev/nvme0n1", "/dev/nvme0n1", "/dev/disk/by-id/nvme-eui.0025385b21404321", ""}, // Z2: eui preferred, _1 skipped
		{"/dev/sda", "/dev/sda", "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4", ""},
		{"/dev/nvme1n1", "/dev/nvme1n1", "/dev/disk/by-id/nvme-WD_Blue_SN570_2222", ""},
		{"/dev/disk/by-id/nvme-Samsung_SSD_980_S64A", "/dev/nvme0n1", "/dev/disk/by-id/nvme-Samsung_SSD_980_S64A", ""},
		{"/dev/disk/by-id/nvme-eui.0025385b21404321-part1", "", "", "partition"},
		{"/dev/nvme7n1", "", "", "does not exist"},
		{"nvme0n1", "", "", "under /dev"},
		// issue 7: a partition is named as such, with its disk, not as
		// a device without a stable link (its -part1 link exists).
		{"/dev/nvme0n1p1", "", "", "device /dev/nvme0n1p1 is a partition (/dev/nvme0n1p1), not a disk; give the whole disk (/dev/nvme0n1)"},
		// a partition without links, known from sysfs
		{"/dev/sda1", "", "", "device /dev/sda1 is a partition"},
		{"/dev/sdz", "", "", "no stable link"},
	}
	for _, c := range cases {
		d, err := Resolve(root, c.given)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Resolve(%s) err = %v, want %q", c.given, err, c.wantErr)
			}
			continue
		}
		if err != nil || d.Kernel != c.kernel || d.ByID != c.byID {
			t.Errorf("Resolve(%s) = %+v, %v; want kernel %s by-id %s", c.given, d, err, c.kernel, c.byID)
		}
	}
}

func TestProbe(t *testing.T) {
	cases := []struct {
		name    string
		reply   hosttest.Reply
		present bool
		desc    string
		wantErr bool
	}{
		{"blank disk (Z3)", hosttest.Reply{Exit: 2}, false, "", false},
		{"gpt", hosttest.Reply{Stdout: `/dev/nvme0n1: PTUUID="5f1c" PTTYPE="gpt"` + "\n"}, true, "pttype=gpt", false},
		{"zfs member", hosttest.Reply{Stdout: `/dev/sda: LABEL="tank" UUID="1" VERSION="5000" TYPE="zfs_member" USAGE="filesystem"`}, true, "type=zfs_member label=tank", false},
		{"ambivalent", hosttest.Reply{Exit: 8}, true, "unidentified", false},
		{"no permission", hosttest.Reply{Exit: 4, Stderr: "error: /dev/x: Permission denied"}, false, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := hosttest.New().On("blkid -p /dev/x", c.reply)
			sig, err := Probe(context.Background(), f, "/dev/x")
			if (err != nil) != c.wantErr {
				t.Fatalf("err = %v", err)
			}
			if sig.Present != c.present {
				t.Errorf("present = %v", sig.Present)
			}
			if c.present && !strings.Contains(sig.Describe(), c.desc) {
				t.Errorf("describe = %q, want %q", sig.Describe(), c.desc)
			}
		})
	}
}

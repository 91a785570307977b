package zfslabel

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

func sparse(t *testing.T, size int64) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "disk.img")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func testLabel(vtype string) *Label {
	l := &Label{Pool: "nvme-vm", PoolGUID: 1234567890123, GUID: 42, TopGUID: 42, TXG: 4,
		Hostname: "pve01", Path: "/dev/disk/by-id/nvme-eui.0001", Ashift: 12, Asize: 100 << 20,
		VdevType: vtype, Timestamp: time.Unix(1_700_000_000, 0)}
	if vtype == "mirror" {
		l.TopGUID = 7
		l.Children = []Child{{GUID: 42, Path: "/dev/a"}, {GUID: 43, Path: "/dev/b"}}
	}
	return l
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, vt := range []string{"disk", "file", "mirror"} {
		t.Run(vt, func(t *testing.T) {
			p := sparse(t, 128<<20)
			if l, err := Read(p); err != nil || l != nil {
				t.Fatalf("blank device: label %+v, err %v", l, err)
			}
			if err := Write(p, testLabel(vt)); err != nil {
				t.Fatal(err)
			}
			got, err := Read(p)
			if err != nil || got == nil {
				t.Fatalf("read back: %v %v", got, err)
			}
			if got.Pool != "nvme-vm" || got.PoolGUID != 1234567890123 || got.GUID != 42 || got.State != StateActive {
				t.Fatalf("read back %+v", got)
			}
			exported := testLabel(vt)
			exported.State, exported.TXG = StateExported, 5
			if err := Write(p, exported); err != nil {
				t.Fatal(err)
			}
			if got, _ = Read(p); got.State != StateExported {
				t.Fatalf("state after export = %d", got.State)
			}
			if err := Wipe(p); err != nil {
				t.Fatal(err)
			}
			if got, _ := Read(p); got != nil {
				t.Fatalf("label survived wipe: %+v", got)
			}
		})
	}
}

func TestWriteRefusesTinyDevice(t *testing.T) {
	if err := Write(sparse(t, 32<<20), testLabel("disk")); err == nil {
		t.Fatal("wrote a label on a 32 MiB device; ZFS minimum is 64 MiB")
	}
}

// blkid probes the labels the way util-linux does (Z3: a pool member carries a
// signature, so `blkid DEV` exits 0). Run against this machine's blkid and, when
// the cached trixie root exists, the newer libblkid (nvlist-based detection).
func TestRealBlkidSeesZfsMember(t *testing.T) {
	blkids := map[string][]string{}
	if p, err := exec.LookPath("blkid"); err == nil {
		blkids["host"] = []string{p}
	}
	if root := "/var/cache/gopve/roots/trixie"; fileExists(root+"/usr/sbin/blkid") && os.Geteuid() == 0 {
		blkids["trixie"] = []string{"chroot", root, "/usr/sbin/blkid"}
	}
	if len(blkids) == 0 {
		testenv.Skip(t, "no blkid on this machine")
	}
	for name, argv := range blkids {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if name == "trixie" {
				// the chroot must see the image: put it inside the root.
				d, err := os.MkdirTemp("/var/cache/gopve/roots/trixie/tmp", "zfslabel")
				if err != nil {
					testenv.Skip(t, err)
				}
				t.Cleanup(func() { os.RemoveAll(d) })
				dir = d
			}
			p := filepath.Join(dir, "disk.img")
			f, _ := os.Create(p)
			f.Truncate(128 << 20)
			f.Close()
			arg := p
			if name == "trixie" {
				arg = strings.TrimPrefix(p, "/var/cache/gopve/roots/trixie")
			}
			run := func() (string, int) {
				cmd := exec.Command(argv[0], append(argv[1:], "-p", arg)...)
				out, err := cmd.CombinedOutput()
				if ee, ok := err.(*exec.ExitError); ok {
					return string(out), ee.ExitCode()
				}
				if err != nil {
					t.Fatal(err)
				}
				return string(out), 0
			}
			if out, rc := run(); rc == 0 {
				t.Fatalf("blank image already has a signature: %s", out)
			}
			for _, vt := range []string{"file", "mirror"} {
				if err := Write(p, testLabel(vt)); err != nil {
					t.Fatal(err)
				}
				out, rc := run()
				if rc != 0 || !strings.Contains(out, `TYPE="zfs_member"`) || !strings.Contains(out, `LABEL="nvme-vm"`) {
					t.Fatalf("%s label: blkid rc=%d out=%q", vt, rc, out)
				}
			}
		})
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

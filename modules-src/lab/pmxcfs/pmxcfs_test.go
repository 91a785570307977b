package pmxcfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

// fakeBackend: every node on one backing directory unless moved.
type fakeBackend struct {
	mu      sync.Mutex
	dirs    map[string]string
	quorate atomic.Bool
	changed sync.Map // rel → true
}

func (b *fakeBackend) Dir(node string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dirs[node]
}
func (b *fakeBackend) Quorate(string) bool { return b.quorate.Load() }
func (b *fakeBackend) Generated(node, name string) []byte {
	return []byte(fmt.Sprintf("{\"nodename\": %q, \"file\": %q}\n", node, name))
}
func (b *fakeBackend) Changed(node, rel string) { b.changed.Store(rel, true) }

// mountNodes mounts /etc/pve of each node over one shared directory.
func mountNodes(t *testing.T, nodes ...string) (shared string, mnt map[string]string, b *fakeBackend) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "FUSE mounts need root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testenv.Skip(t, "no /dev/fuse")
	}
	tmp := t.TempDir()
	shared = filepath.Join(tmp, "db")
	for _, d := range []string{"priv/lock", "nodes"} {
		if err := os.MkdirAll(filepath.Join(shared, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b = &fakeBackend{dirs: map[string]string{}}
	b.quorate.Store(true)
	mnt = map[string]string{}
	for _, n := range nodes {
		b.mu.Lock() // the mounts already serving ask Dir concurrently
		b.dirs[n] = shared
		b.mu.Unlock()
		mp := filepath.Join(tmp, "mnt", n)
		srv, err := Mount(mp, n, b)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := srv.Unmount(); err != nil {
				t.Error(err)
			}
		})
		mnt[n] = mp
	}
	return shared, mnt, b
}

// lineinfileAppend does what Ansible's lineinfile/authorized_key do: read
// the file, write a temporary file next to it, rename it over the original.
func lineinfileAppend(dir, file, line string) error {
	p := filepath.Join(dir, file)
	old, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".ansible_tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(old, []byte(line+"\n")...)); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// atomic_move: chmod/chown to the destination's mode and owner.
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return fmt.Errorf("chmod: %w", err)
	}
	if err := os.Chown(tmp.Name(), 0, WWWDataGID); err != nil {
		return fmt.Errorf("chown: %w", err)
	}
	return os.Rename(tmp.Name(), p)
}

// The scenario: lineinfile-style writers on every node at once may
// lose each other's additions (the last rename wins, as on PVE), but a line
// that was in the file before they started never disappears, and a reader
// only ever sees whole files.
func TestConcurrentRenameAppendsKeepOldLinesAndReadersSeeWholeFiles(t *testing.T) {
	nodes := []string{"pve01", "pve02", "pve03"}
	shared, mnt, _ := mountNodes(t, nodes...)
	before := "ssh-ed25519 AAAAcontroller controller\nssh-ed25519 AAAApve01 root@pve01\n"
	if err := os.WriteFile(filepath.Join(shared, "priv/authorized_keys"), []byte(before), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var bad atomic.Value
	for _, n := range nodes {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := os.ReadFile(filepath.Join(mnt[n], "priv/authorized_keys"))
				if err != nil {
					bad.Store(fmt.Sprintf("%s: read: %v", n, err))
					return
				}
				if !strings.HasPrefix(string(b), before) || !strings.HasSuffix(string(b), "\n") {
					bad.Store(fmt.Sprintf("%s read a partial or shrunken file: %q", n, b))
					return
				}
			}
		}()
	}
	var writers sync.WaitGroup
	for _, n := range nodes {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := 0; i < 30; i++ {
				if err := lineinfileAppend(mnt[n], "priv/authorized_keys", fmt.Sprintf("key-%s-%d", n, i)); err != nil {
					bad.Store(fmt.Sprintf("%s: append: %v", n, err))
					return
				}
			}
		}()
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if v := bad.Load(); v != nil {
		t.Fatal(v)
	}
	for _, n := range nodes {
		b, err := os.ReadFile(filepath.Join(mnt[n], "priv/authorized_keys"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), before) {
			t.Errorf("%s: a line present before the appends is gone:\n%s", n, b)
		}
	}
}

// Appends serialised by pmxcfs's own cluster-wide lock (mkdir of
// priv/lock/<name>, as cfs_lock_file does) all survive.
func TestLockedAppendsAllSurvive(t *testing.T) {
	nodes := []string{"pve01", "pve02", "pve03"}
	shared, mnt, _ := mountNodes(t, nodes...)
	if err := os.WriteFile(filepath.Join(shared, "priv/known_hosts"), []byte("pve01 ssh-ed25519 AAAA\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(nodes))
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock := filepath.Join(mnt[n], "priv/lock/known-hosts")
			for i := 0; i < 20; i++ {
				for {
					err := os.Mkdir(lock, 0o755)
					if err == nil {
						break
					}
					if !errors.Is(err, os.ErrExist) {
						errs <- err
						return
					}
					time.Sleep(time.Millisecond)
				}
				err := lineinfileAppend(mnt[n], "priv/known_hosts", fmt.Sprintf("%s-%d", n, i))
				if rerr := os.Remove(lock); err == nil {
					err = rerr
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(shared, "priv/known_hosts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		for i := 0; i < 20; i++ {
			if !strings.Contains(string(b), fmt.Sprintf("\n%s-%d\n", n, i)) {
				t.Errorf("line %s-%d lost:\n%s", n, i, b)
			}
		}
	}
}

func TestPmxcfsRules(t *testing.T) {
	shared, mnt, b := mountNodes(t, "pve01", "pve02")
	m := mnt["pve01"]
	if err := os.WriteFile(filepath.Join(m, "storage.cfg"), []byte("dir: local\n\tpath /var/lib/vz\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(mnt["pve02"], "storage.cfg")); !strings.Contains(string(got), "path /var/lib/vz") {
		t.Errorf("pve02 does not see pve01's write: %q", got)
	}
	if _, ok := b.changed.Load("storage.cfg"); !ok {
		t.Error("the backend was not told storage.cfg changed")
	}
	fi, err := os.Stat(filepath.Join(m, "storage.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if fi.Mode().Perm() != 0o640 || st.Uid != 0 || st.Gid != WWWDataGID {
		t.Errorf("storage.cfg: mode %v uid %d gid %d, want 0640 root:www-data", fi.Mode(), st.Uid, st.Gid)
	}
	if fi, _ := os.Stat(filepath.Join(m, "priv")); fi == nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("priv/ mode: %v, want 0700", fi)
	}
	if err := os.Chmod(filepath.Join(m, "storage.cfg"), 0o644); !errors.Is(err, syscall.EPERM) {
		t.Errorf("chmod 0644: %v, want EPERM", err)
	}
	if err := os.Chmod(filepath.Join(m, "storage.cfg"), 0o640); err != nil {
		t.Errorf("chmod 0640: %v, want success", err)
	}
	if err := os.Chown(filepath.Join(m, "storage.cfg"), 1000, 1000); !errors.Is(err, syscall.EPERM) {
		t.Errorf("chown 1000: %v, want EPERM", err)
	}
	if err := os.Symlink("storage.cfg", filepath.Join(m, "link")); !errors.Is(err, syscall.ENOSYS) {
		t.Errorf("symlink: %v, want ENOSYS", err)
	}
	if err := os.WriteFile(filepath.Join(m, "big"), make([]byte, MaxFileSize+1), 0o640); !errors.Is(err, syscall.EFBIG) {
		t.Errorf("1 MiB + 1 byte: %v, want EFBIG", err)
	}
	if l, err := os.Readlink(filepath.Join(mnt["pve02"], "local")); err != nil || l != "nodes/pve02" {
		t.Errorf("local on pve02 → %q (%v), want nodes/pve02", l, err)
	}
	if g, err := os.ReadFile(filepath.Join(m, ".members")); err != nil || !strings.Contains(string(g), `"pve01"`) {
		t.Errorf(".members on pve01: %q %v", g, err)
	}
	if err := os.WriteFile(filepath.Join(m, ".members"), []byte("x"), 0o640); !errors.Is(err, syscall.EACCES) {
		t.Errorf("writing .members: %v, want EACCES", err)
	}
	// One VMID per cluster: a second configuration elsewhere is EEXIST, a
	// migration (rename of that guest's config to another node) is not.
	for _, d := range []string{"nodes/pve01/qemu-server", "nodes/pve02/qemu-server", "nodes/pve02/lxc"} {
		if err := os.MkdirAll(filepath.Join(m, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(m, "nodes/pve01/qemu-server/100.conf"), []byte("memory: 512\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"nodes/pve02/qemu-server/100.conf", "nodes/pve02/lxc/100.conf"} {
		if err := os.WriteFile(filepath.Join(mnt["pve02"], p), []byte("x\n"), 0o640); !errors.Is(err, syscall.EEXIST) {
			t.Errorf("a second config for VMID 100 (%s): %v, want EEXIST", p, err)
		}
	}
	if err := os.WriteFile(filepath.Join(mnt["pve02"], "nodes/pve02/qemu-server/0100.conf"), []byte("x\n"), 0o640); err != nil {
		t.Errorf("0100.conf is no guest config for pmxcfs: %v", err)
	}
	if err := os.Rename(filepath.Join(m, "nodes/pve01/qemu-server/100.conf"), filepath.Join(m, "nodes/pve02/qemu-server/100.conf")); err != nil {
		t.Errorf("migrating VM 100's config: %v", err)
	}
	if vms := ScanVMConfigs(shared); len(vms) != 1 || vms[0].Node != "pve02" || vms[0].Type != "qemu" || vms[0].VMID != 100 {
		t.Errorf("VM list after the migration: %+v", vms)
	}

	// C10: without quorum every change is "Permission denied", reads work.
	b.quorate.Store(false)
	if err := os.WriteFile(filepath.Join(m, "storage.cfg"), []byte("x"), 0o640); !errors.Is(err, syscall.EACCES) {
		t.Errorf("write without quorum: %v, want EACCES", err)
	}
	if err := os.WriteFile(filepath.Join(m, "new.cfg"), []byte("x"), 0o640); !errors.Is(err, syscall.EACCES) {
		t.Errorf("create without quorum: %v, want EACCES", err)
	}
	if err := os.Remove(filepath.Join(m, "storage.cfg")); !errors.Is(err, syscall.EACCES) {
		t.Errorf("unlink without quorum: %v, want EACCES", err)
	}
	if got, err := os.ReadFile(filepath.Join(m, "storage.cfg")); err != nil || !strings.Contains(string(got), "/var/lib/vz") {
		t.Errorf("read without quorum: %q %v", got, err)
	}
	if fi, _ := os.Stat(filepath.Join(m, "storage.cfg")); fi == nil || fi.Mode().Perm() != 0o440 {
		t.Errorf("mode without quorum: %v, want 0440", fi)
	}
	// A join: pve02 now sees another directory, without a remount.
	other := filepath.Join(filepath.Dir(shared), "cluster")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "corosync.conf"), []byte("totem {}\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	b.dirs["pve02"] = other
	b.mu.Unlock()
	if _, err := os.Stat(filepath.Join(mnt["pve02"], "storage.cfg")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pve02 still sees its old storage.cfg after the switch: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mnt["pve02"], "corosync.conf")); err != nil {
		t.Errorf("pve02 does not see the cluster's corosync.conf: %v", err)
	}
}

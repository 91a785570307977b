//go:build linux

package flocktable

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The table stands in for flock(2) as lock_file_full calls it (a new open
// file description per lock, LOCK_NB for the try). The judge is the kernel:
// random sequences of shared and exclusive tries and releases on a few
// keys must get the table's answer from real flock calls on real files.
func TestTableAnswersAsFlock(t *testing.T) {
	dir := t.TempDir()
	keys := []string{"lock-100.conf", "lock-101.conf", "storage-local"}
	rng := rand.New(rand.NewPCG(27, 1))
	for round := range 200 {
		var table Table
		held := map[string]map[bool][]*os.File{} // key → shared? → one open file per holder
		for _, k := range keys {
			held[k] = map[bool][]*os.File{}
		}
		for step := range 30 {
			key := keys[rng.IntN(len(keys))]
			shared := rng.IntN(2) == 0
			if hs := held[key][shared]; len(hs) > 0 && rng.IntN(3) == 0 {
				table.Unlock(key, shared)
				if err := hs[0].Close(); err != nil { // closing drops its flock
					t.Fatal(err)
				}
				held[key][shared] = hs[1:]
				continue
			}
			f, err := os.OpenFile(filepath.Join(dir, key), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			how := syscall.LOCK_EX
			if shared {
				how = syscall.LOCK_SH
			}
			kernel := true
			if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
				if !errors.Is(err, syscall.EWOULDBLOCK) {
					t.Fatal(err)
				}
				kernel = false
			}
			if got := table.TryLock(key, shared); got != kernel {
				t.Fatalf("round %d step %d: TryLock(%s, shared=%v) = %v, flock(2) says %v", round, step, key, shared, got, kernel)
			}
			if !kernel {
				f.Close()
				continue
			}
			held[key][shared] = append(held[key][shared], f)
			if got, want := table.HeldExclusive(key), len(held[key][false]) > 0; got != want {
				t.Fatalf("round %d step %d: HeldExclusive(%s) = %v, want %v", round, step, key, got, want)
			}
		}
		for _, byMode := range held {
			for _, hs := range byMode {
				for _, f := range hs {
					f.Close()
				}
			}
		}
	}
}

func TestErrTimeoutIsLockFileFulls(t *testing.T) {
	// pve-common Tools.pm lock_file_full: die "can't lock file '$filename' - $err"
	// with $err "got timeout".
	if got, want := ErrTimeout("/var/lock/qemu-server/lock-100.conf").Error(), "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"; got != want {
		t.Fatalf("ErrTimeout = %q, want %q", got, want)
	}
}

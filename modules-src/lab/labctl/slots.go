package labctl

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// A lab's slot is its block of loopback addresses (127.77.S.*), held with a
// lock file for the lab's lifetime.

// claimSlot takes slot s (or the first free one) with a lock file held for
// the lab's lifetime, so labs started side by side never share addresses.
func (l *Lab) claimSlot(s int) error {
	if s < 0 || s > MaxSlot {
		return fmt.Errorf("slot %d is out of range 1..%d", s, MaxSlot)
	}
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", lockDir, err)
	}
	try := func(s int) (bool, error) {
		f, err := os.OpenFile(slotLockPath(s), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return false, fmt.Errorf("opening the slot lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			return false, nil
		}
		// A listener left on the slot's address by something else also
		// makes the slot busy.
		if ln, err := net.Listen("tcp", net.JoinHostPort(SlotAddr(s), "80")); err != nil {
			f.Close()
			return false, nil
		} else {
			ln.Close()
		}
		l.slot, l.slotF = s, f
		return true, nil
	}
	if s != 0 {
		ok, err := try(s)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("slot %d is in use by another lab (addresses 127.77.%d.*)", s, s)
		}
		return nil
	}
	for s := 1; s <= MaxSlot; s++ {
		ok, err := try(s)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return errors.New("every lab slot is in use")
}

const lockDir = "/run/lock/gopve-lab"

// SlotFree reports whether no lab holds slot s right now.
func SlotFree(s int) bool {
	f, err := os.OpenFile(slotLockPath(s), os.O_RDONLY, 0)
	if err != nil {
		return true // never claimed, or released
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}

func slotLockPath(s int) string { return filepath.Join(lockDir, fmt.Sprintf("slot%d.lock", s)) }

func (l *Lab) releaseSlot() {
	if l.slotF != nil {
		// The lock file stays: removing it would let a waiter that opened
		// it and a newcomer that creates a fresh one both "hold" the slot.
		l.slotF.Close()
		l.slotF = nil
	}
}

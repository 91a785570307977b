// Package statefile keeps a stand-in's node-local state as one JSON file,
// read-modify-written under an exclusive flock so that concurrent commands
// (Ansible forks, a module and a user's shell) never lose an update.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/google/renameio/v2"
)

// Update locks path+".lock", decodes path into v (left as is when the file
// does not exist yet), calls fn and, when fn returns nil and save is true,
// writes v back atomically. fn's error is returned unchanged.
func Update(path string, v any, fn func() (save bool, err error)) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create state directory: %w", err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("open state lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", path, err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read state: %w", err)
	default:
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("state file %s is corrupt: %w", path, err)
		}
	}
	save, err := fn()
	if err != nil || !save {
		return err
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := renameio.WriteFile(path, append(out, '\n'), 0o644); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// Read decodes path into v under the lock, without writing.
func Read(path string, v any) error {
	return Update(path, v, func() (bool, error) { return false, nil })
}

// AppendLine appends one line to a log file under the same kind of lock.
func AppendLine(path, line string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock log: %w", err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		return fmt.Errorf("append log: %w", err)
	}
	return nil
}

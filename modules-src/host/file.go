package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/gopve/proxmox/modules-src/internal/writes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/renameio/v2"
)

// FileState is what a file looks like now, read without side effects.
type FileState struct {
	Path string // logical path
	// Target is the logical path of the file itself: Path, or where Path
	// leads when it is a symbolic link (e.g. /root/.ssh/authorized_keys →
	// /etc/pve/priv/authorized_keys on a cluster member). Writes go there.
	Target  string
	Exists  bool
	Content []byte
	Mode    fs.FileMode // permission bits only
	UID     int
	GID     int
	ModTime time.Time // last modification; zero when the file does not exist
}

// ReadFile reads the current state of a logical path, following symbolic
// links to the file they lead to. A missing file is not an error: Exists is
// false.
func (r Root) ReadFile(path string) (FileState, error) {
	st := FileState{Path: path, Target: path, UID: -1, GID: -1}
	target, err := r.resolve(path)
	if err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	st.Target = target
	real := r.Path(target)
	info, err := os.Stat(real)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	if info.IsDir() {
		return st, fmt.Errorf("read %s: is a directory, expected a file", path)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		return st, fmt.Errorf("read %s: %w", path, err)
	}
	st.Exists = true
	st.Content = data
	st.Mode = info.Mode().Perm()
	st.ModTime = info.ModTime()
	if sys, ok := info.Sys().(*syscall.Stat_t); ok {
		st.UID, st.GID = int(sys.Uid), int(sys.Gid)
	}
	return st, nil
}

// maxLinks bounds symlink chains, as the kernel does (ELOOP).
const maxLinks = 40

// resolve follows symbolic links in the last component of a logical path
// and returns the logical path of the file they lead to. Absolute link
// targets are node paths, so they are resolved under the root too.
func (r Root) resolve(path string) (string, error) {
	cur := filepath.Clean("/" + path)
	for i := 0; i < maxLinks; i++ {
		info, err := os.Lstat(r.Path(cur))
		if errors.Is(err, fs.ErrNotExist) || (err == nil && info.Mode()&fs.ModeSymlink == 0) {
			return cur, nil
		}
		if err != nil {
			return "", err
		}
		link, err := os.Readlink(r.Path(cur))
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(cur), link)
		}
		cur = filepath.Clean(link)
	}
	return "", fmt.Errorf("too many levels of symbolic links")
}

// FileChange is one planned write: the whole desired content of a file, with
// the state it replaces. It is the unit of diff reporting and of apply.
type FileChange struct {
	Path    string      `json:"path"`
	Before  FileState   `json:"-"`
	After   []byte      `json:"-"`
	Mode    fs.FileMode `json:"-"`
	Backup  bool        `json:"-"` // keep a copy of the old content next to the file
	Comment string      `json:"-"` // why, for humans (e.g. "disable pve-enterprise")
}

// PlanFile compares the current state of path with the desired content and
// mode. It returns nil when nothing would change. A zero mode keeps the
// existing mode, or uses 0644 for a new file.
func (r Root) PlanFile(path string, desired []byte, mode fs.FileMode) (*FileChange, error) {
	cur, err := r.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return PlanFrom(cur, desired, mode), nil
}

// PlanFrom is PlanFile for a state the caller already read.
func PlanFrom(cur FileState, desired []byte, mode fs.FileMode) *FileChange {
	if mode == 0 {
		mode = 0o644
		if cur.Exists {
			mode = cur.Mode
		}
	}
	if cur.Exists && bytes.Equal(cur.Content, desired) && cur.Mode == mode {
		return nil
	}
	return &FileChange{Path: cur.Path, Before: cur, After: desired, Mode: mode}
}

// Diff is one entry of Ansible's diff list (the `--diff` output).
type Diff struct {
	Before       string `json:"before"`
	After        string `json:"after"`
	BeforeHeader string `json:"before_header"`
	AfterHeader  string `json:"after_header"`
}

// Diff renders the change for Ansible's diff mode. A mode-only change is shown
// in the headers, since the text is identical.
func (c *FileChange) Diff() Diff {
	bh, ah := c.Path, c.Path
	if !c.Before.Exists {
		bh = c.Path + " (absent)"
	} else if c.Before.Mode != c.Mode {
		bh = fmt.Sprintf("%s (mode %04o)", c.Path, c.Before.Mode)
		ah = fmt.Sprintf("%s (mode %04o)", c.Path, c.Mode)
	}
	return Diff{Before: string(c.Before.Content), After: string(c.After), BeforeHeader: bh, AfterHeader: ah}
}

// ApplyFile writes the change atomically (temporary file + rename in the
// same directory), so a reader never sees half a file. The owner of an
// existing file is kept; parent directories are created 0755 when missing.
// It returns the logical path of the backup, when one was asked for and the
// file existed.
//
// A symbolic link is written through: the file it leads to is replaced and
// the link stays (the same target as when the change was planned, else the
// write is refused naming both). The write is a compare-and-swap: right
// before the rename the file is read again, and if it no longer holds what
// was observed when the change was planned (another process edited it), it
// is left alone and a *ConflictError says so; nothing was changed then.
func (r Root) ApplyFile(ctx context.Context, c *FileChange, now time.Time) (backup string, err error) {
	r.mustWrite("write " + c.Path)
	target, err := r.resolve(c.Path)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", c.Path, err)
	}
	planned := c.Before.Target
	if planned == "" {
		planned = c.Path
	}
	if target != planned {
		return "", &ConflictError{Path: c.Path, Why: fmt.Sprintf("it now leads to %s, but led to %s when the change was planned", target, planned)}
	}
	real := r.Path(target)
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		return "", fmt.Errorf("write %s: create parent directory: %w", describe(c.Path, target), err)
	}
	pf, err := renameio.NewPendingFile(real, renameio.WithPermissions(c.Mode), renameio.IgnoreUmask())
	if err != nil {
		return "", fmt.Errorf("write %s: %w", describe(c.Path, target), err)
	}
	defer pf.Cleanup()
	if _, err := pf.Write(c.After); err != nil {
		return "", fmt.Errorf("write %s: %w", describe(c.Path, target), err)
	}
	if c.Before.Exists && c.Before.UID >= 0 && (c.Before.UID != os.Geteuid() || c.Before.GID != os.Getegid()) {
		if err := pf.Chown(c.Before.UID, c.Before.GID); err != nil {
			return "", fmt.Errorf("write %s: keep owner %d:%d: %w", describe(c.Path, target), c.Before.UID, c.Before.GID, err)
		}
	}
	if err := r.stillAsObserved(c.Path, c.Before); err != nil {
		return "", err
	}
	// From here the backup or the file itself may be written (issue 23 §2).
	writes.Note(ctx, "write "+c.Path)
	if c.Backup && c.Before.Exists {
		backup = BackupName(c.Path, now)
		if err := renameio.WriteFile(r.Path(backup), c.Before.Content, c.Before.Mode); err != nil {
			return "", fmt.Errorf("write %s: backup to %s: %w", c.Path, backup, err)
		}
	}
	if err := pf.CloseAtomicallyReplace(); err != nil {
		return backup, fmt.Errorf("write %s: %w", describe(c.Path, target), err)
	}
	return backup, nil
}

// describe names a file and, when it differs, the file a link leads to.
func describe(path, target string) string {
	if path == target {
		return path
	}
	return path + " (→ " + target + ")"
}

// ConflictError is a write refused because the file is not what the change
// was planned against; the file was left as it is.
type ConflictError struct {
	Path string
	Why  string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s was not written: %s; another process changed it since it was read, so nothing was overwritten (run the task again to plan against the new content)", e.Path, e.Why)
}

// stillAsObserved is the compare of compare-and-swap: the file must hold
// what was read when the change was planned.
func (r Root) stillAsObserved(path string, before FileState) error {
	now, err := r.ReadFile(path)
	if err != nil {
		return err
	}
	switch {
	case now.Exists != before.Exists && before.Exists:
		return &ConflictError{Path: path, Why: "it was deleted"}
	case now.Exists != before.Exists:
		return &ConflictError{Path: path, Why: "it was created meanwhile"}
	case now.Exists && !bytes.Equal(now.Content, before.Content):
		return &ConflictError{Path: path, Why: "its content changed"}
	case now.Exists && now.Mode != before.Mode:
		return &ConflictError{Path: path, Why: fmt.Sprintf("its mode changed from %04o to %04o", before.Mode, now.Mode)}
	}
	return nil
}

// VerifyFile reads the file back and fails unless it holds exactly what the
// change promised.
func (r Root) VerifyFile(c *FileChange) error {
	st, err := r.ReadFile(c.Path)
	if err != nil {
		return err
	}
	switch {
	case !st.Exists:
		return fmt.Errorf("verify %s: file is missing after the write", c.Path)
	case !bytes.Equal(st.Content, c.After):
		return fmt.Errorf("verify %s: content differs from what was written (another process changed it?)", c.Path)
	case st.Mode != c.Mode:
		return fmt.Errorf("verify %s: mode is %04o, expected %04o", c.Path, st.Mode, c.Mode)
	}
	return nil
}

// BackupName is where a backup of path taken at now goes: next to the file,
// named like Ansible's own backups (path.YYYY-MM-DD@HH:MM:SS~).
func BackupName(path string, now time.Time) string {
	return fmt.Sprintf("%s.%s~", path, now.UTC().Format("2006-01-02@15:04:05"))
}

// Remove deletes a file (a symbolic link itself, not what it leads to); a
// file that is already gone is not an error.
func (r Root) Remove(ctx context.Context, path string) error {
	r.mustWrite("remove " + path)
	err := os.Remove(r.Path(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	writes.Note(ctx, "remove "+path) // it was there (issue 23 §2)
	if err != nil {
		return fmt.Errorf("remove %s: %w", path, err)
	}
	return nil
}

// WriteInPlace writes data into an existing file without replacing it
// (sysfs parameters such as /sys/module/zfs/parameters/zfs_arc_max cannot
// be renamed over).
func (r Root) WriteInPlace(ctx context.Context, path string, data []byte) error {
	r.mustWrite("write " + path)
	f, err := os.OpenFile(r.Path(path), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	writes.Note(ctx, "write "+path) // opened for writing, truncated (issue 23 §2)
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeT(t *testing.T, root Root, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(root.Path(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root.Path(p), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A symbolic link is written through to its target, which keeps being a
// link: /root/.ssh/authorized_keys → /etc/pve/priv/authorized_keys on a
// cluster member (an absolute target, resolved under the root).
func TestApplyFileWritesThroughSymlinks(t *testing.T) {
	root := Root(t.TempDir())
	writeT(t, root, "/etc/pve/priv/authorized_keys", "ssh-ed25519 AAAA old\n")
	os.MkdirAll(root.Path("/root/.ssh"), 0o700)
	if err := os.Symlink("/etc/pve/priv/authorized_keys", root.Path("/root/.ssh/authorized_keys")); err != nil {
		t.Fatal(err)
	}
	// and a relative link to the absolute one
	if err := os.Symlink("authorized_keys", root.Path("/root/.ssh/authorized_keys2")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/root/.ssh/authorized_keys", "/root/.ssh/authorized_keys2"} {
		ch, err := root.PlanFile(p, []byte("ssh-ed25519 AAAA new "+p+"\n"), 0)
		if err != nil || ch == nil {
			t.Fatal(ch, err)
		}
		if ch.Before.Target != "/etc/pve/priv/authorized_keys" || string(ch.Before.Content) == "" {
			t.Fatalf("observed %+v", ch.Before)
		}
		if _, err := root.ApplyFile(context.Background(), ch, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := root.VerifyFile(ch); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(root.Path("/root/.ssh/authorized_keys")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced by a file: %v %v", fi.Mode(), err)
		}
		got, _ := os.ReadFile(root.Path("/etc/pve/priv/authorized_keys"))
		if string(got) != "ssh-ed25519 AAAA new "+p+"\n" {
			t.Errorf("target holds %q", got)
		}
	}
	// A link moved elsewhere between plan and apply is refused, naming both.
	ch, _ := root.PlanFile("/root/.ssh/authorized_keys", []byte("x\n"), 0)
	writeT(t, root, "/etc/other", "other\n")
	os.Remove(root.Path("/root/.ssh/authorized_keys"))
	os.Symlink("/etc/other", root.Path("/root/.ssh/authorized_keys"))
	_, err := root.ApplyFile(context.Background(), ch, time.Now())
	var conflict *ConflictError
	if !errors.As(err, &conflict) || !strings.Contains(err.Error(), "/etc/other") || !strings.Contains(err.Error(), "/etc/pve/priv/authorized_keys") {
		t.Errorf("retargeted link: %v", err)
	}
	if b, _ := os.ReadFile(root.Path("/etc/other")); string(b) != "other\n" {
		t.Errorf("/etc/other overwritten: %q", b)
	}
	// A link loop is refused with the kernel's words.
	os.Symlink("loop2", root.Path("/etc/loop1"))
	os.Symlink("loop1", root.Path("/etc/loop2"))
	if _, err := root.ReadFile("/etc/loop1"); err == nil || !strings.Contains(err.Error(), "too many levels of symbolic links") {
		t.Errorf("loop: %v", err)
	}
}

// Compare-and-swap: a file edited by someone else after it was read is not
// overwritten, and nothing at all is written (no backup either).
func TestApplyFileIsCompareAndSwap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before *string
		edit   func(root Root, p string)
		want   string
	}{
		{"content changed", ptr("a\n"), func(root Root, p string) { os.WriteFile(root.Path(p), []byte("edited\n"), 0o644) }, "its content changed"},
		{"mode changed", ptr("a\n"), func(root Root, p string) { os.Chmod(root.Path(p), 0o600) }, "its mode changed"},
		{"deleted", ptr("a\n"), func(root Root, p string) { os.Remove(root.Path(p)) }, "it was deleted"},
		{"created meanwhile", nil, func(root Root, p string) { writeT(t, root, p, "theirs\n") }, "it was created meanwhile"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := Root(t.TempDir())
			p := "/etc/x.conf"
			if tc.before != nil {
				writeT(t, root, p, *tc.before)
			}
			ch, err := root.PlanFile(p, []byte("ours\n"), 0)
			if err != nil || ch == nil {
				t.Fatal(ch, err)
			}
			ch.Backup = true
			tc.edit(root, p)
			snapshot := listTree(t, root)
			_, err = root.ApplyFile(context.Background(), ch, time.Now())
			var conflict *ConflictError
			if !errors.As(err, &conflict) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("err = %v, want a conflict saying %q", err, tc.want)
			}
			if after := listTree(t, root); after != snapshot {
				t.Errorf("the refused write changed files:\n%s\n→\n%s", snapshot, after)
			}
		})
	}
}

// listTree renders every file under the root with its content and mode.
func listTree(t *testing.T, root Root) string {
	var b strings.Builder
	filepath.Walk(root.Path("/"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, _ := os.ReadFile(p)
		b.WriteString(p + " " + fi.Mode().String() + " " + string(data) + "\n")
		return nil
	})
	return b.String()
}

func TestReadOnlyRootRefusesWrites(t *testing.T) {
	dir := t.TempDir()
	rw := Root(dir)
	writeT(t, rw, "/etc/x", "a\n")
	ro := rw.ReadOnly()
	if !ro.IsReadOnly() || rw.IsReadOnly() || ro.Path("/etc/x") != filepath.Join(dir, "etc/x") {
		t.Fatalf("read-only root %q: path %s", ro, ro.Path("/etc/x"))
	}
	st, err := ro.ReadFile("/etc/x")
	if err != nil || string(st.Content) != "a\n" {
		t.Fatalf("reading through a read-only root: %v %q", err, st.Content)
	}
	ch := PlanFrom(st, []byte("b\n"), 0)
	for name, write := range map[string]func(){
		"ApplyFile":    func() { ro.ApplyFile(context.Background(), ch, time.Now()) },
		"Remove":       func() { ro.Remove(context.Background(), "/etc/x") },
		"WriteInPlace": func() { ro.WriteInPlace(context.Background(), "/etc/x", []byte("c\n")) },
		"WriteThenAct": func() {
			ro.WriteThenAct(context.Background(), ch, time.Now(), func(context.Context) error { return nil })
		},
	} {
		func() {
			defer func() {
				var wa *WriteAttempt
				p := recover()
				if err, ok := p.(error); !ok || !errors.As(err, &wa) || !strings.Contains(err.Error(), "/etc/x") || !strings.Contains(err.Error(), "bug") {
					t.Errorf("%s through a read-only root: recovered %v, want a *WriteAttempt naming /etc/x", name, p)
				}
			}()
			write()
		}()
	}
	if b, _ := os.ReadFile(rw.Path("/etc/x")); string(b) != "a\n" {
		t.Errorf("file changed to %q", b)
	}
}

// WriteThenAct: an action that fails puts the file back, so the next run
// sees the write as still to be done; an action that succeeds keeps it.
func TestWriteThenAct(t *testing.T) {
	for _, existed := range []bool{true, false} {
		root := Root(t.TempDir())
		p := "/etc/modprobe.d/zfs.conf"
		if existed {
			writeT(t, root, p, "options zfs zfs_arc_max=1\n")
		}
		ch, _ := root.PlanFile(p, []byte("options zfs zfs_arc_max=2\n"), 0)
		var sawWritten bool
		_, err := root.WriteThenAct(context.Background(), ch, time.Now(), func(context.Context) error {
			b, _ := os.ReadFile(root.Path(p))
			sawWritten = string(b) == "options zfs zfs_arc_max=2\n"
			return errors.New("update-initramfs: failed")
		})
		var ae *ActError
		if !errors.As(err, &ae) || !ae.Undone || !strings.Contains(err.Error(), "update-initramfs: failed") || !strings.Contains(err.Error(), "put back") {
			t.Fatalf("existed=%v: err = %v", existed, err)
		}
		if !sawWritten {
			t.Error("the action ran before the file was written")
		}
		st, _ := root.ReadFile(p)
		if st.Exists != existed || (existed && string(st.Content) != "options zfs zfs_arc_max=1\n") {
			t.Errorf("existed=%v: after a failed action the file is %+v", existed, st)
		}
		// the next run plans the same write again, and succeeds
		again, _ := root.PlanFile(p, []byte("options zfs zfs_arc_max=2\n"), 0)
		if again == nil {
			t.Fatal("the undone write is not planned again")
		}
		if _, err := root.WriteThenAct(context.Background(), again, time.Now(), func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if err := root.VerifyFile(again); err != nil {
			t.Error(err)
		}
	}
	// a file edited by someone else while the action ran is not undone
	root := Root(t.TempDir())
	p := "/etc/x"
	writeT(t, root, p, "a\n")
	ch, _ := root.PlanFile(p, []byte("b\n"), 0)
	_, err := root.WriteThenAct(context.Background(), ch, time.Now(), func(context.Context) error {
		writeT(t, root, p, "theirs\n")
		return errors.New("restart failed")
	})
	var ae *ActError
	if !errors.As(err, &ae) || ae.Undone {
		t.Fatalf("err = %v", err)
	}
	if b, _ := os.ReadFile(root.Path(p)); string(b) != "theirs\n" {
		t.Errorf("the undo overwrote a concurrent edit: %q", b)
	}
}

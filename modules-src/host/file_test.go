package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

func TestPlanApplyVerifyFile(t *testing.T) {
	now := time.Date(2026, 11, 29, 15, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		existing   *string
		mode       os.FileMode
		desired    string
		wantMode   os.FileMode
		wantChange bool
		backup     bool
	}{
		{"new file gets 0644", nil, 0, "a\n", 0o644, true, false},
		{"same content no change", ptr("a\n"), 0, "a\n", 0o644, false, false},
		{"content change keeps mode", ptr("a\n"), 0, "b\n", 0o600, true, true},
		{"mode-only change", ptr("a\n"), 0o644, "a\n", 0o644, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := Root(t.TempDir())
			p := "/etc/apt/sources.list.d/x.sources"
			if c.existing != nil {
				os.MkdirAll(filepath.Dir(root.Path(p)), 0o755)
				perm := os.FileMode(0o600)
				if err := os.WriteFile(root.Path(p), []byte(*c.existing), perm); err != nil {
					t.Fatal(err)
				}
			}
			ch, err := root.PlanFile(p, []byte(c.desired), c.mode)
			if err != nil {
				t.Fatal(err)
			}
			if (ch != nil) != c.wantChange {
				t.Fatalf("change = %+v, want change %v", ch, c.wantChange)
			}
			if ch == nil {
				return
			}
			ch.Backup = c.backup
			bk, err := root.ApplyFile(context.Background(), ch, now)
			if err != nil {
				t.Fatal(err)
			}
			if err := root.VerifyFile(ch); err != nil {
				t.Fatal(err)
			}
			st, _ := root.ReadFile(p)
			if st.Mode != c.wantMode || string(st.Content) != c.desired {
				t.Errorf("file = %q mode %o", st.Content, st.Mode)
			}
			if c.backup {
				b, err := os.ReadFile(root.Path(bk))
				if err != nil || string(b) != *c.existing || bk != p+".2026-11-29@15:00:00~" {
					t.Errorf("backup %s = %q, %v", bk, b, err)
				}
			}
			// a third party changing the file is caught by Verify
			os.WriteFile(root.Path(p), []byte("tampered"), c.wantMode)
			if root.VerifyFile(ch) == nil {
				t.Error("Verify accepted a tampered file")
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestDiffHeaders(t *testing.T) {
	c := &FileChange{Path: "/x", Before: FileState{Path: "/x"}, After: []byte("a"), Mode: 0o644}
	if d := c.Diff(); d.BeforeHeader != "/x (absent)" || d.After != "a" {
		t.Errorf("diff = %+v", d)
	}
}

func TestRootPath(t *testing.T) {
	if got := Root("/").Path("/etc/hosts"); got != "/etc/hosts" {
		t.Error(got)
	}
	if got := Root("/tmp/r").Path("/etc/../etc/hosts"); got != "/tmp/r/etc/hosts" {
		t.Error(got)
	}
	if got := Root("/tmp/r").Path("/../../etc"); got != "/tmp/r/etc" {
		t.Errorf("escaped the root: %s", got)
	}
	if l, ok := Root("/tmp/r").Logical("/tmp/r/dev/sda"); !ok || l != "/dev/sda" {
		t.Error(l, ok)
	}
	if _, ok := Root("/tmp/r").Logical("/tmp/rx/dev/sda"); ok {
		t.Error("prefix without separator accepted")
	}
}

func TestExecRunner(t *testing.T) {
	r := &ExecRunner{Mask: func(s string) string { return strings.ReplaceAll(s, "s3cret", "********") }}
	res, err := r.Run(context.Background(), Command{Name: "sh", Args: []string{"-c", "echo out; echo \"bad s3cret\" >&2; exit 3"}})
	var ce *CommandError
	if !errors.As(err, &ce) || res.ExitCode != 3 || ExitCode(err) != 3 {
		t.Fatalf("res %+v err %v", res, err)
	}
	if strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "bad ********") || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("error message = %q", err)
	}
	if res, err := r.Run(context.Background(), Command{Name: "sh", Args: []string{"-c", "echo $LANG"}}); err != nil || res.Stdout != "C\n" {
		t.Errorf("LANG: %q %v", res.Stdout, err)
	}
	if _, err := r.Run(context.Background(), Command{Name: "/nonexistent/prog"}); ExitCode(err) != -1 || !strings.Contains(err.Error(), "cannot run") {
		t.Errorf("missing program: %v", err)
	}
	if n := len(r.Log()); n != 3 {
		t.Errorf("log has %d entries", n)
	}
	if r.Log()[0].Command != `sh -c 'echo out; echo "bad ********" >&2; exit 3'` {
		t.Errorf("logged command = %s", r.Log()[0].Command)
	}
	if l := CommandLog(r); len(l) != 3 || l[0]["rc"] != 3 || l[2]["rc"] != -1 {
		t.Errorf("CommandLog = %v", l)
	}
}

// TestApplyKeepsOwner: an edited file keeps its owner (needs root to chown).
func TestApplyKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "needs root to create a file owned by someone else")
	}
	root := Root(t.TempDir())
	p := "/etc/x.conf"
	os.MkdirAll(filepath.Dir(root.Path(p)), 0o755)
	os.WriteFile(root.Path(p), []byte("a\n"), 0o640)
	if err := os.Chown(root.Path(p), 1234, 5678); err != nil {
		t.Fatal(err)
	}
	ch, err := root.PlanFile(p, []byte("b\n"), 0)
	if err != nil || ch == nil {
		t.Fatal(ch, err)
	}
	if _, err := root.ApplyFile(context.Background(), ch, time.Now()); err != nil {
		t.Fatal(err)
	}
	st, _ := root.ReadFile(p)
	if st.UID != 1234 || st.GID != 5678 || st.Mode != 0o640 {
		t.Errorf("after apply: uid %d gid %d mode %o", st.UID, st.GID, st.Mode)
	}
}

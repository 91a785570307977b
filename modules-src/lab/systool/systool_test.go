package systool

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 15: a missing tool is named with its Debian package and where the
// lab looked; PATH plays no part.
func TestMissingToolNamesItsPackage(t *testing.T) {
	dir := t.TempDir()
	_, err := find("losetup", []string{dir, filepath.Join(dir, "sbin")})
	if err == nil {
		t.Fatal("found losetup in an empty directory")
	}
	for _, want := range []string{"the lab needs losetup", "Debian package mount", "apt-get install mount", dir + ", " + filepath.Join(dir, "sbin")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := find("no-such-tool", []string{dir}); err == nil || strings.Contains(err.Error(), "Debian package") {
		t.Errorf("an unknown tool: %v", err)
	}
	// A file that is not executable is not the tool.
	if err := os.WriteFile(filepath.Join(dir, "losetup"), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := find("losetup", []string{dir}); err == nil {
		t.Error("a non-executable losetup was taken")
	}
	if err := os.Chmod(filepath.Join(dir, "losetup"), 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := find("losetup", []string{dir}); err != nil || p != filepath.Join(dir, "losetup") {
		t.Errorf("find = %q, %v", p, err)
	}
}

// Without PATH the lab's tools are still found, and what they run in turn
// gets a PATH of the system directories.
func TestToolsWithoutPATH(t *testing.T) {
	t.Setenv("PATH", "")
	cmd, err := Command(context.Background(), "sh", "-c", "echo $PATH; command -v env")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || lines[0] != "/usr/sbin:/usr/bin:/sbin:/bin" || !strings.HasPrefix(lines[1], "/") {
		t.Errorf("a child started without PATH sees %q", out)
	}
	t.Setenv("PATH", "/opt/x/bin")
	if env := Env("A=b"); !contains(env, "PATH=/usr/sbin:/usr/bin:/sbin:/bin:/opt/x/bin") || !contains(env, "A=b") {
		t.Errorf("Env keeps the caller's PATH after the system directories and adds extras: %v", env)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

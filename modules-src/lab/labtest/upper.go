package labtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// NotState are the node paths UpperDigest leaves out, with why: they
// change on every task whatever the module does.
var NotState = []string{
	"/run",                 // tmpfs of the running node: sockets, pid files
	"/tmp",                 // Invoke's args file, mktemp, the APT sandbox
	"/var/tmp",             // idem
	"/root/.ansible/tmp",   // Ansible's remote temp dirs
	"/root/.ansible/gopve", // the action plugin's binary cache
	// login accounting sshd and PAM write for Ansible's own SSH connection
	"/var/log/lastlog",
	"/var/log/wtmp",
	"/var/log/wtmp.db",
	"/var/log/btmp",
}

// NotStateFiles are file patterns (path.Match) UpperDigest leaves out:
// the flock files the lab's CLI stand-ins create even to read their state
// (real zfs and systemctl have none), and their command log (the lab's
// witness of argv, tools.CommandLog; a read in check mode appends to it).
// Their state files themselves (zfs.json, systemd.json) are hashed.
var NotStateFiles = []string{"/var/lib/gopve-lab/*.lock", "/var/lib/gopve-lab/commands.log"}

// excluded tells whether a node path is under one of NotState, is the
// directory holding Ansible's (~/.ansible, created by the first task) or
// matches NotStateFiles.
func excluded(p string) bool {
	return p == "/root/.ansible" ||
		slices.ContainsFunc(NotState, func(x string) bool { return p == x || strings.HasPrefix(p, x+"/") }) ||
		slices.ContainsFunc(NotStateFiles, func(pat string) bool { ok, _ := path.Match(pat, p); return ok })
}

// UpperDigest describes every entry of every node's overlay upper directory
// — everything a node ever wrote, whatever the path — except NotState: key
// "node:/path", value its type, mode, owner and content hash (symlink
// target, device number of overlay whiteouts). Compared before and after a
// check-mode run, it proves the run wrote nothing anywhere, not just in a
// chosen list of files.
//
// pvestatd is settled first (pvesim.Sim.StatdCycle): the content
// directories it creates for an earlier storage change are there before
// the digest, not counted as the next run's writes.
func UpperDigest(t *testing.T, lab *labctl.Lab) map[string]string {
	t.Helper()
	lab.Sim().StatdCycle()
	out := map[string]string{}
	for _, n := range lab.Nodes() {
		upper := lab.UpperPath(n.Name, "/")
		err := filepath.WalkDir(upper, func(real string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(upper, real)
			p := "/" + filepath.ToSlash(rel)
			if rel == "." {
				p = "/"
			}
			if excluded(p) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			desc, err := describeEntry(real)
			if err != nil {
				return err
			}
			out[n.Name+":"+p] = desc
			return nil
		})
		if err != nil {
			t.Fatalf("hashing the upper directory of %s: %v", n.Name, err)
		}
	}
	return out
}

func describeEntry(real string) (string, error) {
	info, err := os.Lstat(real)
	if err != nil {
		return "", err
	}
	st, _ := info.Sys().(*syscall.Stat_t)
	owner := ""
	if st != nil {
		owner = fmt.Sprintf("%d:%d", st.Uid, st.Gid)
	}
	head := fmt.Sprintf("%s %s", info.Mode(), owner)
	switch {
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(real)
		return head + " -> " + target, err
	case info.Mode()&fs.ModeDevice != 0 && st != nil:
		return head + fmt.Sprintf(" dev %d", st.Rdev), nil // 0/0: an overlay whiteout
	case info.Mode().IsRegular():
		f, err := os.Open(real)
		if err != nil {
			return "", err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return "", err
		}
		return head + " " + hex.EncodeToString(h.Sum(nil)), nil
	}
	return head, nil
}

// DigestDiff lists what differs between two UpperDigest results, one line
// per path (added, removed, changed), sorted.
func DigestDiff(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if b, ok := before[k]; !ok {
			out = append(out, "added   "+k+" "+v)
		} else if b != v {
			out = append(out, "changed "+k+" "+b+" → "+v)
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok {
			out = append(out, "removed "+k+" "+v)
		}
	}
	slices.Sort(out)
	return out
}

// NoWrites runs fn (a check-mode run) and fails the test if any node's
// upper directory changed outside NotState, listing every path that did.
func NoWrites(t *testing.T, lab *labctl.Lab, what string, fn func()) {
	t.Helper()
	before := UpperDigest(t, lab)
	fn()
	if diff := DigestDiff(before, UpperDigest(t, lab)); len(diff) > 0 {
		t.Errorf("%s wrote to the nodes:\n%s", what, strings.Join(diff, "\n"))
	}
}

package labctl

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// A node's digest is every entry of its overlay upper directory —
// everything the node ever wrote, whatever the path — but NotState: path,
// type, mode, owner and content hash (symlink target, the device number of
// an overlay whiteout). Compared before and after a run it proves what the
// run wrote, not just in a chosen list of files. Go tests read it with
// labtest.UpperDigest, shell suites with `lab digest NODE`: one list of
// exclusions for both.

// NotState are the node paths a digest leaves out, with why: they change
// on every task whatever the module does.
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

// NotStateFiles are file patterns (path.Match) a digest leaves out: the
// flock files the lab's CLI stand-ins create even to read their state
// (real zfs and systemctl have none), and their command log (the lab's
// witness of argv, tools.CommandLog; a read in check mode appends to it).
// Their state files themselves (zfs.json, systemd.json) are hashed.
var NotStateFiles = []string{"/var/lib/gopve-lab/*.lock", "/var/lib/gopve-lab/commands.log"}

// notState tells whether a node path is under one of NotState, is the
// directory holding Ansible's (~/.ansible, created by the first task) or
// matches NotStateFiles.
func notState(p string) bool {
	return p == "/root/.ansible" ||
		slices.ContainsFunc(NotState, func(x string) bool { return p == x || strings.HasPrefix(p, x+"/") }) ||
		slices.ContainsFunc(NotStateFiles, func(pat string) bool { ok, _ := path.Match(pat, p); return ok })
}

// Digest is the digest of the named nodes (all when none is named), key
// "node:/path". pvestatd is settled first (pvesim.Sim.StatdCycle): the
// content directories it creates for an earlier storage change are there
// before the digest, not counted as the next run's writes.
func (l *Lab) Digest(nodes ...string) (map[string]string, error) {
	if len(nodes) == 0 {
		for _, n := range l.Nodes() {
			nodes = append(nodes, n.Name)
		}
	}
	if l.sim != nil {
		l.sim.StatdCycle()
	}
	out := map[string]string{}
	for _, name := range nodes {
		upper := l.UpperPath(name, "/")
		if upper == "" {
			return nil, fmt.Errorf("the lab has no node %q", name)
		}
		err := filepath.WalkDir(upper, func(real string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(upper, real)
			p := "/" + filepath.ToSlash(rel)
			if rel == "." {
				p = "/"
			}
			if notState(p) {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			desc, err := describeEntry(real)
			if err != nil {
				return err
			}
			out[name+":"+p] = desc
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading the upper directory of %s: %w", name, err)
		}
	}
	return out, nil
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

// DigestLines is a digest as sorted "node:/path description" lines, what
// `lab digest` prints.
func DigestLines(d map[string]string) []string {
	out := make([]string, 0, len(d))
	for k, v := range d {
		out = append(out, k+" "+v)
	}
	slices.Sort(out)
	return out
}

// DigestDiff lists what differs between two digests, one line per path
// (added, removed, changed), sorted.
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

func (l *Lab) serveDigest(w http.ResponseWriter, r *http.Request) {
	var nodes []string
	if n := r.URL.Query().Get("nodes"); n != "" {
		nodes = strings.Split(n, ",")
	}
	d, err := l.Digest(nodes...)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// DigestRemote is Digest of the lab running in dir (its socket).
func DigestRemote(ctx context.Context, dir string, nodes ...string) (map[string]string, error) {
	out := map[string]string{}
	p := "/v1/digest"
	if len(nodes) > 0 {
		p += "?nodes=" + strings.Join(nodes, ",")
	}
	err := callLabSocket(ctx, dir, http.MethodGet, p, &out)
	return out, err
}

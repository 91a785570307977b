// Package perltest runs Perl with Debian's own libraries, so a test can
// hold what the lab and the modules reimplement (PVE's tickets and CSRF
// tokens) to the code PVE runs rather than to our reading of it.
//
// Two Perls: the host's (Debian 12, the base of PVE 8) and the one in the
// cached Debian 13 root of hack/debian-root.sh (PVE 9's base), entered with
// chroot and only read. hack/deps.sh installs libcrypt-openssl-rsa-perl on
// the host, hack/debian-root.sh into the root; Digest::SHA and
// MIME::Base64 are core Perl. A missing Perl or library stops the test
// through testenv (a failure under GOPVE_REQUIRE_LAB=1).
//
// Host gives the host's Perl alone, for pure-Perl libraries such as
// URI::Escape (liburi-perl, which PVE::Tools uses for encode_text and
// decode_text).
//
// Tests only.
package perltest

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
)

// Perl is one Perl installation with its Debian release.
type Perl struct {
	Name string // "Debian 12 (host)", "Debian 13 (cached root)"
	PVE  int    // the PVE major version that stands on this release
	root string // the root to chroot into; "" for the host
}

// Modules every test of this package's users needs.
var Modules = []string{"Crypt::OpenSSL::RSA", "Digest::SHA", "MIME::Base64"}

// Both returns the host's Perl and the Debian 13 root's, each checked to
// load Modules; it stops t when either is missing.
func Both(t *testing.T) []Perl {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, "perltest: the Debian 13 root is entered with chroot, which needs root")
	}
	if _, err := exec.LookPath("perl"); err != nil {
		testenv.Skip(t, "perltest: no perl on the host (hack/deps.sh installs libcrypt-openssl-rsa-perl, which brings it)")
	}
	root, err := trixieRoot()
	if err != nil {
		testenv.Skip(t, "perltest: no Debian 13 root: ", err)
	}
	ps := []Perl{{Name: "Debian 12 (host)", PVE: 8}, {Name: "Debian 13 (" + root + ")", PVE: 9, root: root}}
	for _, p := range ps {
		var uses strings.Builder
		for _, m := range Modules {
			uses.WriteString("use " + m + "; ")
		}
		if out, err := p.Run(uses.String()+"print 1", nil); err != nil || out != "1" {
			testenv.Skipf(t, "perltest: %s cannot load %s (hack/deps.sh, hack/debian-root.sh install libcrypt-openssl-rsa-perl): %v %s", p.Name, strings.Join(Modules, ", "), err, out)
		}
	}
	return ps
}

// Host returns the host's Perl (Debian 12, PVE 8's base) checked to load
// modules, for the pure-Perl libraries whose behaviour is the same on both
// releases (URI::Escape's uri_escape and uri_unescape); it stops t when
// Perl or a module is missing.
func Host(t *testing.T, modules ...string) Perl {
	t.Helper()
	if _, err := exec.LookPath("perl"); err != nil {
		testenv.Skip(t, "perltest: no perl on the host (hack/deps.sh installs it with its libraries)")
	}
	p := Perl{Name: "Debian 12 (host)", PVE: 8}
	var uses strings.Builder
	for _, m := range modules {
		uses.WriteString("use " + m + "; ")
	}
	if out, err := p.Run(uses.String()+"print 1", nil); err != nil || out != "1" {
		testenv.Skipf(t, "perltest: the host's Perl cannot load %s (hack/deps.sh installs them): %v %s", strings.Join(modules, ", "), err, out)
	}
	return p
}

// Run runs script with env added to the environment and returns its
// standard output, trimmed; an error carries its standard error.
func (p Perl) Run(script string, env map[string]string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"perl", "-e", script}
	if p.root != "" {
		args = []string{"chroot", p.root, "/usr/bin/perl", "-e", script}
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(stdout.String()), errors.New(err.Error() + ": " + strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// Answers runs script once over inputs and returns its output's lines,
// exactly one per input, else t fails. The script reads the inputs from
// $ENV{INPUTS}, one a line, each "x" and its bytes in hex (so an empty one
// survives the split and no byte is lost): `for my $h (split /\n/,
// $ENV{INPUTS}) { my $v = pack("H*", substr($h, 1)); … }`.
func (p Perl) Answers(t *testing.T, script string, inputs []string) []string {
	t.Helper()
	var in strings.Builder
	for _, s := range inputs {
		in.WriteString("x" + hex.EncodeToString([]byte(s)) + "\n")
	}
	out, err := p.Run(script, map[string]string{"INPUTS": in.String()})
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	lines := strings.Split(out, "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%s answered %d lines for %d inputs:\n%s", p.Name, len(lines), len(inputs), out)
	}
	return lines
}

// trixieRoot is the cached Debian 13 root, built (or completed) by the
// checkout's hack/debian-root.sh, which honours GOPVE_CACHE.
func trixieRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		script := filepath.Join(dir, "hack", "debian-root.sh")
		if _, err := os.Stat(script); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
			defer cancel()
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(ctx, script, "trixie")
			cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				return "", errors.New(script + " trixie: " + err.Error() + ": " + strings.TrimSpace(stderr.String()))
			}
			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			return strings.TrimSpace(lines[len(lines)-1]), nil
		}
		if filepath.Dir(dir) == dir {
			return "", errors.New("no hack/debian-root.sh above " + wd)
		}
	}
}

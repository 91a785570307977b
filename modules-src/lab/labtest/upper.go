package labtest

import (
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/labctl"
)

// UpperDigest is labctl's Digest of every node (pvestatd settled first):
// compared before and after a check-mode run, it proves the run wrote
// nothing anywhere, not just in a chosen list of files.
func UpperDigest(t *testing.T, lab *labctl.Lab) map[string]string {
	t.Helper()
	d, err := lab.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// DigestDiff is labctl.DigestDiff.
func DigestDiff(before, after map[string]string) []string { return labctl.DigestDiff(before, after) }

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

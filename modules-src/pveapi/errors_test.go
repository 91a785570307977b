package pveapi

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

func TestClassify(t *testing.T) {
	cases := []struct {
		status int
		msg    string
		cause  error
		want   Kind
	}{
		{500, "can't lock file '/var/lock/qemu-server/lock-101.conf' - got timeout", nil, KindLocked},
		{500, "create storage failed: cfs-lock 'file-storage_cfg' error: got lock request timeout", nil, KindLocked},
		{500, "update storage failed: cfs-lock 'file-storage_cfg' error: no quorum!", nil, KindNoQuorum},
		{500, "create storage failed: storage ID 'nvme-vm' already defined", nil, KindExists},
		{500, "unable to create VM 107: config file already exists", nil, KindExists},
		{500, "storage 'nope' does not exist", nil, KindNotFound},
		{404, "Not Found", nil, KindNotFound},
		{403, "Permission check failed (/storage/x, Datastore.Allocate)", nil, KindPermission},
		{401, "invalid token value!", nil, KindAuth},
		{400, "Parameter verification failed.", nil, KindBadRequest},
		{500, "ha groups have been migrated to rules", nil, KindBadRequest},
		{500, "cannot update ha rule: ha groups have not been migrated yet", nil, KindBadRequest},
		{500, "got no worker upid - start worker failed", nil, KindTemporary},
		{596, "Connection timed out", nil, KindTemporary},
		{0, "", syscall.ECONNRESET, KindTemporary},
		{0, "", &pinError{got: "AA", want: "BB"}, KindTLS},
	}
	for _, c := range cases {
		e := newError("GET", "/x", c.status, c.msg, nil, c.cause)
		if e.Kind() != c.want {
			t.Errorf("%d %q %v: kind %s, want %s", c.status, c.msg, c.cause, e.Kind(), c.want)
		}
		var wrapped error = e
		if KindOf(errors.Join(errors.New("ctx"), wrapped)) != c.want {
			t.Errorf("KindOf does not see through wrapping for %q", c.msg)
		}
	}
}

func TestErrorNamesParameters(t *testing.T) {
	e := newError("POST", "/storage", 400, "Parameter verification failed.", map[string]string{"pool": "property is missing and it is not optional"}, nil)
	want := "POST /storage: 400 Parameter verification failed.; pool: property is missing and it is not optional"
	if e.Error() != want {
		t.Errorf("got %q\nwant %q", e.Error(), want)
	}
}

func TestFullTokenID(t *testing.T) {
	// K7: both spellings work; a mismatch is refused by name, never a silent 401.
	ok := []struct{ user, id, want string }{
		{"", "root@pam!lab", "root@pam!lab"},
		{"root@pam", "root@pam!lab", "root@pam!lab"},
		{"root@pam", "lab", "root@pam!lab"},
		{"ansible@pve", "ci-token.1", "ansible@pve!ci-token.1"},
	}
	for _, c := range ok {
		got, err := FullTokenID(c.user, c.id)
		if err != nil || got != c.want {
			t.Errorf("FullTokenID(%q,%q) = %q, %v; want %q", c.user, c.id, got, err, c.want)
		}
	}
	bad := []struct{ user, id, mention string }{
		{"", "lab", "api_user"},
		{"admin@pve", "root@pam!lab", "api_user is admin@pve"},
		{"root@pam", "bad name", "api_token_id"},
		{"root", "lab", "api_user"},
	}
	for _, c := range bad {
		_, err := FullTokenID(c.user, c.id)
		if err == nil || !contains(err.Error(), c.mention) {
			t.Errorf("FullTokenID(%q,%q) = %v; want an error mentioning %q", c.user, c.id, err, c.mention)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// pve-common Tools.pm assert_if_modified's die, as the storage, replication
// and guest config updates answer it (prefixed by the handler's own words):
// a refusal under the lock before any write, so nothing was done, and it
// is not an unanswered write either.
func TestDigestRefusalIsModifiedNothingDone(t *testing.T) {
	for _, msg := range []string{
		"update storage failed: detected modified configuration - file changed by other user? Try again.",
		"detected modified configuration - file changed by other user? Try again.",
	} {
		e := newError("PUT", "/storage/nvme-vm", 500, msg, nil, nil)
		if !IsModified(e) || !NothingDone(e) || IsUnanswered(e) {
			t.Errorf("%q: kind %v, nothing done %v, unanswered %v", msg, KindOf(e), NothingDone(e), IsUnanswered(e))
		}
	}
	if e := newError("PUT", "/storage/nvme-vm", 500, "update storage failed: some other failure", nil, nil); IsModified(e) {
		t.Errorf("another 500 taken for a digest refusal")
	}
}

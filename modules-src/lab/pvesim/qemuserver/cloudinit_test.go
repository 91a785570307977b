package qemuserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// sshkeys is checked decoded, line by line, blank lines aside (K12).
func TestCheckSSHKeys(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp)))
	enc := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	if err := CheckSSHKeys(enc(key + " a@lab\n  \n" + key + " b@lab\n")); err != nil {
		t.Fatalf("two keys: %v", err)
	}
	if err := CheckSSHKeys(enc(key + " a@lab\nnot-a-key")); err == nil || err.Error() != "SSH public key validation error" {
		t.Fatalf("a bad line: %v", err)
	}
	if err := CheckSSHKeys(key[:20]); err == nil {
		t.Fatal("a truncated key passed")
	}
}

// cipassword is stored hashed unless it is a crypt hash already.
func TestCryptPassword(t *testing.T) {
	h := CryptPassword("secret", "0011223344556677")
	if !IsCrypted(h) || !strings.HasPrefix(h, "$6$0011223344556677$") || strings.Contains(h, "secret") {
		t.Fatalf("CryptPassword = %q", h)
	}
	hash := func(c string) string { return c[strings.LastIndex(c, "$"):] }
	if hash(h) == hash(CryptPassword("secret", "8899aabbccddeeff")) || h == CryptPassword("other", "0011223344556677") {
		t.Fatal("the hash ignores the salt or the password")
	}
	for pw, want := range map[string]bool{"secret": false, "$6$salt$hash": true, "$5$s$h": true, "$2y$s$h": true, "$6$nohash": false, "$7$s$h": false} {
		if IsCrypted(pw) != want {
			t.Errorf("IsCrypted(%q) = %v", pw, !want)
		}
	}
}

package core

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// signAt signs a PVE ticket for user as of at with key, the way
// Ticket.pm assemble_rsa_ticket does with Crypt::OpenSSL::RSA's defaults,
// SHA-1 and PKCS#1 v1.5 (written out here, independently of pvesim/ticket, so
// a mistake on either side shows; pveapi's TestTicketsAsPerlSignsThem
// holds both to Perl's own library).
func signAt(t *testing.T, key *rsa.PrivateKey, user string, at time.Time) string {
	t.Helper()
	plain := fmt.Sprintf("PVE:%s:%08X", user, at.Unix())
	sum := sha1.Sum([]byte(plain))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA1, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return plain + "::" + base64.StdEncoding.EncodeToString(sig)
}

func (s *Sim) testAuthKey(t *testing.T, node string) *rsa.PrivateKey {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	kf, err := s.readKeyLocked(s.dbOf(node), authPrivRel)
	if err != nil {
		t.Fatalf("reading /etc/pve/priv/authkey.key: %v", err)
	}
	return kf.Priv
}

func (s *Sim) backdate(t *testing.T, node, rel string, age time.Duration) {
	t.Helper()
	p := filepath.Join(s.etcPveDir(s.dbOf(node).ID), rel)
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestTicketsCheckedAsPVEChecksThem: the simulator accepts exactly the
// tickets PVE's verify_ticket accepts: signed with the cluster's authkey
// (RSA, SHA-1, PKCS#1 v1.5), younger than 2 h, not more than 5 min in the future,
// not older than the key, and, after a rotation, signed with the old key
// only before it was rotated; writes with a ticket need a CSRF token made
// from pve-www.key.
func TestTicketsCheckedAsPVEChecksThem(t *testing.T) {
	s := startSim(t, simOpts{nodes: 2})
	c := newClient(t, s, "pve01")
	with := func(ticket string) int {
		c.ticket, c.csrf = ticket, ""
		return c.call("GET", "/nodes", nil).status
	}
	key := s.testAuthKey(t, "pve01")
	now := time.Now()
	// The files are where PVE keeps them, in the PEM forms PVE writes.
	pemType := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(s.etcPveDir(s.dbOf("pve01").ID), rel))
		if err != nil {
			t.Errorf("/etc/pve/%s: %v", rel, err)
			return ""
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			return "not PEM"
		}
		return blk.Type
	}
	// gen_auth_key: openssl genrsa (PKCS#8 with OpenSSL 3), openssl rsa -pubout
	for rel, want := range map[string]string{authPrivRel: "PRIVATE KEY", authPubRel: "PUBLIC KEY", wwwKeyRel: "PRIVATE KEY"} {
		if got := pemType(rel); got != want {
			t.Errorf("/etc/pve/%s is a PEM %q, want %q", rel, got, want)
		}
	}

	if got := with(signAt(t, key, "root@pam", now)); got != 200 {
		t.Errorf("a ticket signed with the authkey: %d", got)
	}
	// The same key and time, signed SHA-256: not what PVE's Perl verifies.
	plain := fmt.Sprintf("PVE:root@pam:%08X", now.Unix())
	sum256 := sha256.Sum256([]byte(plain))
	sig256, _ := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum256[:])
	if got := with(plain + "::" + base64.StdEncoding.EncodeToString(sig256)); got != 401 {
		t.Errorf("a ticket signed SHA-256 (not Crypt::OpenSSL::RSA's default): %d, want 401", got)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	if got := with(signAt(t, other, "root@pam", now)); got != 401 {
		t.Errorf("a ticket signed with another key: %d, want 401", got)
	}
	if got := with(signAt(t, s.testAuthKey(t, "pve02"), "root@pam", now)); got != 401 {
		t.Errorf("a ticket signed with another node's (another cluster's) authkey: %d, want 401", got)
	}
	// A fresh key: a ticket cannot be older than the key (+5 min).
	if got := with(signAt(t, key, "root@pam", now.Add(-time.Hour))); got != 401 {
		t.Errorf("a ticket older than its key: %d, want 401", got)
	}
	// A key 3 h old: the 2 h lifetime and the 5 min of clock skew decide.
	s.backdate(t, "pve01", authPubRel, 3*time.Hour)
	for _, tc := range []struct {
		age  time.Duration
		want int
	}{{2*time.Hour - time.Minute, 200}, {2*time.Hour + 5*time.Second, 401}, {-4 * time.Minute, 200}, {-6 * time.Minute, 401}} {
		if got := with(signAt(t, key, "root@pam", now.Add(-tc.age))); got != tc.want {
			t.Errorf("ticket %s old: %d, want %d", tc.age, got, tc.want)
		}
	}

	// Writes need the CSRF token of pve-www.key.
	c.ticket = signAt(t, key, "root@pam", now)
	body := map[string]any{"poolid": "p1"}
	if r := c.callJSON("POST", "/pools", body); r.status != 401 {
		t.Errorf("write without CSRF token: %d, want 401", r.status)
	}
	s.mu.Lock()
	good, err := s.makeCSRFLocked(s.dbOf("pve01"), "root@pam", now)
	stale, _ := s.makeCSRFLocked(s.dbOf("pve01"), "root@pam", now.Add(-2*time.Hour-time.Second))
	otherNode, _ := s.makeCSRFLocked(s.dbOf("pve02"), "root@pam", now)
	forUser, _ := s.makeCSRFLocked(s.dbOf("pve01"), "alice@pve", now)
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"stale": stale, "another pve-www.key": otherNode, "another user": forUser} {
		c.csrf = tok
		if r := c.callJSON("POST", "/pools", body); r.status != 401 {
			t.Errorf("write with a %s CSRF token: %d, want 401", name, r.status)
		}
	}
	c.csrf = good
	if r := c.callJSON("POST", "/pools", body); r.status != 200 {
		t.Errorf("write with ticket and CSRF token: %d %s", r.status, r.reason)
	}

	// A key older than 24 h: a quorate PVE refuses fresh tickets signed
	// with it; the next login rotates it, and the old key still verifies
	// tickets made before the rotation.
	s.backdate(t, "pve01", authPubRel, 25*time.Hour)
	if got := with(signAt(t, key, "root@pam", now)); got != 401 {
		t.Errorf("a fresh ticket signed with a key due for rotation: %d, want 401", got)
	}
	c.ticket = ""
	c.root() // login: get_privkey rotates
	newKey := s.testAuthKey(t, "pve01")
	if newKey.Equal(key) {
		t.Fatalf("the login did not rotate a 25 h old authkey")
	}
	if got := with(c.ticket); got != 200 {
		t.Errorf("the login's ticket after the rotation: %d", got)
	}
	// rotate_authkey: get_private_key_string, get_public_key_x509_string
	for rel, want := range map[string]string{authPrivRel: "RSA PRIVATE KEY", authPubRel: "PUBLIC KEY", authPubOldRel: "PUBLIC KEY"} {
		if got := pemType(rel); got != want {
			t.Errorf("after a rotation /etc/pve/%s is a PEM %q, want %q", rel, got, want)
		}
	}
	// as if the rotation happened an hour ago
	s.backdate(t, "pve01", authPubOldRel, time.Hour)
	s.backdate(t, "pve01", authPubRel, time.Hour)
	if got := with(signAt(t, key, "root@pam", now.Add(-90*time.Minute))); got != 200 {
		t.Errorf("an old-key ticket made before the rotation: %d, want 200", got)
	}
	if got := with(signAt(t, key, "root@pam", now.Add(-10*time.Minute))); got != 401 {
		t.Errorf("an old-key ticket made after the rotation: %d, want 401", got)
	}
}

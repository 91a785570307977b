package pvesim

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

	"github.com/gopve/proxmox/modules-src/lab/pvesim/ticket"
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

func testAuthKey(t *testing.T, s *Sim, node string) *rsa.PrivateKey {
	t.Helper()
	k, err := s.AuthKey(node)
	if err != nil {
		t.Fatalf("reading /etc/pve/priv/authkey.key: %v", err)
	}
	return k
}

func backdate(t *testing.T, s *Sim, node, rel string, age time.Duration) {
	t.Helper()
	if err := s.Backdate(node, rel, age); err != nil {
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
	s := startSim(t, simOpts{Nodes: 2})
	c := newClient(t, s, "pve01")
	with := func(ticket string) int {
		c.Ticket, c.CSRF = ticket, ""
		return c.Call("GET", "/nodes", nil).Status
	}
	key := testAuthKey(t, s, "pve01")
	now := time.Now()
	// The files are where PVE keeps them, in the PEM forms PVE writes.
	pemType := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(s.EtcPveDir("pve01"), rel))
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
	for rel, want := range map[string]string{ticket.PrivRel: "PRIVATE KEY", ticket.PubRel: "PUBLIC KEY", ticket.WWWKeyRel: "PRIVATE KEY"} {
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
	if got := with(signAt(t, testAuthKey(t, s, "pve02"), "root@pam", now)); got != 401 {
		t.Errorf("a ticket signed with another node's (another cluster's) authkey: %d, want 401", got)
	}
	// A fresh key: a ticket cannot be older than the key (+5 min).
	if got := with(signAt(t, key, "root@pam", now.Add(-time.Hour))); got != 401 {
		t.Errorf("a ticket older than its key: %d, want 401", got)
	}
	// A key 3 h old: the 2 h lifetime and the 5 min of clock skew decide.
	backdate(t, s, "pve01", ticket.PubRel, 3*time.Hour)
	for _, tc := range []struct {
		age  time.Duration
		want int
	}{{2*time.Hour - time.Minute, 200}, {2*time.Hour + 5*time.Second, 401}, {-4 * time.Minute, 200}, {-6 * time.Minute, 401}} {
		if got := with(signAt(t, key, "root@pam", now.Add(-tc.age))); got != tc.want {
			t.Errorf("ticket %s old: %d, want %d", tc.age, got, tc.want)
		}
	}

	// Writes need the CSRF token of pve-www.key.
	c.Ticket = signAt(t, key, "root@pam", now)
	body := map[string]any{"poolid": "p1"}
	if r := c.CallJSON("POST", "/pools", body); r.Status != 401 {
		t.Errorf("write without CSRF token: %d, want 401", r.Status)
	}
	s.Mu.Lock()
	good, err := s.MakeCSRFLocked(s.DBOf("pve01"), "root@pam", now)
	stale, _ := s.MakeCSRFLocked(s.DBOf("pve01"), "root@pam", now.Add(-2*time.Hour-time.Second))
	otherNode, _ := s.MakeCSRFLocked(s.DBOf("pve02"), "root@pam", now)
	forUser, _ := s.MakeCSRFLocked(s.DBOf("pve01"), "alice@pve", now)
	s.Mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"stale": stale, "another pve-www.key": otherNode, "another user": forUser} {
		c.CSRF = tok
		if r := c.CallJSON("POST", "/pools", body); r.Status != 401 {
			t.Errorf("write with a %s CSRF token: %d, want 401", name, r.Status)
		}
	}
	c.CSRF = good
	if r := c.CallJSON("POST", "/pools", body); r.Status != 200 {
		t.Errorf("write with ticket and CSRF token: %d %s", r.Status, r.Reason)
	}

	// A key older than 24 h: a quorate PVE refuses fresh tickets signed
	// with it; the next login rotates it, and the old key still verifies
	// tickets made before the rotation.
	backdate(t, s, "pve01", ticket.PubRel, 25*time.Hour)
	if got := with(signAt(t, key, "root@pam", now)); got != 401 {
		t.Errorf("a fresh ticket signed with a key due for rotation: %d, want 401", got)
	}
	c.Ticket = ""
	c.Root() // login: get_privkey rotates
	newKey := testAuthKey(t, s, "pve01")
	if newKey.Equal(key) {
		t.Fatalf("the login did not rotate a 25 h old authkey")
	}
	if got := with(c.Ticket); got != 200 {
		t.Errorf("the login's ticket after the rotation: %d", got)
	}
	// rotate_authkey: get_private_key_string, get_public_key_x509_string
	for rel, want := range map[string]string{ticket.PrivRel: "RSA PRIVATE KEY", ticket.PubRel: "PUBLIC KEY", ticket.PubOldRel: "PUBLIC KEY"} {
		if got := pemType(rel); got != want {
			t.Errorf("after a rotation /etc/pve/%s is a PEM %q, want %q", rel, got, want)
		}
	}
	// as if the rotation happened an hour ago
	backdate(t, s, "pve01", ticket.PubOldRel, time.Hour)
	backdate(t, s, "pve01", ticket.PubRel, time.Hour)
	if got := with(signAt(t, key, "root@pam", now.Add(-90*time.Minute))); got != 200 {
		t.Errorf("an old-key ticket made before the rotation: %d, want 200", got)
	}
	if got := with(signAt(t, key, "root@pam", now.Add(-10*time.Minute))); got != 401 {
		t.Errorf("an old-key ticket made after the rotation: %d, want 401", got)
	}
}

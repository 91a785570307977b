package ticket

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"testing"
	"time"
)

// testKey is one RSA key for the whole file: generating 2048-bit keys is
// the slow part of these tests.
var testKey = func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}()

// TestAgeRange pins get_ticket_age_range (AccessControl.pm): a fresh key
// limits tickets to its own age (+5 min grace), a key older than 24 h on a
// quorate cluster refuses tickets younger than its overdue rotation, the
// old key only tickets from before its rotation, and none once that is
// more than a ticket's lifetime ago.
func TestAgeRange(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name             string
		keyAge           time.Duration
		rotated, quorate bool
		lo, hi           int64
		ok               bool
	}{
		{"fresh key", 10 * time.Minute, false, true, -300, 900, true},
		{"key made in the future counts as age 0", -time.Hour, false, true, -300, 300, true},
		{"key older than a ticket", 3 * time.Hour, false, true, -300, 7200, true},
		{"key overdue for rotation, quorate", 25 * time.Hour, false, true, 3600, 7200, true},
		{"key overdue for rotation, not quorate", 25 * time.Hour, false, false, -300, 7200, true},
		{"old key rotated an hour ago", time.Hour, true, true, 3300, 7200, true},
		{"old key rotated 3 h ago", 3 * time.Hour, true, true, 0, 0, false},
	} {
		lo, hi, ok := AgeRange(now, now.Add(-tc.keyAge), tc.rotated, tc.quorate)
		if lo != tc.lo || hi != tc.hi || ok != tc.ok {
			t.Errorf("%s: (%d, %d, %v), want (%d, %d, %v)", tc.name, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// TestAuthkeyCurrent pins check_authkey: rotate a missing key, one 24 h
// old or one made more than 5 min in the future unless the old key is
// within a ticket's lifetime before it; never rotate without quorum.
func TestAuthkeyCurrent(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	key := func(age time.Duration) *Key { return &Key{MTime: now.Add(-age)} }
	for _, tc := range []struct {
		name     string
		pub, old *Key
		quorate  bool
		want     bool
	}{
		{"missing key", nil, nil, true, false},
		{"missing key, no quorum", nil, nil, false, true},
		{"an hour old", key(time.Hour), nil, true, true},
		{"24 h old", key(24 * time.Hour), nil, true, false},
		{"25 h old, no quorum", key(25 * time.Hour), nil, false, true},
		{"4 min in the future", key(-4 * time.Minute), nil, true, true},
		{"10 min in the future, no old key", key(-10 * time.Minute), nil, true, false},
		{"10 min in the future, old key an hour before it", key(-10 * time.Minute), key(50 * time.Minute), true, true},
		{"10 min in the future, old key 3 h before it", key(-10 * time.Minute), key(170 * time.Minute), true, false},
		{"10 min in the future, old key newer", key(-10 * time.Minute), key(-20 * time.Minute), true, false},
	} {
		if got := AuthkeyCurrent(now, tc.pub, tc.old, tc.quorate); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// signAt is assemble_rsa_ticket written out independently of Sign.
func signAt(t *testing.T, user string, at time.Time) string {
	t.Helper()
	plain := fmt.Sprintf("PVE:%s:%08X", user, at.Unix())
	sum := sha1.Sum([]byte(plain))
	sig, err := rsa.SignPKCS1v15(rand.Reader, testKey, crypto.SHA1, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return plain + "::" + base64.StdEncoding.EncodeToString(sig)
}

// TestSignAndVerify: Sign makes what verify_ticket accepts (user escaped
// for ':'), within the key's window, and only for the digest and key that
// signed it; the old key is tried after the current one.
func TestSignAndVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	other, _ := rsa.GenerateKey(rand.Reader, 1024)
	cur := &Key{Pub: &testKey.PublicKey, MTime: now.Add(-3 * time.Hour)}
	otherKey := &Key{Pub: &other.PublicKey, MTime: now.Add(-3 * time.Hour)}

	tk, err := Sign(testKey, DefaultHash, "a:b@pve", now)
	if err != nil {
		t.Fatal(err)
	}
	if got := signAt(t, "a%3Ab@pve", now); got[:len("PVE:a%3Ab@pve:")+8] != tk[:len("PVE:a%3Ab@pve:")+8] {
		t.Errorf("Sign's plain text %q, want the one of %q", tk, got)
	}
	if u, ok := Verify(tk, DefaultHash, cur, nil, true, now); !ok || u != "a:b@pve" {
		t.Errorf("Verify(Sign) = %q, %v", u, ok)
	}
	if _, ok := Verify(tk, crypto.SHA256, cur, nil, true, now); ok {
		t.Errorf("a SHA-1 ticket verified as SHA-256")
	}
	if _, ok := Verify(tk, DefaultHash, otherKey, nil, true, now); ok {
		t.Errorf("a ticket verified with another key")
	}
	if u, ok := Verify(tk, DefaultHash, otherKey, &Key{Pub: &testKey.PublicKey, MTime: now.Add(-time.Hour)}, true, now); ok {
		t.Errorf("an old-key ticket made after the rotation verified as %q", u)
	}
	old := &Key{Pub: &testKey.PublicKey, MTime: now.Add(-time.Hour)}
	if u, ok := Verify(signAt(t, "root@pam", now.Add(-90*time.Minute)), DefaultHash, otherKey, old, true, now); !ok || u != "root@pam" {
		t.Errorf("an old-key ticket from before the rotation: %q, %v", u, ok)
	}
	for _, tc := range []struct {
		age  time.Duration
		want bool
	}{{2*time.Hour - time.Minute, true}, {2*time.Hour + 5*time.Second, false}, {-4 * time.Minute, true}, {-6 * time.Minute, false}} {
		if _, ok := Verify(signAt(t, "root@pam", now.Add(-tc.age)), DefaultHash, cur, nil, true, now); ok != tc.want {
			t.Errorf("a ticket %s old: %v, want %v", tc.age, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "PVE:root@pam", tk + "x:", "PVE::" + tk[len("PVE:a%3Ab@pve:"):]} {
		if _, ok := Verify(bad, DefaultHash, cur, nil, true, now); ok {
			t.Errorf("Verify(%q) accepted", bad)
		}
	}
}

// TestCSRF: a token is tied to the www key, the user and a window of
// -5 min to 2 h.
func TestCSRF(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	secret := CSRFSecret([]byte("www key"))
	if secret == CSRFSecret([]byte("another www key")) {
		t.Fatal("two www keys give the same secret")
	}
	for _, tc := range []struct {
		name         string
		secret, user string
		at           time.Time
		want         bool
	}{
		{"fresh", secret, "root@pam", now, true},
		{"almost 2 h old", secret, "root@pam", now.Add(-2*time.Hour + time.Second), true},
		{"2 h old", secret, "root@pam", now.Add(-2 * time.Hour), false},
		{"4 min ahead", secret, "root@pam", now.Add(4 * time.Minute), true},
		{"5 min ahead", secret, "root@pam", now.Add(5 * time.Minute), false},
		{"another user", secret, "alice@pve", now, false},
		{"another www key", CSRFSecret([]byte("another www key")), "root@pam", now, false},
	} {
		tok := MakeCSRF(tc.secret, tc.user, tc.at)
		if got := VerifyCSRF(secret, "root@pam", tok, now); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestKeyFiles: the first keys are PKCS#8 (openssl genrsa with OpenSSL 3),
// a rotation's private key PKCS#1; ParseKey reads either, and the public
// keys in X.509 form.
func TestKeyFiles(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	first, err := InitialFiles(PrivRel)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := RotatedPair()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel  string
		pem  []byte
		priv bool
	}{{PrivRel, first[PrivRel], true}, {PubRel, first[PubRel], false}, {PrivRel, priv, true}, {PubRel, pub, false}} {
		k, err := ParseKey(tc.rel, tc.pem, at)
		if err != nil {
			t.Errorf("%s: %v", tc.rel, err)
			continue
		}
		if (k.Priv != nil) != tc.priv || (k.Pub != nil) == tc.priv || !k.MTime.Equal(at) {
			t.Errorf("%s: %+v", tc.rel, k)
		}
	}
	if _, err := ParseKey(PrivRel, first[PubRel], at); err == nil {
		t.Errorf("a public key read as the private key")
	}
	www, err := InitialFiles(WWWKeyRel)
	if err != nil || len(www) != 1 || www[WWWKeyRel] == nil {
		t.Errorf("InitialFiles(%s) = %v, %v", WWWKeyRel, www, err)
	}
}

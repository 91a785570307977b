// Package ticket is the simulator's model of PVE's tickets and CSRF
// tokens: how they are made and checked, and when the key that signs them
// is rotated. It follows pve-access-control's src/PVE/AccessControl.pm
// (check_authkey, rotate_authkey, get_privkey, get_ticket_age_range,
// assemble_ticket, verify_ticket, assemble_csrf_prevention_token,
// verify_csrf_prevention_token) and pve-common's src/PVE/Ticket.pm
// (assemble_rsa_ticket, verify_rsa_ticket, assemble_csrf_prevention_token,
// verify_csrf_prevention_token), and pve-cluster's Cluster/Setup.pm
// gen_auth_key and gen_pve_www_key for the first keys:
//
//   - priv/authkey.key (RSA private key), authkey.pub and, after a
//     rotation, authkey.pub.old; their mtimes are the keys' ages.
//     gen_auth_key makes the first pair with `openssl genrsa 2048`
//     (PKCS#8 "PRIVATE KEY" with OpenSSL 3, as Debian 12 and 13 have) and
//     `openssl rsa -pubout` ("PUBLIC KEY"); rotate_authkey the next ones:
//     get_private_key_string ("RSA PRIVATE KEY", PKCS#1) and
//     get_public_key_x509_string ("PUBLIC KEY"), pub.old written before pub.
//     Keys are read as Crypt::OpenSSL::RSA's new_private_key and
//     new_public_key read them (either PEM form of each).
//   - A ticket is "PVE:<user>:<%08X time>::<base64 signature>"
//     (assemble_rsa_ticket; the user uri_escape'd for ':'), signed with
//     Crypt::OpenSSL::RSA's sign as PVE calls it, with the library's
//     defaults: SHA-1 and PKCS#1 v1.5 (make_rsa_obj's hashMode NID_sha1 in
//     0.33, Debian 12 / PVE 8, and 0.35, Debian 13 / PVE 9; 0.35 asks for
//     OAEP padding, which OpenSSL refuses for a signature, so v1.5 stays).
//     Measured with Debian's packages, and checked against them by
//     pveapi's TestTicketsAsPerlSignsThem. The digest is an input: the
//     simulator's Config.TicketHash may name another (a hypothetical node).
//   - verify_ticket tries authkey.pub, then authkey.pub.old, each with the
//     age window of get_ticket_age_range (AgeRange), strict bounds as in
//     verify_rsa_ticket.
//   - get_privkey (called to issue a ticket) rotates first when the key
//     is missing or check_authkey (AuthkeyCurrent) says so: older than
//     24 h, or made more than 5 min in the future, never while the cluster
//     is not quorate.
//   - CSRF: secret = hmac_sha256_base64(contents of pve-www.key), token =
//     "<%08X time>:" + hmac_sha256_base64("<time>:<user>", secret),
//     accepted from -5 min to 2 h old (checked against Perl's Digest::SHA
//     by the same test). The legacy SHA-1 form PVE still recognises by
//     length is not modelled (its current verify cannot match it either).
//
// It is a rule package below the simulator's core (issue 27 §1), as
// pvesim/access is: pvesim/core keeps the files under /etc/pve, the lock
// they are read under and the cluster's quorum, and passes them in (Files,
// files.go: which key is read, rotated and written when, as get_privkey,
// rotate_authkey and $get_csrfr_secret do, is this package's); this
// package never imports pvesim and opens no file itself.
package ticket

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha1" // the digest of PVE's tickets
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// AccessControl.pm's $ticket_lifetime, $auth_graceperiod, $authkey_lifetime.
const (
	Lifetime        = 2 * time.Hour
	GracePeriod     = 5 * time.Minute
	AuthkeyLifetime = 24 * time.Hour
)

// The key files, relative to /etc/pve.
const (
	PrivRel   = "priv/authkey.key"
	PubRel    = "authkey.pub"
	PubOldRel = "authkey.pub.old"
	WWWKeyRel = "pve-www.key"
)

// DefaultHash is Crypt::OpenSSL::RSA's default digest, what PVE signs with.
const DefaultHash = crypto.SHA1

// newRSAKeyPEM is `openssl genrsa 2048`: an RSA key in PKCS#8 PEM, as
// OpenSSL 3 writes it.
func newRSAKeyPEM() ([]byte, *rsa.PrivateKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), k, nil
}

func publicPEM(k *rsa.PublicKey) []byte {
	der, _ := x509.MarshalPKIXPublicKey(k)
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// InitialFiles is what a fresh /etc/pve gets for rel (PrivRel or
// WWWKeyRel), once: gen_auth_key's pair for PrivRel, gen_pve_www_key's key.
func InitialFiles(rel string) (map[string][]byte, error) {
	privPEM, k, err := newRSAKeyPEM()
	if err != nil {
		return nil, err
	}
	if rel == WWWKeyRel {
		return map[string][]byte{WWWKeyRel: privPEM}, nil
	}
	return map[string][]byte{PrivRel: privPEM, PubRel: publicPEM(&k.PublicKey)}, nil
}

// RotatedPair is rotate_authkey's new pair: the public key as
// get_public_key_x509_string writes it, the private one as
// get_private_key_string does. The caller writes authkey.pub.old (the
// current public key) first, then pub, then priv.
func RotatedPair() (pub, priv []byte, err error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	priv = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	return publicPEM(&k.PublicKey), priv, nil
}

// Key is one key file as read: Priv for PrivRel, Pub for the others.
type Key struct {
	Pub   *rsa.PublicKey
	Priv  *rsa.PrivateKey
	MTime time.Time
}

// ParseKey reads the PEM contents of the key file rel (modified at
// mtime) as Crypt::OpenSSL::RSA does: new_private_key for PrivRel (PKCS#1
// or PKCS#8), new_public_key otherwise ("RSA PUBLIC KEY" or "PUBLIC KEY").
func ParseKey(rel string, b []byte, mtime time.Time) (*Key, error) {
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("/etc/pve/%s: not PEM", rel)
	}
	kf := &Key{MTime: mtime}
	if rel == PrivRel {
		if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
			kf.Priv = k
		} else if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
			kf.Priv, _ = k.(*rsa.PrivateKey)
		}
		if kf.Priv == nil {
			return nil, fmt.Errorf("/etc/pve/%s: not an RSA private key", rel)
		}
		return kf, nil
	}
	if k, err := x509.ParsePKCS1PublicKey(blk.Bytes); err == nil {
		kf.Pub = k
		return kf, nil
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("/etc/pve/%s: %w", rel, err)
	}
	if kf.Pub, _ = k.(*rsa.PublicKey); kf.Pub == nil {
		return nil, fmt.Errorf("/etc/pve/%s: not an RSA public key", rel)
	}
	return kf, nil
}

// AuthkeyCurrent is check_authkey: false when the key must be rotated.
// pub and old are authkey.pub and authkey.pub.old, nil when missing or
// unreadable; a cluster without quorum never rotates.
func AuthkeyCurrent(now time.Time, pub, old *Key, quorate bool) bool {
	if !quorate {
		return true // rotation is impossible anyway
	}
	if pub == nil {
		return false
	}
	switch {
	case now.Sub(pub.MTime) >= AuthkeyLifetime:
		return false
	case pub.MTime.After(now.Add(GracePeriod)):
		// a key made in the future (a node's clock ahead): left alone
		// while the old key is still within a ticket's lifetime of it
		return old != nil && !pub.MTime.Before(old.MTime) && pub.MTime.Sub(old.MTime) < Lifetime
	}
	return true
}

// Sign is assemble_ticket for user at now, signed with priv and digest h.
func Sign(priv *rsa.PrivateKey, h crypto.Hash, user string, now time.Time) (string, error) {
	plain := fmt.Sprintf("PVE:%s:%08X", strings.ReplaceAll(user, ":", "%3A"), now.Unix())
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv, h, digest(h, plain))
	if err != nil {
		return "", err
	}
	return plain + "::" + base64.StdEncoding.EncodeToString(sig), nil
}

func digest(h crypto.Hash, msg string) []byte {
	d := h.New()
	d.Write([]byte(msg))
	return d.Sum(nil)
}

// Ticket.pm verify_rsa_ticket's shapes for the prefix "PVE".
var (
	ticketRe = regexp.MustCompile(`^(PVE:\S+)::([^:\s]+)$`)
	plainRe  = regexp.MustCompile(`^PVE:(?:(\S+):)?([A-Z0-9]{8})$`)
)

// AgeRange is get_ticket_age_range: the ages (seconds, exclusive) a
// ticket checked with a key of this mtime may have; ok false when none.
// rotated: the key is authkey.pub.old.
func AgeRange(now, mtime time.Time, rotated, quorate bool) (lo, hi int64, ok bool) {
	keyAge := int64(now.Sub(mtime) / time.Second)
	if keyAge < 0 {
		keyAge = 0
	}
	grace, life, keyLife := int64(GracePeriod/time.Second), int64(Lifetime/time.Second), int64(AuthkeyLifetime/time.Second)
	lo, hi = -grace, life
	if rotated {
		// no ticket may have been made with the old key after the rotation
		lo = keyAge - grace
	} else {
		if keyAge > keyLife && quorate {
			lo = keyAge - keyLife // the key should have been rotated
		}
		if keyAge < life {
			hi = keyAge + grace
		}
	}
	if lo > life {
		return 0, 0, false
	}
	return lo, hi, true
}

// Verify is verify_ticket: the user of a ticket signed (digest h) by pub,
// authkey.pub, or else by old, authkey.pub.old, within its window; nil
// keys are missing files.
func Verify(ticket string, h crypto.Hash, pub, old *Key, quorate bool, now time.Time) (string, bool) {
	m := ticketRe.FindStringSubmatch(ticket)
	if m == nil {
		return "", false
	}
	plain := m[1]
	sig, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil {
		return "", false
	}
	sum := digest(h, plain)
	for i, kf := range []*Key{pub, old} {
		if kf == nil {
			continue
		}
		lo, hi, ok := AgeRange(now, kf.MTime, i == 1, quorate)
		if !ok || rsa.VerifyPKCS1v15(kf.Pub, h, sum, sig) != nil {
			continue
		}
		pm := plainRe.FindStringSubmatch(plain)
		if pm == nil || pm[1] == "" {
			continue
		}
		ts, err := strconv.ParseInt(pm[2], 16, 64)
		if err != nil {
			continue
		}
		if age := now.Unix() - ts; age > lo && age < hi {
			user, err := url.PathUnescape(pm[1]) // uri_unescape
			if err != nil {
				continue
			}
			return user, true
		}
	}
	return "", false
}

// CSRFChecked is auth_handler's rule (pve-manager PVE/HTTPServer.pm): a
// request authenticated by a ticket (byTicket; a token's never) must carry
// a valid CSRFPreventionToken unless its HTTP method is GET; an upload's is
// not checked (pveproxy authenticates it before reading its body).
func CSRFChecked(byTicket bool, method string, upload bool) bool {
	return byTicket && method != "GET" && !upload
}

// CSRFSecret is $get_csrfr_secret of pve-www.key's contents.
func CSRFSecret(wwwKey []byte) string {
	return hmacB64(wwwKey, nil)
}

func hmacB64(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// MakeCSRF is assemble_csrf_prevention_token for user at now.
func MakeCSRF(secret, user string, now time.Time) string {
	ts := fmt.Sprintf("%08X", now.Unix())
	return ts + ":" + hmacB64([]byte(secret), []byte(ts+":"+user))
}

var csrfRe = regexp.MustCompile(`^([A-Z0-9]{8}):(\S+)$`)

// VerifyCSRF is verify_csrf_prevention_token with PVE's window
// (-auth_graceperiod, ticket_lifetime).
func VerifyCSRF(secret, user, token string, now time.Time) bool {
	m := csrfRe.FindStringSubmatch(token)
	if m == nil {
		return false
	}
	ts, err := strconv.ParseInt(m[1], 16, 64)
	if err != nil {
		return false
	}
	want := hmacB64([]byte(secret), []byte(m[1]+":"+user))
	age := now.Unix() - ts
	return hmac.Equal([]byte(want), []byte(m[2])) &&
		age > -int64(GracePeriod/time.Second) && age < int64(Lifetime/time.Second)
}

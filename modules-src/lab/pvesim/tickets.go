package pvesim

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
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Tickets and CSRF tokens as PVE makes and checks them, with the keys where
// PVE keeps them, in the DB's /etc/pve directory (so a module on a node
// that reads them mints what this simulator accepts, and nothing else):
//
//   - priv/authkey.key (RSA private key), authkey.pub and, after a
//     rotation, authkey.pub.old; their mtimes are the keys' ages. pve-cluster
//     Setup.pm gen_auth_key makes the first pair with `openssl genrsa 2048`
//     (PKCS#8 "PRIVATE KEY" with OpenSSL 3, as Debian 12 and 13 have) and
//     `openssl rsa -pubout` ("PUBLIC KEY"); AccessControl.pm rotate_authkey
//     the next ones: get_private_key_string ("RSA PRIVATE KEY", PKCS#1) and
//     get_public_key_x509_string ("PUBLIC KEY"), pub.old written before pub.
//     Keys are read as Crypt::OpenSSL::RSA's new_private_key and
//     new_public_key read them (either PEM form of each).
//   - A ticket is "PVE:<user>:<%08X time>::<base64 signature>" (pve-common
//     Ticket.pm assemble_rsa_ticket; the user uri_escape'd for ':'), signed
//     with Crypt::OpenSSL::RSA's sign as PVE calls it, with the library's
//     defaults: SHA-1 and PKCS#1 v1.5 (make_rsa_obj's hashMode NID_sha1 in
//     0.33, Debian 12 / PVE 8, and 0.35, Debian 13 / PVE 9; 0.35 asks for
//     OAEP padding, which OpenSSL refuses for a signature, so v1.5 stays).
//     Measured with Debian's packages, and checked against them by
//     pveapi's TestTicketsAsPerlSignsThem. Config.TicketHash may name
//     another digest: a hypothetical node, for local mode's second form.
//   - verify_ticket tries authkey.pub, then authkey.pub.old, each with the
//     age window of get_ticket_age_range (below), strict bounds as in
//     verify_rsa_ticket.
//   - get_privkey (called to issue a ticket) rotates first when the key
//     is missing or check_authkey says so: older than 24 h, or made more
//     than 5 min in the future, never while the cluster is not quorate.
//   - CSRF (AccessControl.pm + Ticket.pm): secret =
//     hmac_sha256_base64(contents of pve-www.key), token = "<%08X time>:" +
//     hmac_sha256_base64("<time>:<user>", secret), accepted from -5 min to
//     2 h old (checked against Perl's Digest::SHA by the same test). The
//     legacy SHA-1 form PVE still recognises by length is not modelled
//     (its current verify cannot match it either).
const (
	ticketLifetime  = 2 * time.Hour
	authGracePeriod = 5 * time.Minute
	authkeyLifetime = 24 * time.Hour
)

const (
	authPrivRel   = "priv/authkey.key"
	authPubRel    = "authkey.pub"
	authPubOldRel = "authkey.pub.old"
	wwwKeyRel     = "pve-www.key"
)

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

// initialAuthFiles is what a fresh /etc/pve gets for rel, once:
// gen_auth_key's pair for priv/authkey.key, gen_pve_www_key's key.
func initialAuthFiles(rel string) (map[string][]byte, error) {
	privPEM, k, err := newRSAKeyPEM()
	if err != nil {
		return nil, err
	}
	if rel == wwwKeyRel {
		return map[string][]byte{wwwKeyRel: privPEM}, nil
	}
	return map[string][]byte{authPrivRel: privPEM, authPubRel: publicPEM(&k.PublicKey)}, nil
}

type keyFile struct {
	pub   *rsa.PublicKey
	priv  *rsa.PrivateKey
	mtime time.Time
}

func (s *Sim) readKeyLocked(db *ConfigDB, rel string) (*keyFile, error) {
	p := filepath.Join(s.etcPveDir(db.ID), filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return nil, fmt.Errorf("/etc/pve/%s: not PEM", rel)
	}
	kf := &keyFile{mtime: st.ModTime()}
	if rel == authPrivRel {
		if k, err := x509.ParsePKCS1PrivateKey(blk.Bytes); err == nil {
			kf.priv = k
		} else if k, err := x509.ParsePKCS8PrivateKey(blk.Bytes); err == nil {
			kf.priv, _ = k.(*rsa.PrivateKey)
		}
		if kf.priv == nil {
			return nil, fmt.Errorf("/etc/pve/%s: not an RSA private key", rel)
		}
		return kf, nil
	}
	// new_public_key: "RSA PUBLIC KEY" (PKCS#1) or "PUBLIC KEY" (X.509)
	if k, err := x509.ParsePKCS1PublicKey(blk.Bytes); err == nil {
		kf.pub = k
		return kf, nil
	}
	k, err := x509.ParsePKIXPublicKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("/etc/pve/%s: %w", rel, err)
	}
	if kf.pub, _ = k.(*rsa.PublicKey); kf.pub == nil {
		return nil, fmt.Errorf("/etc/pve/%s: not an RSA public key", rel)
	}
	return kf, nil
}

// checkAuthkeyLocked is AccessControl.pm check_authkey: false when the
// key must be rotated.
func (s *Sim) checkAuthkeyLocked(db *ConfigDB, now time.Time) bool {
	if !s.quorateLocked(db) {
		return true // rotation is impossible anyway
	}
	pub, err := s.readKeyLocked(db, authPubRel)
	if err != nil {
		return false
	}
	switch {
	case now.Sub(pub.mtime) >= authkeyLifetime:
		return false
	case pub.mtime.After(now.Add(authGracePeriod)):
		old, err := s.readKeyLocked(db, authPubOldRel)
		return err == nil && !pub.mtime.Before(old.mtime) && pub.mtime.Sub(old.mtime) < ticketLifetime
	}
	return true
}

// rotateAuthkeyLocked is rotate_authkey: the old public key becomes
// authkey.pub.old, a new pair replaces it.
func (s *Sim) rotateAuthkeyLocked(db *ConfigDB) error {
	dir := s.etcPveDir(db.ID)
	if old, err := os.ReadFile(filepath.Join(dir, authPubRel)); err == nil {
		if err := writeEtcPveFile(dir, authPubOldRel, old); err != nil {
			return err
		}
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	if err := writeEtcPveFile(dir, authPubRel, publicPEM(&k.PublicKey)); err != nil {
		return err
	}
	privPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	return writeEtcPveFile(dir, authPrivRel, privPEM)
}

// privkeyLocked is get_privkey: the signing key, rotated first when due.
func (s *Sim) privkeyLocked(db *ConfigDB, now time.Time) (*rsa.PrivateKey, error) {
	priv, err := s.readKeyLocked(db, authPrivRel)
	if err != nil || !s.checkAuthkeyLocked(db, now) {
		if rerr := s.rotateAuthkeyLocked(db); rerr != nil {
			return nil, fmt.Errorf("rotating the auth key: %w", rerr)
		}
		if priv, err = s.readKeyLocked(db, authPrivRel); err != nil {
			return nil, err
		}
	}
	return priv.priv, nil
}

// makeTicketLocked is assemble_ticket for user.
func (s *Sim) makeTicketLocked(db *ConfigDB, user string, now time.Time) (string, error) {
	priv, err := s.privkeyLocked(db, now)
	if err != nil {
		return "", err
	}
	plain := fmt.Sprintf("PVE:%s:%08X", strings.ReplaceAll(user, ":", "%3A"), now.Unix())
	h := s.ticketHash()
	sig, err := rsa.SignPKCS1v15(rand.Reader, priv, h, digest(h, plain))
	if err != nil {
		return "", err
	}
	return plain + "::" + base64.StdEncoding.EncodeToString(sig), nil
}

// ticketHash is the digest of the nodes' Crypt::OpenSSL::RSA: SHA-1, its
// default, unless Config.TicketHash says otherwise.
func (s *Sim) ticketHash() crypto.Hash {
	if s.cfg.TicketHash != 0 {
		return s.cfg.TicketHash
	}
	return crypto.SHA1
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

// ticketAgeRange is get_ticket_age_range: the ages (seconds, exclusive)
// a ticket checked with a key of this mtime may have; ok false when none.
func ticketAgeRange(now, mtime time.Time, rotated, quorate bool) (lo, hi int64, ok bool) {
	keyAge := int64(now.Sub(mtime) / time.Second)
	if keyAge < 0 {
		keyAge = 0
	}
	grace, life, keyLife := int64(authGracePeriod/time.Second), int64(ticketLifetime/time.Second), int64(authkeyLifetime/time.Second)
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

// verifyTicketLocked is verify_ticket: the user of a ticket signed by the
// current key (or the previous one, within its window).
func (s *Sim) verifyTicketLocked(db *ConfigDB, ticket string, now time.Time) (string, bool) {
	m := ticketRe.FindStringSubmatch(ticket)
	if m == nil {
		return "", false
	}
	plain := m[1]
	sig, err := base64.StdEncoding.DecodeString(m[2])
	if err != nil {
		return "", false
	}
	h := s.ticketHash()
	sum := digest(h, plain)
	quorate := s.quorateLocked(db)
	for _, rel := range []string{authPubRel, authPubOldRel} {
		kf, err := s.readKeyLocked(db, rel)
		if err != nil {
			continue
		}
		lo, hi, ok := ticketAgeRange(now, kf.mtime, rel == authPubOldRel, quorate)
		if !ok || rsa.VerifyPKCS1v15(kf.pub, h, sum, sig) != nil {
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

// csrfSecretLocked is $get_csrfr_secret.
func (s *Sim) csrfSecretLocked(db *ConfigDB) (string, error) {
	b, err := os.ReadFile(filepath.Join(s.etcPveDir(db.ID), wwwKeyRel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", errors.New("/etc/pve/pve-www.key is missing")
		}
		return "", err
	}
	return hmacB64(b, nil), nil
}

func hmacB64(key, msg []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(msg)
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

func (s *Sim) makeCSRFLocked(db *ConfigDB, user string, now time.Time) (string, error) {
	secret, err := s.csrfSecretLocked(db)
	if err != nil {
		return "", err
	}
	ts := fmt.Sprintf("%08X", now.Unix())
	return ts + ":" + hmacB64([]byte(secret), []byte(ts+":"+user)), nil
}

var csrfRe = regexp.MustCompile(`^([A-Z0-9]{8}):(\S+)$`)

// verifyCSRFLocked is verify_csrf_prevention_token with PVE's window
// (-auth_graceperiod, ticket_lifetime).
func (s *Sim) verifyCSRFLocked(db *ConfigDB, user, token string, now time.Time) bool {
	m := csrfRe.FindStringSubmatch(token)
	if m == nil {
		return false
	}
	secret, err := s.csrfSecretLocked(db)
	if err != nil {
		return false
	}
	ts, err := strconv.ParseInt(m[1], 16, 64)
	if err != nil {
		return false
	}
	want := hmacB64([]byte(secret), []byte(m[1]+":"+user))
	age := now.Unix() - ts
	return hmac.Equal([]byte(want), []byte(m[2])) &&
		age > -int64(authGracePeriod/time.Second) && age < int64(ticketLifetime/time.Second)
}

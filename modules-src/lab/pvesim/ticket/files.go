package ticket

import (
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Files is a /etc/pve as the keys are read and written there, rel one of
// PrivRel, PubRel, PubOldRel and WWWKeyRel: the caller (pvesim/core) owns
// the directory and the lock it is read under.
type Files interface {
	// Read is a file's contents; a missing one's error is fs.ErrNotExist.
	Read(rel string) ([]byte, error)
	// ModTime is a file's mtime, the key's age.
	ModTime(rel string) (time.Time, error)
	// Write replaces a file.
	Write(rel string, b []byte) error
}

// ReadKey reads the key file rel with its mtime (ParseKey).
func ReadKey(f Files, rel string) (*Key, error) {
	b, err := f.Read(rel)
	if err != nil {
		return nil, err
	}
	mtime, err := f.ModTime(rel)
	if err != nil {
		return nil, err
	}
	return ParseKey(rel, b, mtime)
}

// pubKeys are authkey.pub and authkey.pub.old, nil where missing or
// unreadable.
func pubKeys(f Files) (pub, old *Key) {
	pub, _ = ReadKey(f, PubRel)
	old, _ = ReadKey(f, PubOldRel)
	return pub, old
}

// RotateAuthkey is rotate_authkey: the old public key becomes
// authkey.pub.old, a new pair (RotatedPair) replaces it.
func RotateAuthkey(f Files) error {
	if old, err := f.Read(PubRel); err == nil {
		if err := f.Write(PubOldRel, old); err != nil {
			return err
		}
	}
	pub, priv, err := RotatedPair()
	if err != nil {
		return err
	}
	if err := f.Write(PubRel, pub); err != nil {
		return err
	}
	return f.Write(PrivRel, priv)
}

// Privkey is get_privkey: the signing key, rotated first when it is
// missing or check_authkey (AuthkeyCurrent) says so; quorate is the
// cluster's quorum, asked only then.
func Privkey(f Files, now time.Time, quorate func() bool) (*rsa.PrivateKey, error) {
	priv, err := ReadKey(f, PrivRel)
	pub, old := pubKeys(f)
	if err != nil || !AuthkeyCurrent(now, pub, old, quorate()) {
		if rerr := RotateAuthkey(f); rerr != nil {
			return nil, fmt.Errorf("rotating the auth key: %w", rerr)
		}
		if priv, err = ReadKey(f, PrivRel); err != nil {
			return nil, err
		}
	}
	return priv.Priv, nil
}

// Issue is assemble_ticket for user at now with f's key (Privkey),
// digest h.
func Issue(f Files, h crypto.Hash, user string, now time.Time, quorate func() bool) (string, error) {
	priv, err := Privkey(f, now, quorate)
	if err != nil {
		return "", err
	}
	return Sign(priv, h, user, now)
}

// VerifyWith is verify_ticket with f's keys (Verify).
func VerifyWith(f Files, t string, h crypto.Hash, quorate bool, now time.Time) (string, bool) {
	pub, old := pubKeys(f)
	return Verify(t, h, pub, old, quorate, now)
}

// CSRFSecretOf is $get_csrfr_secret of f's pve-www.key.
func CSRFSecretOf(f Files) (string, error) {
	b, err := f.Read(WWWKeyRel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", errors.New("/etc/pve/pve-www.key is missing")
		}
		return "", err
	}
	return CSRFSecret(b), nil
}

// MakeCSRFWith is assemble_csrf_prevention_token with f's pve-www.key.
func MakeCSRFWith(f Files, user string, now time.Time) (string, error) {
	secret, err := CSRFSecretOf(f)
	if err != nil {
		return "", err
	}
	return MakeCSRF(secret, user, now), nil
}

// VerifyCSRFWith is verify_csrf_prevention_token with f's pve-www.key; a
// missing or unreadable key accepts no token.
func VerifyCSRFWith(f Files, user, token string, now time.Time) bool {
	secret, err := CSRFSecretOf(f)
	if err != nil {
		return false
	}
	return VerifyCSRF(secret, user, token, now)
}

package core

import (
	"crypto"
	"crypto/rsa"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/ticket"
)

// Tickets and CSRF tokens as PVE makes and checks them (pvesim/ticket),
// with the keys where PVE keeps them, in the DB's /etc/pve directory (so a
// module on a node that reads them mints what this simulator accepts, and
// nothing else). This file reads and writes those files and asks the
// cluster's quorum; the rules are ticket's.
const (
	authPrivRel   = ticket.PrivRel
	authPubRel    = ticket.PubRel
	authPubOldRel = ticket.PubOldRel
	wwwKeyRel     = ticket.WWWKeyRel
)

func (s *Sim) readKeyLocked(db *ConfigDB, rel string) (*ticket.Key, error) {
	p := filepath.Join(s.etcPveDir(db.ID), filepath.FromSlash(rel))
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	return ticket.ParseKey(rel, b, st.ModTime())
}

// pubKeysLocked are authkey.pub and authkey.pub.old, nil where missing or
// unreadable.
func (s *Sim) pubKeysLocked(db *ConfigDB) (pub, old *ticket.Key) {
	pub, _ = s.readKeyLocked(db, authPubRel)
	old, _ = s.readKeyLocked(db, authPubOldRel)
	return pub, old
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
	pub, priv, err := ticket.RotatedPair()
	if err != nil {
		return err
	}
	if err := writeEtcPveFile(dir, authPubRel, pub); err != nil {
		return err
	}
	return writeEtcPveFile(dir, authPrivRel, priv)
}

// privkeyLocked is get_privkey: the signing key, rotated first when due.
func (s *Sim) privkeyLocked(db *ConfigDB, now time.Time) (*rsa.PrivateKey, error) {
	priv, err := s.readKeyLocked(db, authPrivRel)
	pub, old := s.pubKeysLocked(db)
	if err != nil || !ticket.AuthkeyCurrent(now, pub, old, s.QuorateLocked(db)) {
		if rerr := s.rotateAuthkeyLocked(db); rerr != nil {
			return nil, fmt.Errorf("rotating the auth key: %w", rerr)
		}
		if priv, err = s.readKeyLocked(db, authPrivRel); err != nil {
			return nil, err
		}
	}
	return priv.Priv, nil
}

// makeTicketLocked is assemble_ticket for user.
func (s *Sim) makeTicketLocked(db *ConfigDB, user string, now time.Time) (string, error) {
	priv, err := s.privkeyLocked(db, now)
	if err != nil {
		return "", err
	}
	return ticket.Sign(priv, s.ticketHash(), user, now)
}

// ticketHash is the digest of the nodes' Crypt::OpenSSL::RSA: SHA-1, its
// default, unless Config.TicketHash says otherwise.
func (s *Sim) ticketHash() crypto.Hash {
	if s.Cfg.TicketHash != 0 {
		return s.Cfg.TicketHash
	}
	return ticket.DefaultHash
}

// verifyTicketLocked is verify_ticket: the user of a ticket signed by the
// current key (or the previous one, within its window).
func (s *Sim) verifyTicketLocked(db *ConfigDB, t string, now time.Time) (string, bool) {
	pub, old := s.pubKeysLocked(db)
	return ticket.Verify(t, s.ticketHash(), pub, old, s.QuorateLocked(db), now)
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
	return ticket.CSRFSecret(b), nil
}

func (s *Sim) makeCSRFLocked(db *ConfigDB, user string, now time.Time) (string, error) {
	secret, err := s.csrfSecretLocked(db)
	if err != nil {
		return "", err
	}
	return ticket.MakeCSRF(secret, user, now), nil
}

// verifyCSRFLocked is verify_csrf_prevention_token.
func (s *Sim) verifyCSRFLocked(db *ConfigDB, user, token string, now time.Time) bool {
	secret, err := s.csrfSecretLocked(db)
	if err != nil {
		return false
	}
	return ticket.VerifyCSRF(secret, user, token, now)
}

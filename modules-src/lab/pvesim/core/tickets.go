package core

import (
	"crypto"
	"os"
	"path/filepath"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/etcpvefs"
	"github.com/gopve/proxmox/modules-src/lab/pvesim/ticket"
)

// Tickets and CSRF tokens as PVE makes and checks them (pvesim/ticket),
// with the keys where PVE keeps them, in the DB's /etc/pve directory (so a
// module on a node that reads them mints what this simulator accepts, and
// nothing else). This file gives ticket that directory (keyFiles) and the
// cluster's quorum; the rules, and which key file is read or written when,
// are ticket's.
const (
	authPrivRel = ticket.PrivRel
	wwwKeyRel   = ticket.WWWKeyRel
)

// keyFiles is ticket.Files on a DB's /etc/pve directory.
type keyFiles struct{ dir string }

func (f keyFiles) path(rel string) string { return filepath.Join(f.dir, filepath.FromSlash(rel)) }

func (f keyFiles) Read(rel string) ([]byte, error) { return os.ReadFile(f.path(rel)) }

func (f keyFiles) ModTime(rel string) (time.Time, error) {
	st, err := os.Stat(f.path(rel))
	if err != nil {
		return time.Time{}, err
	}
	return st.ModTime(), nil
}

func (f keyFiles) Write(rel string, b []byte) error { return etcpvefs.WriteFile(f.dir, rel, b) }

func (s *Sim) keyFilesLocked(db *ConfigDB) keyFiles { return keyFiles{dir: s.etcPveDir(db.ID)} }

func (s *Sim) readKeyLocked(db *ConfigDB, rel string) (*ticket.Key, error) {
	return ticket.ReadKey(s.keyFilesLocked(db), rel)
}

// makeTicketLocked is assemble_ticket for user.
func (s *Sim) makeTicketLocked(db *ConfigDB, user string, now time.Time) (string, error) {
	return ticket.Issue(s.keyFilesLocked(db), s.ticketHash(), user, now, func() bool { return s.QuorateLocked(db) })
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
	return ticket.VerifyWith(s.keyFilesLocked(db), t, s.ticketHash(), s.QuorateLocked(db), now)
}

func (s *Sim) makeCSRFLocked(db *ConfigDB, user string, now time.Time) (string, error) {
	return ticket.MakeCSRFWith(s.keyFilesLocked(db), user, now)
}

// verifyCSRFLocked is verify_csrf_prevention_token.
func (s *Sim) verifyCSRFLocked(db *ConfigDB, user, token string, now time.Time) bool {
	return ticket.VerifyCSRFWith(s.keyFilesLocked(db), user, token, now)
}

package qemuserver

import (
	"crypto/sha512"
	"encoding/base64"
	"regexp"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// CheckSSHKeys is PVE::Tools::validate_ssh_public_keys on the decoded
// sshkeys value: every non-blank line must be a public key ssh-keygen
// accepts. The value stays URL-encoded in the config, as sent (K12).
func CheckSSHKeys(encoded string) error {
	for _, line := range strings.Split(pvecommon.URIUnescape(encoded), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err != nil {
			return pvecommon.Die("SSH public key validation error")
		}
	}
	return nil
}

// cryptedRe is qemu-server's test for an already hashed password.
var cryptedRe = regexp.MustCompile(`^\$(?:[156]|2[ay])(\$.+){2}`)

// IsCrypted tells whether a cipassword is hashed already (update_vm_api
// keeps it as sent).
func IsCrypted(pw string) bool { return cryptedRe.MatchString(pw) }

// CryptPassword stands in for PVE::Tools::encrypt_pw (crypt(3) SHA-512)
// with salt: same shape, not a real crypt hash (reconstruction) — the lab
// only needs the password gone from the file.
func CryptPassword(pw, salt string) string {
	sum := sha512.Sum512([]byte(salt + pw))
	return "$6$" + salt + "$" + base64.RawStdEncoding.EncodeToString(sum[:])
}

package qemu

import (
	"strings"

	"github.com/gopve/proxmox/modules-src/pveapi/pveformat"
)

// EncodeSSHKeys is the `sshkeys` value to send for a list of public keys
// (K12): one key a line, URL-encoded in the character set of PVE's
// "urlencoded" format. qemu-server stores the value as sent and
// uri_unescapes it to validate it and to write the cloud-init data.
func EncodeSSHKeys(keys []string) string {
	return pveformat.EncodeURL(strings.Join(keys, "\n"))
}

// DecodeSSHKeys reads a stored `sshkeys` back into its keys as
// Cloudinit.pm does (uri_unescape, split on newlines, blank lines dropped),
// so two spellings of one key list compare equal.
func DecodeSSHKeys(stored string) []string {
	var keys []string
	for _, line := range strings.Split(pveformat.DecodeURL(stored), "\n") {
		if strings.TrimSpace(line) != "" {
			keys = append(keys, line)
		}
	}
	return keys
}

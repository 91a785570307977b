package guestconf

import (
	"strings"
	"unicode"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/pvecommon"
)

// SetDescription moves a description given to create or update into the
// comment lines both config writers write: "#" + encode_text(line) for
// each line of split /\n/ (which drops trailing empty lines), nothing for a
// Perl-false one ("" or "0": write_pct_config tests
// `$conf->{description} ||`, $generate_raw_config `if ($descr)`).
func (c *Conf) SetDescription(v string) {
	delete(c.Keys, "description")
	c.Description = EncodeDescription(v)
}

// EncodeDescription is a description as its stored comment lines.
func EncodeDescription(v string) string {
	if !pvecommon.PerlTrue(v) {
		return ""
	}
	lines := strings.Split(strings.TrimRight(v, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pvecommon.EncodeText(l)
	}
	return strings.Join(lines, "\n")
}

// VMDescription is how qemu-server's parse_vm_config reads the comment
// lines back: each decode_text'd with a newline, then trailing white space
// removed ($finish_description), so "web\n" comes back "web".
func VMDescription(stored string) string {
	return strings.TrimRightFunc(CTDescription(stored), unicode.IsSpace)
}

// CTDescription is how pve-container's parse_pct_config reads them: each
// line decode_text'd with its newline, so "web" comes back "web\n".
func CTDescription(stored string) string {
	var b strings.Builder
	for _, l := range strings.Split(stored, "\n") {
		b.WriteString(pvecommon.DecodeText(l) + "\n")
	}
	return b.String()
}

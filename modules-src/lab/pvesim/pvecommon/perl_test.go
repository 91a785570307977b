package pvecommon

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/perltest"
)

// encode_text and decode_text held to Perl's URI::Escape running PVE's own
// two lines (pve-common src/PVE/Tools.pm: uri_escape of the UTF-8 bytes
// with the unsafe set "^\x20-\x39\x3b-\x7e"; uri_unescape, then UTF-8
// decoding), not to our reading of them. Inputs go to Perl hex-encoded, one
// a line ("x" first, so an empty one survives the split), and come back
// hex-encoded, so no byte is lost on the way.
func TestEncodeDecodeTextAsPerl(t *testing.T) {
	p := perltest.Host(t, "URI::Escape", "Encode")
	inputs := []string{
		"plain comment", "a:b", "100%", "50%25 off", "%41%", "%4", "%zz", "é ü ß", "line\nbreak\ttab",
		"ssh-ed25519 AAAA user@host", "~!@#$^&*()_+{}|\"<>?`-=[]\\;',./", "0", "",
		"%C3%A9", "%FF", "a%FF%FEb", "%E2%82", "%E2%82x", "%E0%80%80", "%ED%A0%80", "%F0%9F%98", "%F4%90%80%80", "%C0%AF", "%80", "%F5%80%80%80", "%F8%88%80%80%80", "%FE", "%C2", "ok%F0%9F%98%80",
	}
	const script = `use strict; use URI::Escape; use Encode;
sub encode_text { my ($text) = @_; my $unsafe = "^\x20-\x39\x3b-\x7e"; return uri_escape(Encode::encode("utf8", $text), $unsafe); }
sub decode_text { my ($data) = @_; return Encode::decode("utf8", uri_unescape($data)); }
for my $h (split /\n/, $ENV{INPUTS}) {
  my $b = pack("H*", substr($h, 1));
  my $enc = encode_text(Encode::decode("utf8", $b)); # a parameter: characters
  my $dec = Encode::encode("utf8", decode_text($b));  # a file's field: bytes
  print unpack("H*", $enc), " ", unpack("H*", $dec), "\n";
}`
	lines := p.Answers(t, script, inputs)
	for i, s := range inputs {
		encHex, decHex, _ := strings.Cut(lines[i], " ")
		enc, err1 := hex.DecodeString(encHex)
		dec, err2 := hex.DecodeString(decHex)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: line %q", p.Name, lines[i])
		}
		if got := EncodeText(s); got != string(enc) {
			t.Errorf("EncodeText(%q) = %q, Perl's encode_text %q", s, got, enc)
		}
		if got := DecodeText(s); got != string(dec) {
			t.Errorf("DecodeText(%q) = %q, Perl's decode_text %q", s, got, dec)
		}
	}
}

// PerlTrue is Perl's truth of a string, as `||`, `||=` and `if` in PVE's
// code apply it to parameters and config values (create_vm's hostname,
// vmstatus' name, clone_vm's name): held to Perl itself, not to our
// reading of perlsyn.
func TestPerlTrueAsPerl(t *testing.T) {
	p := perltest.Host(t)
	inputs := []string{"", "0", "00", "0.0", "0E0", " 0", "0 ", "1", "a", "-0", "+0", "false", "\n"}
	lines := p.Answers(t, `use strict; for my $h (split /\n/, $ENV{INPUTS}) { my $v = pack("H*", substr($h, 1)); print(($v ? 1 : 0), "\n"); }`, inputs)
	for i, s := range inputs {
		if got, want := PerlTrue(s), lines[i] == "1"; got != want {
			t.Errorf("PerlTrue(%q) = %v, Perl says %v", s, got, want)
		}
	}
}

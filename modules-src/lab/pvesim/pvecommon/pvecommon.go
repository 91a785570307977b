// Package pvecommon holds the few pve-common helpers more than one of the
// simulator's packages follows: PVE::Tools encode_text and decode_text, a
// request parameter as Perl sees it (split_list is pveschema.SplitList),
// SectionConfig files (sectioncfg.go), property strings, disk sizes
// (PVE::JSONSchema parse_size/format_size, size.go), parse_idmap
// (idmap.go) and random_ether_addr. It sits below pvesim and its
// backends (access, ha, …), so each can use them without importing
// another (issue 27 §1).
package pvecommon

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EncodeText is pve-common PVE::Tools encode_text: uri_escape of the
// text's UTF-8 bytes with PVE's unsafe set "^\x20-\x39\x3b-\x7e" —
// control and high-bit bytes and ':' become %XX; '%' stays as it is, so a
// text holding "%41" reads back as "A" (decode_text decodes every %XX).
// That loss is PVE's: pvecommon_test holds both functions to Perl's
// URI::Escape running PVE's own lines.
func EncodeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x20 && c <= 0x7e && c != ':' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// PerlTrue is Perl's truth of a string: "" and "0" are false. user.cfg's
// text fields are written and read only when true (write_user_config
// tests `$d->{comment} ?` before encode_text, parse_user_config
// `decode_text($c) if $c`): a comment "0" is lost on PVE.
func PerlTrue(s string) bool { return s != "" && s != "0" }

// EncodeField is a user.cfg text field as write_user_config writes it.
func EncodeField(s string) string {
	if !PerlTrue(s) {
		return ""
	}
	return EncodeText(s)
}

// DecodeField is a user.cfg text field as parse_user_config reads it.
func DecodeField(s string) string {
	if !PerlTrue(s) {
		return ""
	}
	return DecodeText(s)
}

// DecodeText is decode_text: uri_unescape of the text, then
// Encode::decode("utf8", …), which puts U+FFFD for each ill-formed part.
func DecodeText(s string) string { return PerlDecodeUTF8(URIUnescape(s)) }

// PerlDecodeUTF8 is Perl's Encode::decode("utf8", bytes) with its default
// check. Perl's "utf8" is the lax one: it reads a character from its first
// byte's shape and its 80–BF continuation bytes, and keeps surrogates and
// code points past U+10FFFF; an ill-formed part becomes one U+FFFD — a
// byte that cannot start a character, a start with only some of its
// continuations ("%E2%82"), an overlong form ("%C0%AF"). Go's
// strings.ToValidUTF8 would differ on each of those (held to Perl by
// perl_test.go).
func PerlDecodeUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		n, ok := perlUTF8Char(s[i:])
		if ok {
			b.WriteString(s[i : i+n])
		} else {
			b.WriteRune(utf8.RuneError)
		}
		i += n
	}
	return b.String()
}

// perlUTF8Char reads one character of lax UTF-8 at the start of s: its
// length in bytes and whether it is well-formed (else that many bytes are
// one ill-formed part).
func perlUTF8Char(s string) (int, bool) {
	c := s[0]
	var n int
	var cp, least uint32
	switch {
	case c < 0x80:
		return 1, true
	case c >= 0xC0 && c <= 0xDF:
		n, cp, least = 2, uint32(c&0x1F), 0x80
	case c >= 0xE0 && c <= 0xEF:
		n, cp, least = 3, uint32(c&0x0F), 0x800
	case c >= 0xF0 && c <= 0xF7:
		n, cp, least = 4, uint32(c&0x07), 0x10000
	case c >= 0xF8 && c <= 0xFB:
		n, cp, least = 5, uint32(c&0x03), 0x200000
	case c >= 0xFC && c <= 0xFD:
		n, cp, least = 6, uint32(c&0x01), 0x4000000
	default: // a continuation byte, FE or FF
		return 1, false
	}
	for k := 1; k < n; k++ {
		if k >= len(s) || s[k] < 0x80 || s[k] > 0xBF {
			return k, false // cut short: what came is one part
		}
		cp = cp<<6 | uint32(s[k]&0x3F)
	}
	return n, cp >= least // an overlong form is ill-formed
}

// URIUnescape is URI::Escape::uri_unescape: every %XX sequence decoded,
// anything else (a lone %) kept as it is.
func URIUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ParamString renders a parameter value as Perl would see it.
func ParamString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "1"
		}
		return "0"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = ParamString(p)
		}
		return strings.Join(parts, ",")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Error is an error worded by PVE (capitals, final dots and all): the
// API answers it as 500 with the text unchanged, a task as its exit status.
type Error string

func (e Error) Error() string { return string(e) }

// Die is Perl's die with PVE's own words.
func Die(format string, args ...any) error { return Error(fmt.Sprintf(format, args...)) }

// BoolNum is a boolean as PVE's API answers it: 1 or 0.
func BoolNum(b bool) int {
	if b {
		return 1
	}
	return 0
}

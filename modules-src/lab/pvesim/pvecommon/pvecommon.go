// Package pvecommon holds the few pve-common helpers more than one of the
// simulator's packages follows: PVE::Tools encode_text and decode_text, a
// request parameter as Perl sees it (split_list is pveschema.SplitList),
// and SectionConfig files (sectioncfg.go). It sits below pvesim and its
// backends (access, ha, …), so each can use them without importing
// another (issue 27 §1).
package pvecommon

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// EncodeText is pve-common PVE::Tools encode_text: every byte of the
// UTF-8 text outside 0x20–0x7e, and ':' and '%', as %XX (uri_escape).
// Reconstruction: PVE's unsafe set ("^\x20-\x39\x3b-\x7e") leaves '%'
// as it is; the lab escapes it, which decode_text reads back the same.
func EncodeText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c <= 0x7e && c != ':' && c != '%' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// DecodeText is decode_text: uri_unescape of the text.
func DecodeText(s string) string { return URIUnescape(s) }

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

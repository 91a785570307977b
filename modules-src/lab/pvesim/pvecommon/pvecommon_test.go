package pvecommon

import "testing"

// uri_unescape decodes each %XX on its own and keeps what is not one: a
// text with a lone % still has its other escapes decoded (Go's
// url.PathUnescape refuses the whole text instead).
func TestURIUnescapeAsURIEscape(t *testing.T) {
	for in, want := range map[string]string{
		"ssh-ed25519%20AAAA%0A": "ssh-ed25519 AAAA\n",
		"100%":                  "100%",
		"50%25 and %zz":         "50% and %zz",
		"%41%":                  "A%",
		"%4":                    "%4",
	} {
		if got := URIUnescape(in); got != want {
			t.Errorf("URIUnescape(%q) = %q, want %q", in, got, want)
		}
		if got := DecodeText(in); got != want {
			t.Errorf("DecodeText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := DecodeText(EncodeText("a:b%c é")); got != "a:b%c é" {
		t.Errorf("decode_text(encode_text(x)) = %q", got)
	}
}

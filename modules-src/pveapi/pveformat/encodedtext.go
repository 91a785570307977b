package pveformat

import (
	"fmt"
	"regexp"
)

// CheckStoredText refuses a text PVE stores in a config file through
// pve-common's encode_text and reads back through decode_text, when it
// would not read back as written: encode_text leaves '%' alone while
// decode_text decodes every %XX ("%41" comes back "A"), and the writers
// keep a value only when Perl calls it true: "0" is dropped
// (pve-access-control write_user_config tests `$d->{comment} ?`,
// pve-container write_pct_config `$conf->{description} ||`). Such a
// value would be set again on every run and never verify, so the modules
// refuse it before any write, naming option. (The lab's pvecommon test
// holds encode_text and decode_text to Perl's URI::Escape.)
func CheckStoredText(option, v string) error {
	if v == "0" {
		return fmt.Errorf("%s: PVE never stores the value \"0\" (its config writer drops a value Perl reads as false), so it would be set again on every run; use another value, or an empty string to remove it", option)
	}
	if m := percentHexRe.FindString(v); m != "" {
		return fmt.Errorf("%s: %q holds %q, a '%%' and two hex digits, which PVE reads back decoded (its decode_text turns \"%%41\" into \"A\"), so it would be set again on every run; write it another way", option, v, m)
	}
	return nil
}

var percentHexRe = regexp.MustCompile(`%[0-9A-Fa-f]{2}`)

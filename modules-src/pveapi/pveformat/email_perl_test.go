package pveformat

import (
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/perltest"
	"github.com/gopve/proxmox/modules-src/lab/pveschema"
)

// The email-opt format (pve_access's email, User.pm's user-email option),
// held to Perl running pve-common's own regexes (ParseUtils.pm $EMAIL_RE)
// under JSONSchema.pm check_format's "-opt" rule (the base format for a
// Perl-true value only), for both sides: the module's check and the lab's.
// ASCII inputs only: Perl's \w on decoded Unicode is not reconstructed.
func TestEmailOptAsPerl(t *testing.T) {
	p := perltest.Host(t)
	inputs := []string{"", "0", "00", "ops@example.com", "first.last+tag@mail.example.org", "a~b-c_d@host",
		"not an email", "user@", "@host", "user@host.", "user@.host", "a..b@host", ".a@host", "a.@host",
		"user@ho_st", "user@host-1.example", "user@@host", "user name@host", "user@host com", "u@h\n", "x"}
	const script = `use strict;
our $EMAIL_USER_RE = qr/[\w\+\-\~]+(\.[\w\+\-\~]+)*/;
our $EMAIL_RE = qr/$EMAIL_USER_RE@[a-zA-Z0-9\-]+(\.[a-zA-Z0-9\-]+)*/;
for my $h (split /\n/, $ENV{INPUTS}) {
  my $v = pack("H*", substr($h, 1));
  # check_format: "-opt" runs the base format when the value is true
  print((!$v || $v =~ /^$EMAIL_RE$/) ? "ok\n" : "refused\n");
}`
	answers := p.Answers(t, script, inputs)
	for i, s := range inputs {
		perlOK := answers[i] == "ok"
		for side, check := range map[string]func(string, string) error{"module": CheckFormat, "lab": pveschema.CheckFormat} {
			err := check("email-opt", s)
			if (err == nil) != perlOK {
				t.Errorf("%s: email-opt %q: err %v, Perl's check_format says %s", side, s, err, answers[i])
			}
			if err != nil && err.Error() != "value does not look like a valid email address" {
				t.Errorf("%s: email-opt %q: message %q, not pve_verify_email's", side, s, err)
			}
		}
	}
}

package pveschema

import (
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/perltest"
)

// SplitList held to Perl running pve-common's split_list (src/PVE/Tools.pm)
// line for line: NUL-separated lists, [,;] and \s, leading and trailing
// separators. Inputs and answers travel hex-encoded, one a line.
func TestSplitListAsPerl(t *testing.T) {
	p := perltest.Host(t)
	inputs := []string{"a,b;c d", " net0 , ide2;;", "a\tb\nc\rd\fe\vf", "a\x00b\x00\x00", "\x00a", "", ",;", "x\x00y,z"}
	var in strings.Builder
	for _, s := range inputs {
		in.WriteString("x" + hex.EncodeToString([]byte(s)) + "\n")
	}
	const script = `use strict;
sub split_list {
    my $listtxt = shift // '';
    return split(/\0/, $listtxt) if $listtxt =~ m/\0/;
    $listtxt =~ s/[,;]/ /g;
    $listtxt =~ s/^\s+//;
    my @data = split(/\s+/, $listtxt);
    return @data;
}
for my $h (split /\n/, $ENV{INPUTS}) {
  print join(" ", map { "x" . unpack("H*", $_) } split_list(pack("H*", substr($h, 1)))), "\n";
}`
	out, err := p.Run(script, map[string]string{"INPUTS": in.String()})
	if err != nil {
		t.Fatalf("%s: %v", p.Name, err)
	}
	lines := strings.Split(out, "\n")
	for len(lines) < len(inputs) {
		lines = append(lines, "") // trailing empty answers trimmed away by Run
	}
	for i, s := range inputs {
		var want []string
		for _, f := range strings.Fields(lines[i]) {
			b, err := hex.DecodeString(strings.TrimPrefix(f, "x"))
			if err != nil {
				t.Fatalf("Perl's line %q", lines[i])
			}
			want = append(want, string(b))
		}
		if got := SplitList(s); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("SplitList(%q) = %q, Perl's split_list %q", s, got, want)
		}
	}
}

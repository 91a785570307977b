package labctl

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/tools/nodecfg"
	"github.com/gopve/proxmox/modules-src/lab/tools/perlstartup"
)

// TestNodeJSONPerlStartup (issue 24 §2): a lab's node.json carries the
// Perl tools' start-up figures unless NoPerlStartup switches them off.
func TestNodeJSONPerlStartup(t *testing.T) {
	for _, off := range []bool{false, true} {
		l := &Lab{opts: Options{PVE: 9, NoPerlStartup: off}, dir: t.TempDir()}
		b, err := l.nodeJSON("pve01", "127.77.1.11")
		if err != nil {
			t.Fatal(err)
		}
		var n nodecfg.Node
		if err := json.Unmarshal(b, &n); err != nil {
			t.Fatal(err)
		}
		want := perlstartup.DefaultMS()
		if off {
			want = nil
		}
		if !maps.Equal(n.PerlStartupMS, want) {
			t.Errorf("NoPerlStartup %v: perl_startup_ms %v, want %v", off, n.PerlStartupMS, want)
		}
	}
}

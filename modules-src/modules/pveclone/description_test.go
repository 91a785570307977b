package pveclone

import (
	"strings"
	"testing"
)

// The description as qemu-server keeps it (the lab's
// TestVMDescriptionAsQemuServerStoresIt): "#" lines through encode_text,
// read back through decode_text with trailing white space stripped. A YAML
// block scalar's final newline therefore converges (the rerun changes
// nothing), and a text PVE would read back changed ("%41" → "A", or "0"
// never written) is refused naming the option before any write, in check
// mode too.
func TestDescriptionAsQemuServerReadsIt(t *testing.T) {
	w := newWorld(t, 9)
	w.sim.ResetRequests()
	for _, bad := range []string{"web 100%2F", "0"} {
		for _, check := range []bool{true, false} {
			res := w.run(with(webArgs(), "description", bad), check)
			if !failed(res) || res["changed"] != false || !strings.HasPrefix(msg(res), "description: ") {
				t.Errorf("description %q, check=%v: failed=%v changed=%v %q", bad, check, failed(res), res["changed"], msg(res))
			}
		}
	}
	if m := writes(w.sim); len(m) != 0 {
		t.Fatalf("refused descriptions wrote %+v", m)
	}
	args := with(webArgs(), "description", "web tier: nginx\nowner: ops é \n")
	if res := w.run(args, false); failed(res) || res["changed"] != true {
		t.Fatalf("first run: %v", res)
	}
	if got := cfgOf(w.run(args, false))["description"]; got != "web tier: nginx\nowner: ops é" {
		t.Errorf("description read back %q", got)
	}
	w.sim.ResetRequests()
	if res := w.run(args, false); failed(res) || res["changed"] != false {
		t.Errorf("rerun: changed=%v %q", res["changed"], msg(res))
	}
	if m := writes(w.sim); len(m) != 0 {
		t.Errorf("the rerun wrote %+v", m)
	}
}

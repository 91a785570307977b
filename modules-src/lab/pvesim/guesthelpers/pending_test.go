package guesthelpers

import (
	"fmt"
	"testing"

	"github.com/gopve/proxmox/modules-src/lab/pvesim/guestconf"
)

// Both kinds' pending view: current and pending values per key, sorted; a
// delete 1, a forced one ("!key") 2; then digest and description.
func TestConfigWithPendingArray(t *testing.T) {
	c := guestconf.Parse("#note\nmemory: 1024\nnet1: virtio=BC:24:11:00:00:01,bridge=vmbr0\nide2: none,media=cdrom\n\n[PENDING]\nmemory: 2048\ncores: 2\ndelete: !net1,ide2\n")
	got := ConfigWithPendingArray(c, func(k, v string) any { return k + "=" + v }, func(s string) string { return "<" + s + ">" })
	want := "[map[key:cores pending:cores=2] map[delete:1 key:ide2 value:ide2=none,media=cdrom] " +
		"map[key:memory pending:memory=2048 value:memory=1024] map[delete:2 key:net1 value:net1=virtio=BC:24:11:00:00:01,bridge=vmbr0] " +
		"map[key:digest value:" + c.Digest + "] map[key:description value:<" + c.Description + ">]]"
	if fmt.Sprint(got) != want {
		t.Errorf("got  %v\nwant %s", got, want)
	}
}

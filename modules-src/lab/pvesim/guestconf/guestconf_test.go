package guestconf

import (
	"maps"
	"slices"
	"testing"
)

// A file as qemu-server writes it parses to its parts and renders back
// byte for byte; the pending view and apply follow AbstractConfig (a
// forced deletion keeps its "!"; parse_pending_delete splits on [,;] and
// blanks).
func TestParseRenderPending(t *testing.T) {
	raw := "#web%3A 1\n#\n#owner é\ncores: 2\nmemory: 2048\nname: web\n\n[PENDING]\ndelete: !net1,onboot\nmemory: 4096\n"
	c := Parse(raw)
	if c.Description != "web%3A 1\n\nowner é" || c.Keys["cores"] != "2" || c.Pending["memory"] != "4096" ||
		!slices.Equal(c.PendingDelete, []string{"!net1", "onboot"}) || len(c.Digest) != 40 {
		t.Fatalf("parsed %+v", c)
	}
	if got := c.Render(VMPending); got != raw {
		t.Errorf("rendered %q, want %q", got, raw)
	}
	if !c.PendingDeleted("net1") || !c.PendingDeleted("onboot") || c.PendingDeleted("cores") {
		t.Error("PendingDeleted")
	}
	if got := VMDescription(c.Description); got != "web: 1\n\nowner é" {
		t.Errorf("VMDescription %q", got)
	}
	if got := CTDescription(c.Description); got != "web: 1\n\nowner é\n" {
		t.Errorf("CTDescription %q", got)
	}
	if d := Parse("delete: a\n\n[PENDING]\ndelete: a;b c\n"); !slices.Equal(d.PendingDelete, []string{"a", "b", "c"}) {
		t.Errorf("parse_pending_delete: %v", d.PendingDelete)
	}
	c.ApplyPending()
	if want := map[string]string{"cores": "2", "memory": "4096", "name": "web"}; !maps.Equal(c.Keys, want) || len(c.Pending) != 0 || c.PendingDelete != nil {
		t.Errorf("after apply: %+v", c)
	}
}

// SetDescription stores what the writers write: encode_text per line,
// trailing empty lines dropped, nothing for a Perl-false value.
func TestSetDescription(t *testing.T) {
	c := &Conf{Keys: map[string]string{"description": "x"}}
	c.SetDescription("a:b\n100%\n\n")
	if _, ok := c.Keys["description"]; ok || c.Description != "a%3Ab\n100%" {
		t.Errorf("stored %q (keys %v)", c.Description, c.Keys)
	}
	for _, v := range []string{"", "0"} {
		if c.SetDescription(v); c.Description != "" {
			t.Errorf("%q stored as %q", v, c.Description)
		}
	}
}

// check_lock: a guest without a lock passes; a locked one is refused in
// its kind's words.
func TestCheckLock(t *testing.T) {
	if err := Parse("memory: 512\n").CheckLock("VM"); err != nil {
		t.Errorf("an unlocked guest: %v", err)
	}
	c := Parse("lock: backup\nmemory: 512\n")
	for typ, want := range map[string]string{"VM": "VM is locked (backup)", "CT": "CT is locked (backup)"} {
		if err := c.CheckLock(typ); err == nil || err.Error() != want {
			t.Errorf("CheckLock(%s) = %v, want %q", typ, err, want)
		}
	}
}

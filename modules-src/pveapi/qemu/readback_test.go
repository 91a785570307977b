package qemu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/pveapi/guest"
)

// A guest this run made is proved only by its own config: readable,
// unlocked (a create or clone task can end before its lock is gone, K4),
// not a template, and named as the task asks (K1) — a VM by name, a CT
// by hostname.
func TestVerifyCreated(t *testing.T) {
	read := func(raw map[string]any, err error) func(context.Context) (Config, error) {
		return func(context.Context) (Config, error) { return ConfigFrom(raw), err }
	}
	for _, tc := range []struct {
		kind      guest.Kind
		raw       map[string]any
		err       error
		key, name string
		want      string // "" proves it
	}{
		{guest.VM, map[string]any{"name": "web-1"}, nil, "name", "web-1", ""},
		{guest.VM, map[string]any{"name": "Copy-of-VM-tpl"}, nil, "name", "", ""},
		{guest.VM, map[string]any{"name": "web-1"}, errors.New("500 timeout"), "name", "web-1", "VM 100 is not readable on pve02 after its creation: 500 timeout"},
		{guest.VM, map[string]any{"name": "web-1", "lock": "clone"}, nil, "name", "web-1", `VM 100 on pve02: lock "clone", template false after its creation`},
		{guest.VM, map[string]any{"name": "web-1", "template": 1}, nil, "name", "web-1", `VM 100 on pve02: lock "", template true after its creation`},
		{guest.VM, map[string]any{"name": "other"}, nil, "name", "web-1", `VM 100 on pve02 has name "other", not "web-1"`},
		{guest.CT, map[string]any{"hostname": "runner"}, nil, "hostname", "runner", ""},
		{guest.CT, map[string]any{"hostname": "CT100"}, nil, "hostname", "runner", `CT 100 on pve02 has hostname "CT100", not "runner"`},
	} {
		err := VerifyCreated(context.Background(), tc.kind, 100, "pve02", read(tc.raw, tc.err), tc.key, tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %v: %v, want it proved", tc.kind.Word, tc.raw, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %v: %v, want %q", tc.kind.Word, tc.raw, err, tc.want)
		}
	}
}

// A settings change read back is proved only when nothing it set or grew
// still differs; otherwise every key names what was sent and what reads
// back, and every volume its size, in one sorted list.
func TestStillDiffers(t *testing.T) {
	if err := StillDiffers(guest.VM, 100, map[string]string{}, map[string]string{"cores": "4"}, nil); err != nil {
		t.Errorf("nothing left: %v", err)
	}
	err := StillDiffers(guest.CT, 200, map[string]string{"memory": "2048", "cores": "4"}, map[string]string{"cores": "2"}, []string{"rootfs size 8G"})
	want := `CT 200 read back after the update still differs: cores="4" (read back "2"); memory="2048" (read back ""); rootfs size 8G`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

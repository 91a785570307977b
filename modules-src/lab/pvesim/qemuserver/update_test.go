package qemuserver

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func fixed(s string) func() string { return func() string { return s } }

// $update_vm_api's parameters: the log line shows what was sent (the
// password hidden), cdrom is ide2, the password is stored hashed, a NIC
// gets its MAC, deleting what is also set is refused, nothing at all is
// "no options specified".
func TestPrepareUpdate(t *testing.T) {
	u, err := PrepareUpdate(map[string]string{"cdrom": "local:iso/d.iso", "cipassword": "pw", "net0": "virtio,bridge=vmbr0", "name": "web"},
		[]string{"cores"}, []string{"memory"}, fixed("00112233"), fixed("AA:BB:CC:00:00:01"))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"-cdrom", "local:iso/d.iso", "-cipassword", "<hidden>", "-name", "web", "-net0", "virtio,bridge=vmbr0"}; !slices.Equal(u.LogParams, want) {
		t.Fatalf("LogParams %q, want %q", u.LogParams, want)
	}
	if u.Set["ide2"] != "local:iso/d.iso,media=cdrom" || u.Set["cdrom"] != "" {
		t.Fatalf("cdrom: %v", u.Set)
	}
	if pw := u.Set["cipassword"]; !strings.HasPrefix(pw, "$6$00112233$") {
		t.Fatalf("cipassword stored as %q", pw)
	}
	if u.Set["net0"] != "virtio=AA:BB:CC:00:00:01,bridge=vmbr0" {
		t.Fatalf("net0 = %q", u.Set["net0"])
	}
	if !slices.Equal(u.Deletes, []string{"cores"}) || !slices.Equal(u.Revert, []string{"memory"}) {
		t.Fatalf("deletes %v revert %v", u.Deletes, u.Revert)
	}

	hashed := "$6$salt$abc"
	u, err = PrepareUpdate(map[string]string{"cipassword": hashed}, nil, nil, fixed("x"), fixed("y"))
	if err != nil || u.Set["cipassword"] != hashed {
		t.Fatalf("a hash is kept as sent: %v %v", u, err)
	}

	u, err = PrepareUpdate(map[string]string{}, []string{"cdrom"}, nil, fixed("x"), fixed("y"))
	if err != nil || !slices.Equal(u.Deletes, []string{"ide2"}) {
		t.Fatalf("delete=cdrom is ide2: %v %v", u, err)
	}

	var pe *ParamError
	_, err = PrepareUpdate(map[string]string{"cdrom": "none"}, []string{"cdrom"}, nil, fixed("x"), fixed("y"))
	if !errors.As(err, &pe) || pe.Param != "delete" || pe.Msg != "you can't use '-ide2' and -delete ide2' at the same time" {
		t.Fatalf("set and delete: %v", err)
	}
	if _, err = PrepareUpdate(map[string]string{}, nil, nil, fixed("x"), fixed("y")); err == nil || err.Error() != "no options specified" {
		t.Fatalf("nothing: %v", err)
	}
	if u, err = PrepareUpdate(map[string]string{}, nil, []string{"memory"}, fixed("x"), fixed("y")); err != nil || u.Revert[0] != "memory" {
		t.Fatalf("a revert alone is a change: %v", err)
	}
	if _, err = PrepareUpdate(map[string]string{"sshkeys": "not%20a%20key"}, nil, nil, fixed("x"), fixed("y")); err == nil {
		t.Fatal("a bad sshkeys passed")
	}
}

package labctl

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gopve/proxmox/modules-src/lab/pvesim"
)

// `lab up --guests FILE`: fixtures go through the control socket, a second
// run leaves them alone, a bad entry fails with its reason.
func TestAddGuestsFixtures(t *testing.T) {
	dir := t.TempDir()
	s, err := pvesim.New(pvesim.Config{Version: 9, Dir: dir, Nodes: []pvesim.NodeConfig{{Name: "pve01", Addr: "127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ln, err := net.Listen("unix", filepath.Join(dir, "control.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: s.ControlHandler(), ReadHeaderTimeout: time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	file := filepath.Join(dir, "guests.json")
	if err := os.WriteFile(file, []byte(`[
	 {"node":"pve01","vmid":9000,"template":true,"config":{"name":"debian-13","scsi0":"local-lvm:8","net0":"virtio,bridge=vmbr0"}},
	 {"node":"pve01","vmid":100,"running":true,"config":{"name":"web","scsi0":"local-lvm:4"}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	guests, err := ReadGuestFixtures(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lines, err := AddGuests(ctx, dir, guests)
	if err != nil || strings.Join(lines, "\n") != "guest 9000 on pve01: created\nguest 100 on pve01: created" {
		t.Fatalf("first run: %v %q", err, lines)
	}
	raw, ok, _ := s.ReadPmxcfs("pve01", "nodes/pve01/qemu-server/9000.conf")
	if !ok || !strings.Contains(raw, "template: 1\n") || !strings.Contains(raw, "scsi0: local-lvm:base-9000-disk-0,size=8G\n") {
		t.Errorf("fixture template config: %q", raw)
	}
	lines, err = AddGuests(ctx, dir, guests)
	if err != nil || !strings.HasPrefix(lines[0], "guest 9000: already there") {
		t.Errorf("second run: %v %q", err, lines)
	}
	if _, err := AddGuests(ctx, dir, []GuestFixture{{Node: "pve01", GuestSpec: pvesim.GuestSpec{VMID: 101, Config: map[string]string{"scsi0": "nosuch:1"}}}}); err == nil ||
		!strings.Contains(err.Error(), "storage 'nosuch' does not exist") {
		t.Errorf("bad fixture: %v", err)
	}
}

package labctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/internal/testenv"
	"github.com/gopve/proxmox/modules-src/lab/systool"
)

// Issue 15: a lab directory whose sockets would not fit sun_path is refused
// up front, naming the limit and the socket, before anything is created.
// The longest is control.sock.
func TestLabRefusesDirectoriesTooLongForSockets(t *testing.T) {
	base := t.TempDir()
	tail := len("/control.sock")
	fits := base + "/" + strings.Repeat("d", MaxSocketPath-tail-len(base)-1)
	if err := CheckDir(fits); err != nil {
		t.Errorf("a %d-byte directory (its longest socket %d bytes) was refused: %v", len(fits), len(fits)+tail, err)
	}
	long := fits + "x"
	err := CheckDir(long)
	want := []string{long + "/control.sock", fmt.Sprintf("would be %d bytes", MaxSocketPath+1),
		"over the 107", "sun_path is 108 bytes", fmt.Sprintf("at most %d bytes", len(fits))}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("CheckDir(%d bytes) = %v, want %q in it", len(long), err, w)
		}
	}
	if os.Geteuid() != 0 {
		return // Start needs root before it looks at the directory
	}
	_, err = Start(context.Background(), Options{Nodes: 1, PVE: 8, Dir: long})
	if err == nil || !strings.Contains(err.Error(), "sun_path is 108 bytes") {
		t.Errorf("Start with a directory too long for its sockets: %v", err)
	}
	if _, serr := os.Stat(long); !os.IsNotExist(serr) {
		t.Errorf("the refused lab directory was created (%v)", serr)
	}
	if _, serr := os.Stat(filepath.Dir(long)); serr != nil {
		t.Fatal(serr)
	}
}

// Issue 15: a host without one of the lab's tools is told which, and in
// which Debian package, before anything starts.
func TestLabNamesAMissingHostTool(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, "Start needs root before it looks for its tools")
	}
	saved := systool.Dirs
	t.Cleanup(func() { systool.Dirs = saved })
	// Everything but losetup: a host without the mount package.
	bin := t.TempDir()
	for _, tool := range hostTools {
		if tool == "losetup" {
			continue
		}
		p, err := systool.Path(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	systool.Dirs = []string{bin}
	dir := filepath.Join(t.TempDir(), "lab")
	_, err := Start(context.Background(), Options{Nodes: 1, PVE: 8, Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "the lab needs losetup (Debian package mount: apt-get install mount): not found in "+bin) {
		t.Errorf("Start without losetup: %v", err)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("the lab directory was created before the check (%v)", serr)
	}
}

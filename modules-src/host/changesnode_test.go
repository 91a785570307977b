package host

import "testing"

// What the runtime's write count (issue 23 §2) takes for a write: every
// command check mode refuses, except a download into APT's cache.
func TestChangesNode(t *testing.T) {
	for _, c := range []struct {
		cmd  Command
		want bool
	}{
		{Command{Name: "pvecm", Args: []string{"add", "10.0.0.1", "--use_ssh"}}, true},
		{Command{Name: "update-initramfs", Args: []string{"-u", "-k", "all"}}, true},
		{Command{Name: "apt-get", Args: []string{"-y", "install", "vim"}}, true},
		{Command{Name: "apt-get", Args: []string{"-y", "--download-only", "install", "vim"}}, false},
		{Command{Name: "pvecm", Args: []string{"status"}}, false},
		{Command{Name: "cat", Args: []string{"/etc/hosts"}}, false},
		{Command{Name: "zfs", Args: []string{"destroy", "-n", "tank/x"}}, false},
		{Command{Name: "zfs", Args: []string{"destroy", "tank/x"}}, true},
	} {
		if got := ChangesNode(c.cmd); got != c.want {
			t.Errorf("ChangesNode(%s) = %v, want %v", c.cmd, got, c.want)
		}
	}
}

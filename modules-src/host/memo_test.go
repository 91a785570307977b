package host_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gopve/proxmox/modules-src/host"
	"github.com/gopve/proxmox/modules-src/host/hosttest"
)

// TestMemo: before Stop a read runs once however often it is asked; after
// Stop every read runs on the node, and what was remembered before is gone
// (a Verify after an Apply must see the node, not the memo). A command
// that is not read-only stops the memo before it runs.
func TestMemo(t *testing.T) {
	ctx := context.Background()
	health := "ONLINE"
	f := hosttest.New().OnFunc("zpool get -H health nvme-vm", func(host.Command) hosttest.Reply {
		return hosttest.Reply{Stdout: health + "\n"}
	})
	f.On("zpool get -H health gone", hosttest.Reply{Exit: 1, Stderr: "cannot open 'gone': no such pool\n"})
	f.On("zpool get -H health broken", hosttest.Reply{Exit: -1})
	f.On("zfs set atime=off nvme-vm", hosttest.Reply{})
	read := func(r host.Runner, pool string) string {
		res, _ := r.Run(ctx, host.Command{Name: "zpool", Args: []string{"get", "-H", "health", pool}})
		return strings.TrimSpace(res.Stdout)
	}
	memo := host.NewMemo()
	r := memo.Runner(f)
	for range 3 {
		if got := read(r, "nvme-vm"); got != "ONLINE" {
			t.Fatalf("read: %q", got)
		}
		read(r, "gone")
		read(r, "broken")
	}
	if got := count(f.Calls(), "nvme-vm"); got != 1 {
		t.Errorf("before Stop: the pool was read %d times, want 1", got)
	}
	if got := count(f.Calls(), "gone"); got != 1 {
		t.Errorf("an absent pool is an answer, remembered: read %d times, want 1", got)
	}
	if got := count(f.Calls(), "broken"); got != 3 {
		t.Errorf("a command that could not run is not an answer: ran %d times, want 3", got)
	}

	health = "DEGRADED" // what an Apply would change on the node
	memo.Stop()
	for i := range 2 {
		if got := read(r, "nvme-vm"); got != "DEGRADED" {
			t.Fatalf("after Stop, read %d: %q (stale answer from the memo)", i, got)
		}
	}
	if got := count(f.Calls(), "nvme-vm"); got != 3 {
		t.Errorf("after Stop: the pool was read %d times in all, want 1 + 2", got)
	}

	// a write through the memo's runner stops it by itself
	memo = host.NewMemo()
	r = memo.Runner(f)
	health = "ONLINE"
	read(r, "nvme-vm")
	if _, err := r.Run(ctx, host.Command{Name: "zfs", Args: []string{"set", "atime=off", "nvme-vm"}}); err != nil {
		t.Fatal(err)
	}
	health = "DEGRADED"
	if got := read(r, "nvme-vm"); got != "DEGRADED" {
		t.Errorf("after a write through the memo: %q, read before the write", got)
	}

	var nilMemo *host.Memo
	nilMemo.Stop() // a module without a memo may stop it too
	if nilMemo.Runner(f) != host.Runner(f) {
		t.Error("a nil memo's Runner is not the runner itself")
	}
}

func count(calls []string, suffix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasSuffix(c, " "+suffix) {
			n++
		}
	}
	return n
}

package host

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"
)

// A command whose whole group dies on SIGTERM (a shell and its children,
// none trapping it) is done as soon as the group is gone: Run does not sit
// out the grace period meant for programs that clean up. The children the
// shell leaves behind are orphans; whoever adopts them may reap them late
// or never (a lab node's or a container's PID 1), and a zombie still
// counts as a member of its process group for kill(2). The test adopts
// them itself (a child subreaper that does not reap until the end), so
// every orphan stays a zombie while Run looks. The grace is 30 s and the
// bound 10 s, far from both the moment it takes and the grace.
func TestCancelReturnsOnceTheGroupDiedOnSIGTERM(t *testing.T) {
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", e)
	}
	t.Cleanup(func() {
		syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0)
		for { // reap the orphans this test adopted
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				return
			}
		}
	})
	r := &ExecRunner{TermGrace: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := r.Run(ctx, Command{Name: "sh", Args: []string{"-c", "sleep 60 & sleep 60 & sh -c 'sleep 60' & wait"}})
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) || res.ExitCode != 143 {
		t.Errorf("err %v rc %d, want the deadline and SIGTERM's 143", err, res.ExitCode)
	}
	if took > 10*time.Second {
		t.Errorf("took %s with a 30 s grace: Run waited the grace out although every process had died on SIGTERM", took)
	}
}

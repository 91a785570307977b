package pvecluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A read cut short by wait_timeout is not evidence: the failure names the
// last read that completed (the C4/C10 state the user must act on), not
// "no answer before api_timeout".
func TestWaitReportsTheLastCompleteRead(t *testing.T) {
	m := &mod{p: params{WaitTimeout: 1}, env: Env{Poll: 10 * time.Millisecond}}
	calls := 0
	err := m.wait(context.Background(), "the primary quorate", func(ctx context.Context) (bool, string, error) {
		calls++
		if calls == 1 {
			return false, "members: pve01, pve03 (offline)", nil
		}
		<-ctx.Done() // a read still in flight at the deadline
		return false, "", ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "pve03 (offline)") {
		t.Fatalf("got %v, want the last complete read", err)
	}
	// with no complete read, the error itself is the evidence
	err = m.wait(context.Background(), "the primary quorate", func(ctx context.Context) (bool, string, error) {
		<-ctx.Done()
		return false, "", ctx.Err()
	})
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("got %v, want the read's own error", err)
	}
}

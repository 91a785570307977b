package pveapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// Local mode: a pvesh that could not start, or that printed PVE's die
// message, is an answer — one read decides, no settle poll of two minutes
// — and is never run twice.
func TestPveshFailuresAreAnswers(t *testing.T) {
	runs := 0
	var fail error
	pt := &pveshTransport{bin: "pvesh", run: func(ctx context.Context, bin string, args []string) ([]byte, []byte, error) {
		runs++
		return nil, []byte("storage 'x' is not online\n"), fail
	}}
	c := &Client{t: pt, retry: fastRetry, logf: func(string, ...any) {}, local: true, settlePoll: time.Millisecond}
	reads := 0
	w := Write{Method: http.MethodPost, Path: "/storage", Params: url.Values{"storage": {"x"}}, What: "create storage x", Creates: true,
		Settle: func(context.Context) (bool, error) { reads++; return false, nil }}
	fail = errors.New("exec: \"pvesh\": executable file not found in $PATH")
	start := time.Now()
	_, err := c.Dispatch(context.Background(), w)
	if !NothingDone(err) || reads != 1 || runs != 1 || time.Since(start) > time.Second {
		t.Errorf("pvesh that could not start: %v (reads %d, runs %d, %s)", err, reads, runs, time.Since(start))
	}
	w.Creates = false
	reads, runs = 0, 0
	_, err = c.Dispatch(context.Background(), w)
	if !IsUnverified(err) || reads != 1 || runs != 1 {
		t.Errorf("an update pvesh failed: %v (reads %d, runs %d)", err, reads, runs)
	}
}

// A lost answer settles within SettleWithin, polling; the deadline of the
// context bounds it too.
func TestSettleBoundedByDeadline(t *testing.T) {
	reads := 0
	c := &Client{logf: func(string, ...any) {}, settlePoll: 10 * time.Millisecond}
	w := Write{Method: http.MethodPost, Path: "/storage", What: "create storage x", Creates: true,
		Settle: func(context.Context) (bool, error) { reads++; return false, nil }}
	lost := newError(http.MethodPost, "/storage", 0, "", nil, errors.New("read: connection reset by peer"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.settle(ctx, w, start, lost)
	if d := time.Since(start); !IsUnverified(err) || NothingDone(err) || d > 2*time.Second || reads < 2 {
		t.Errorf("settle: %v after %s, %d reads", err, d, reads)
	}
}

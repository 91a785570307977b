package labctl

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"
)

// A held port behaves as a powered-off host's: connect times out (no RST),
// and once released the port refuses and can be listened on again (the
// node's daemons come back).
func TestDeadPortTimesOutThenFrees(t *testing.T) {
	// 127.77.250.x: above MaxSlot, never a lab's address.
	const ip, port = "127.77.250.7", 42022
	d, err := holdDead(ip, port)
	if err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(ip, "42022")
	for i := 0; i < 2; i++ {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		var ne net.Error
		if err == nil {
			c.Close()
			t.Fatalf("dial %d to a dead port connected", i)
		}
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("dial %d to a dead port: %v, want a timeout", i, err)
		}
	}
	if err := d.release(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.DialTimeout("tcp", addr, 500*time.Millisecond); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial to a released port: %v, want connection refused", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listening on a released port: %v", err)
	}
	ln.Close()
}

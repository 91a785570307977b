package pvestorage

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/gopve/proxmox/modules-src/pveapi"
)

// nameUnreachable puts the option to fix in front of an error that says the
// API could not be reached at all: an api_host that does not resolve, a
// port where nothing listens, no answer in time. pveapi words the transport
// error; which option the address came from is this module's knowledge (a
// module that connects to an address it learnt elsewhere names that
// instead). Local mode (pvesh) has no address and is left alone.
func nameUnreachable(conn pveapi.Connection, c *pveapi.Client, err error) error {
	if err == nil || conn.Host == "" || c != nil && c.Local() {
		return err
	}
	port := conn.Port
	if port == 0 {
		port = pveapi.DefaultPort
	}
	var dns *net.DNSError
	var nerr net.Error
	switch {
	case errors.As(err, &dns):
		return fmt.Errorf("api_host %q cannot be resolved to an address: %w", conn.Host, err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("api_host %q, api_port %d: nothing accepts connections there: %w", conn.Host, port, err)
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fmt.Errorf("api_host %q is unreachable from here: %w", conn.Host, err)
	case errors.As(err, &nerr) && nerr.Timeout():
		return fmt.Errorf("api_host %q, api_port %d: no answer before api_timeout: %w", conn.Host, port, err)
	}
	return err
}

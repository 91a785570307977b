package labctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// simulator is the PVE API simulator as the lab drives it.
type simulator interface {
	ControlHandler() http.Handler
	Close() error
}

// startSimulator: until the simulator package lands, the lab serves no PVE
// API and makes up its own credentials (root's password on every node).
func (l *Lab) startSimulator(ctx context.Context) error {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	l.creds = Credentials{User: "root@pam", Password: hex.EncodeToString(b), TokenID: "root@pam!lab", Port: 8006}
	return nil
}

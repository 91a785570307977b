package pveapi

import (
	"errors"
	"os/exec"
	"testing"
)

// exitErr returns a real *exec.ExitError (what a failing pvesh gives).
func exitErr(t *testing.T) error {
	err := exec.Command("false").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("false did not fail: %v", err)
	}
	return err
}

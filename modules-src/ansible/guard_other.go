//go:build !unix

package ansible

import "os"

// guardStdout on systems without dup2 only redirects Go's os.Stdout.
func guardStdout() (*os.File, error) {
	real := os.Stdout
	os.Stdout = os.Stderr
	return real, nil
}

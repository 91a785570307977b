//go:build unix

package ansible

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// guardStdout makes file descriptor 1 point at stderr, so that anything a
// module or a library prints (fmt.Println, a C library, a child process
// inheriting fd 1) cannot corrupt the one JSON object Ansible parses. It
// returns the original stdout, where only the result is written.
func guardStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, fmt.Errorf("duplicate stdout: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("redirect stdout to stderr: %w", err)
	}
	return os.NewFile(uintptr(fd), "stdout"), nil
}

//go:build unix

package repo

import (
	"errors"
	"syscall"
)

// processGone reports whether no process pid exists (kill(pid, 0) fails
// with ESRCH); a process of another user (EPERM) is alive.
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

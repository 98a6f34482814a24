//go:build unix

package safefile

import (
	"errors"
	"syscall"
)

// Alive reports whether process pid runs (signal 0; a process of another
// user counts as running).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

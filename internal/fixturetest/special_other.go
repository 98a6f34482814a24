//go:build !linux

package fixturetest

import (
	"os"
	"testing"
)

// Special is a path that exists and is not a regular file.
type Special struct {
	Kind  string
	Path  string
	Image string
}

// NonRegular is implemented on Linux only (losetup, mknod): it skips t
// elsewhere, and fails it under CI.
func NonRegular(t testing.TB) []Special {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal("the non-regular files of the test (a loop device, mknod) are made on Linux only")
	}
	t.Skip("the non-regular files of the test (a loop device, mknod) are made on Linux only")
	return nil
}

// Untouched does nothing off Linux (NonRegular skipped the test).
func (s Special) Untouched(t testing.TB) {}

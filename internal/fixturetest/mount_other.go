//go:build !linux

package fixturetest

import "errors"

var errNoMount = errors.New("mounts for tests are implemented on Linux only")

func mountReadOnly(dir string) error          { return errNoMount }
func mountTmpfs(dir string, size int64) error { return errNoMount }
func unmount(dir string)                      {}

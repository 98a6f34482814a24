//go:build unix

package sqlitex

import "syscall"

// dirWritable reports whether this process may create files in dir
// (access(2) with W_OK, which also answers EROFS on a read-only mount).
func dirWritable(dir string) bool {
	return syscall.Access(dir, 2 /* W_OK */) == nil
}

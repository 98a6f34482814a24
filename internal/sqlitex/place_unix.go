//go:build unix

package sqlitex

import "syscall"

// dirWritable reports whether this process may create files in dir
// (access(2) with W_OK, which also answers EROFS on a read-only mount).
func dirWritable(dir string) bool {
	return access(dir, 2 /* W_OK */) == nil
}

// access is access(2): nil when this process may use path in mode (R_OK
// 4, W_OK 2), else the errno (EACCES, EROFS, ...).
func access(path string, mode uint32) error {
	return syscall.Access(path, mode)
}

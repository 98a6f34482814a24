//go:build unix

package asis

import "syscall"

// writable reports whether this process may write path (access(2) with
// W_OK, which also answers EROFS on a read-only mount).
func writable(path string) bool { return syscall.Access(path, 2 /* W_OK */) == nil }

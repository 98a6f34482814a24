//go:build linux || darwin

package sqlitex

import "syscall"

// diskFull reports whether the file system of dir has no block left for
// this process (statfs(2): f_bavail is 0).
func diskFull(dir string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Bavail == 0
}

//go:build !(linux || darwin)

package sqlitex

// diskFull cannot tell where statfs(2) is not used: false.
func diskFull(dir string) bool { return false }

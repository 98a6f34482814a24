//go:build !unix

package sqlitex

// dirWritable assumes a writable directory where access(2) is not
// available; SQLite then reports a failed -shm creation itself.
func dirWritable(dir string) bool { return true }

// access assumes access where access(2) is not available.
func access(path string, mode uint32) error { return nil }

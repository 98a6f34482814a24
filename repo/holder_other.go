//go:build !unix

package repo

// processGone cannot probe a process here: holders are kept until expiry
// (Hermes does the same without psutil on Windows).
func processGone(int) bool { return false }

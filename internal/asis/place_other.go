//go:build !unix

package asis

// writable is false where access(2) is missing: readers open the file
// with mode=ro there.
func writable(string) bool { return false }

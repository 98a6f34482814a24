package repo

// SetImportLineCap sets the longest line Import reads (tests use a small
// one) and returns a function that restores it.
func SetImportLineCap(n int64) (restore func()) {
	old := importLineCap
	importLineCap = n
	return func() { importLineCap = old }
}

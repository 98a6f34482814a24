package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCLIDoctorRepairPlace (issue 11, item 8): a healthy file whose
// interrupted write must be rolled back, on a read-only mount, is reported
// by doctor as a problem of where it lies ("place", read-only file system,
// and what to do), not as page-level damage with `recover`; repair says
// so and exits 1, not 6 (corrupt), changing nothing.
func TestCLIDoctorRepairPlace(t *testing.T) {
	src := filepath.Join(t.TempDir(), "state.db")
	_, stderr, code := runCLI(t, "--db", src, "--journal-mode", "delete", "demo")
	require.Zero(t, code, stderr)
	dir := t.TempDir()
	db := fixturetest.HotJournalCopy(t, src, dir)
	fixturetest.ReadOnlyDir(t, dir)
	sum := fixturetest.SHA256(t, db)

	out, stderr, code := runCLI(t, "--db", db, "doctor")
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, out, "ERROR   place: ")
	require.Contains(t, out, "read-only file system")
	require.Contains(t, out, "not damage")
	require.Contains(t, out, "fix: run doctor where the file can be written")
	require.NotContains(t, out, "recover")
	require.NotContains(t, out, "integrity")

	out, stderr, code = runCLI(t, "--db", db, "repair")
	require.Equal(t, exitFailure, code, "stdout: %s\nstderr: %s", out, stderr)
	require.Contains(t, stderr, "cannot be repaired here")
	require.Contains(t, stderr, "read-only file system")
	require.NotContains(t, stderr, "page-level damage")
	require.NotContains(t, out, "nothing to repair", "a refusal is not 'nothing to repair'")
	require.Equal(t, sum, fixturetest.SHA256(t, db))
}

// TestCLIDoctorNotesUnwritablePlace (issue 11, item 8): on a read-only
// mount, doctor of a healthy file says nothing is wrong and notes that
// the file cannot be written there; repair has nothing to do (exit 0).
func TestCLIDoctorNotesUnwritablePlace(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	_, stderr, code := runCLI(t, "--db", db, "demo")
	require.Zero(t, code, stderr)
	fixturetest.ReadOnlyDir(t, dir)
	out, stderr, code := runCLI(t, "--db", db, "doctor")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "NOTE    place: the file cannot be written here (read-only file system)")
	require.Contains(t, out, "nothing wrong")
	out, stderr, code = runCLI(t, "--db", db, "repair")
	require.Zero(t, code, stderr)
	require.Contains(t, out, "nothing to repair")
}

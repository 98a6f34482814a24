package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCLIExportToFullDiskLeavesNothing (issue 11, item 5): export -o that
// fails (the disk fills up) leaves no partial or empty file; one that
// succeeds writes a 0600 file, never over an existing one.
func TestCLIExportToFullDiskLeavesNothing(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	for i := 0; i < 4; i++ { // about 200 KiB of export
		_, err = run(t, "--db", db, "import", writeJSONL(t, 60, i))
		require.NoError(t, err)
	}
	dir := fixturetest.SmallDisk(t, 64<<10)
	out := filepath.Join(dir, "export.jsonl")
	_, err = run(t, "--db", db, "export", "-o", out)
	require.Error(t, err)
	require.Empty(t, fixturetest.Listing(t, dir), "a failed export left files")

	ok := filepath.Join(t.TempDir(), "export.jsonl")
	_, err = run(t, "--db", db, "export", "-o", ok)
	require.NoError(t, err)
	fi, err := os.Stat(ok)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, []string{"export.jsonl -rw-------"}, fixturetest.Listing(t, filepath.Dir(ok)))
	_, err = run(t, "--db", db, "export", "-o", ok)
	require.Error(t, err, "an existing file is never overwritten")
}

// TestCLIFailedImportIntoNewFileLeavesNothing (issue 11, item 5): an
// import into a store that did not exist, which fails, leaves no store
// (empty or partial) behind.
func TestCLIFailedImportIntoNewFileLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte("{not json\n"), 0o600))
	db := filepath.Join(dir, "state.db")
	_, err := run(t, "--db", db, "import", bad)
	require.Error(t, err)
	require.Empty(t, fixturetest.Listing(t, dir), "a failed import into a new file left files")
	// Into an existing store, a failed import leaves the store.
	_, err = run(t, "--db", db, "demo")
	require.NoError(t, err)
	_, err = run(t, "--db", db, "import", bad)
	require.Error(t, err)
	_, err = os.Stat(db)
	require.NoError(t, err)
}

// writeJSONL writes an export of n sessions (ids unique per seed) and
// returns its path.
func writeJSONL(t *testing.T, n, seed int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		id := "imp_" + strconv.Itoa(seed) + "_" + strconv.Itoa(i)
		b.WriteString(`{"id":"` + id + `","source":"cli","started_at":1767600000.5,"message_count":1,"messages":[{"role":"user","content":"` + strings.Repeat("text ", 150) + `","timestamp":1767600001.5}]}` + "\n")
	}
	p := filepath.Join(t.TempDir(), "in.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o600))
	return p
}

// TestCLIFailedImportIntoNewFileKeepsGoodSessions (issue 23 §3): the
// README says the sessions of an import that stay are kept; into a store
// the import created, the good sessions are kept too (the new store used
// to be removed whole), the refused lines are named by number, and the
// summary says what was imported.
func TestCLIFailedImportIntoNewFileKeepsGoodSessions(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(
		`{"id":"good","source":"cli","messages":[{"id":5,"role":"user","content":"kept"}]}`+"\n"+
			`{"id":"bad","source":"cli","messages":[{"id":6,"role":"user","content":"x","observed":9}]}`+"\n"), 0o600))
	db := filepath.Join(dir, "state.db")
	stdout, stderr, code := runCLI(t, "--db", db, "import", in)
	require.Equal(t, 2, code, stderr)
	require.Contains(t, stderr, "line 2 (session bad): message 1: observed must be 0 or 1, not 9")
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %s", stderr)
	require.Contains(t, stdout, "imported 1 session (1 message)")
	out, err := run(t, "--db", db, "sessions", "list")
	require.NoError(t, err)
	require.Contains(t, out, "kept")
}

package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCLIErrorsNameTheirFile (issue 28, item 9): every error names the
// file it failed on and the exact command, with --db, that helps with that
// file; never the default store ($HERMES_HOME/state.db) when the command
// was about another file. Before, `copy --from bad.db` printed the default
// store's path in front of the message and advised `hermes-state doctor`,
// which checks the default store.
func TestCLIErrorsNameTheirFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HERMES_HOME", home)
	def := filepath.Join(home, "state.db")
	_, stderr, code := runCLI(t, "demo")
	require.Equal(t, exitOK, code, stderr)

	dir := t.TempDir()
	bad := filepath.Join(dir, "my bad.db")
	junk := make([]byte, 8192)
	_, _ = rand.Read(junk)
	require.NoError(t, os.WriteFile(bad, junk, 0o600))
	q := "'" + bad + "'"

	for _, args := range [][]string{
		{"copy", "--from", bad, "--to", "postgres://127.0.0.1:1/never"},
		{"--db", bad, "sessions", "list"},
		{"--db", bad, "migrate"},
	} {
		_, stderr, code := runCLI(t, args...)
		require.Equal(t, exitCorrupt, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, bad+" is not a SQLite database or is damaged; run `hermes-state --db "+q+" doctor`", "%v", args)
		require.NotContains(t, stderr, def, "%v names the default store", args)
	}
	_, stderr, code = runCLI(t, "recover", "--from", bad, "--to", filepath.Join(dir, "new.db"))
	require.NotEqual(t, exitOK, code)
	require.Contains(t, stderr, bad)
	require.NotContains(t, stderr, def)

	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, stderr, code = runCLI(t, "--db", empty, "sessions", "list")
	require.Equal(t, exitNotFound, code)
	require.Contains(t, stderr, "run `hermes-state --db "+empty+" migrate`")

	// doctor's fixes name the file.
	db := filepath.Join(dir, "state.db")
	_, stderr, code = runCLI(t, "--db", db, "demo")
	require.Equal(t, exitOK, code, stderr)
	fixturetest.Exec(t, db, "UPDATE sessions SET message_count = message_count + 3")
	out, _, code := runCLI(t, "--db", db, "doctor")
	require.NotEqual(t, exitOK, code)
	require.Contains(t, out, "fix: hermes-state --db "+db+" repair")
	require.NotContains(t, out, "fix: hermes-state repair")

	// A file without the full-text index: the rebuild advice names it.
	fixturetest.Exec(t, db, "DROP TABLE messages_fts")
	_, stderr, code = runCLI(t, "--db", db, "search", "kubernetes")
	require.NotEqual(t, exitOK, code)
	require.Contains(t, stderr, db+" has no full-text index")
	require.Contains(t, stderr, "run `hermes-state --db "+db+" fts rebuild`")
}

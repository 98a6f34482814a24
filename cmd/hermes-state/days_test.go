package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCLIDaysRange (issue 11, item 10): day counts beyond what a duration
// holds are usage errors (exit 2) that say the range, and prune nothing.
// `maintain --prune-days 213504` used to wrap to about 25 minutes and
// prune every session ended a day ago; 99999999999 to an arbitrary span.
func TestCLIDaysRange(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, _, code := runCLI(t, "--db", db, "demo")
	require.Zero(t, code)
	fixturetest.Exec(t, db, "UPDATE sessions SET started_at = started_at - 86400, ended_at = ended_at - 86400",
		"UPDATE messages SET timestamp = timestamp - 86400")
	for _, args := range [][]string{
		{"maintain", "--prune-days", "213504"},
		{"maintain", "--prune-days", "99999999999"},
		{"maintain", "--prune-days", "100001"},
		{"prune", "--older-than-days", "213504"},
		{"prune", "--older-than-days", "99999999999"},
		{"prune", "--older-than-days", "1e300"},
	} {
		_, stderr, code := runCLI(t, append([]string{"--db", db}, args...)...)
		require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "at most 100000", args)
		require.Equal(t, 2, strings.Count(stderr, "\n"), "a reason and where to find help: %q", stderr)
	}
	out, _, code := runCLI(t, "--db", db, "--json", "sessions", "list")
	require.Zero(t, code)
	require.Equal(t, 3, strings.Count(out, `"source":`), "nothing pruned")
	_, stderr, code := runCLI(t, "--db", db, "maintain", "--prune-days", "100000")
	require.Zero(t, code, stderr)
}

// TestCLISystemSchemaRefused (issue 11, item 9): --schema naming one of
// PostgreSQL's system schemas is a usage error (exit 2) for every command,
// said before anything is opened.
func TestCLISystemSchemaRefused(t *testing.T) {
	const nowhere = "postgres://127.0.0.1:1/x?sslmode=disable&connect_timeout=2"
	for _, args := range [][]string{
		{"--db", nowhere, "--schema", "information_schema", "migrate"},
		{"--db", nowhere, "--schema", "INFORMATION_SCHEMA", "sessions", "list"},
		{"--db", nowhere, "--schema", "pg_catalog", "demo"},
	} {
		_, stderr, code := runCLI(t, args...)
		require.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "is a PostgreSQL system schema")
		require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLINoStore (issue 11, item 13): a mistyped --db (directories that do
// not exist) or a state.db truncated to 0 bytes is refused by every
// command that does not create a store, reads and writes alike: exit 3,
// "no store at PATH", and nothing is created (no directory, no file, no
// -hslock) and the 0-byte file stays 0 bytes. Only demo, migrate and
// import create a store.
func TestCLINoStore(t *testing.T) {
	dir := t.TempDir()
	commands := [][]string{
		{"sessions", "list"}, {"sessions", "show", "x"}, {"messages", "x"}, {"search", "x"}, {"export"}, {"stats"},
		{"sessions", "lineage", "x"}, {"sessions", "title", "x"}, {"doctor"}, {"backup", filepath.Join(dir, "b.db")},
		// writers that do not create
		{"repair"}, {"maintain"}, {"prune", "--older-than-days", "3"}, {"delete", "x"}, {"fts", "rebuild"}, {"fts", "check"},
		{"sessions", "title", "x", "new title"}, {"sessions", "archive", "x"}, {"sessions", "read", "x"},
		{"sessions", "rewind", "x", "--turn", "-1"}, {"sessions", "resume", "x"},
	}
	for _, args := range commands {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			missing := filepath.Join(dir, "typo", "state.db")
			_, stderr, code := runCLI(t, append([]string{"--db", missing}, args...)...)
			require.Equal(t, exitNotFound, code, stderr)
			require.Contains(t, stderr, "no store at "+missing)
			require.NoDirExists(t, filepath.Join(dir, "typo"), "nothing created")

			sub := t.TempDir()
			empty := filepath.Join(sub, "state.db")
			require.NoError(t, os.WriteFile(empty, nil, 0o600))
			_, stderr, code = runCLI(t, append([]string{"--db", empty}, args...)...)
			require.Equal(t, exitNotFound, code, stderr)
			require.Contains(t, stderr, "no store at "+empty)
			require.Contains(t, stderr, "empty (0 bytes)")
			fi, err := os.Stat(empty)
			require.NoError(t, err)
			require.Zero(t, fi.Size(), "the 0-byte file is not initialised")
			es, err := os.ReadDir(sub)
			require.NoError(t, err)
			require.Len(t, es, 1, "no sidecar created")
		})
	}
	// The commands that create a store do.
	jsonl := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(jsonl, nil, 0o600))
	for _, args := range [][]string{{"demo"}, {"migrate"}, {"import", jsonl}} {
		db := filepath.Join(t.TempDir(), "new", "state.db")
		_, stderr, code := runCLI(t, append([]string{"--db", db}, args...)...)
		require.Zero(t, code, "%v: %s", args, stderr)
		require.FileExists(t, db)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCLIStorageCause (issue 11, item 7): a write that fails for a reason
// of the place says it on one line, after the store's path: "disk full" on
// a full disk, "read-only file system" on a read-only mount; never the
// bare "storage failure" nor "cannot open PATH" without a reason.
func TestCLIStorageCause(t *testing.T) {
	t.Run("disk full", func(t *testing.T) {
		dir := fixturetest.SmallDisk(t, 4<<20)
		db := filepath.Join(dir, "state.db")
		_, stderr, code := runCLI(t, "--db", db, "demo")
		require.Zero(t, code, stderr)
		f, err := os.Create(filepath.Join(dir, "filler"))
		require.NoError(t, err)
		buf := make([]byte, 4096)
		for err == nil {
			_, err = f.Write(buf)
		}
		require.NoError(t, f.Close())
		_, stderr, code = runCLI(t, "--db", db, "sessions", "title", "demo-cli-kubernetes", "a new title")
		require.Equal(t, exitFailure, code, stderr)
		require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
		require.Contains(t, stderr, db)
		require.Contains(t, stderr, ": disk full\n")
	})
	t.Run("read-only mount", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "state.db")
		_, stderr, code := runCLI(t, "--db", db, "demo")
		require.Zero(t, code, stderr)
		fixturetest.ReadOnlyDir(t, dir)
		_, stderr, code = runCLI(t, "--db", db, "sessions", "title", "demo-cli-kubernetes", "a new title")
		require.Equal(t, exitFailure, code, stderr)
		require.Equal(t, 1, strings.Count(stderr, "\n"), stderr)
		require.Contains(t, stderr, "hermes-state: cannot open "+db+": read-only file system")
	})
}

package hermesstate_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestOpenKeepsTheFileMode (issue 28, item 10): opening an existing file
// for writing (adopting a Hermes v30 file, writing past a checkpoint)
// keeps its mode whatever it is, and the -wal and -shm SQLite makes while
// it is open take that mode; a store Open creates is 0600 (its sidecars
// too), whatever the umask. Before, a 0644 Hermes file became 0600 (and
// 0640 became 0600, 0444 became 0400).
func TestOpenKeepsTheFileMode(t *testing.T) {
	ctx := context.Background()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o664, 0o600, 0o444} {
		path := fixturetest.Copy(t, "hermes-v30.db")
		require.NoError(t, os.Chmod(path, mode))
		st, err := hs.Open(ctx, hs.Config{Path: path})
		require.NoError(t, err, "mode %o", mode)
		for i := 0; i < 60; i++ { // past a PASSIVE checkpoint
			_, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
			require.NoError(t, err)
		}
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			if fi, err := os.Stat(p); err == nil {
				require.Equalf(t, mode, fi.Mode().Perm(), "%s of a %o file, while open", p, mode)
			}
		}
		require.NoError(t, st.Close())
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equalf(t, mode, fi.Mode().Perm(), "a %o file changed its mode", mode)
	}
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		require.NoError(t, err, p)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
	require.NoError(t, st.Close())
}

package hermesstate_test

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestSecurePathsOnlyRemovesAccess (issue 11, item 4): opening a store
// tightens its file by removing group and other access (mode &^ 0o077) and
// never adds anything: a 0444 file is not made writable, a 0640 one becomes
// 0600, a 0400 one stays 0400.
func TestSecurePathsOnlyRemovesAccess(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ before, after os.FileMode }{{0o444, 0o400}, {0o640, 0o600}, {0o400, 0o400}, {0o600, 0o600}, {0o664, 0o600}} {
		path := fixturetest.Copy(t, "hermes-v30.db")
		st, err := hs.Open(ctx, hs.Config{Path: path})
		require.NoError(t, err)
		_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		require.NoError(t, st.Close())
		require.NoError(t, os.Chmod(path, c.before))
		st, openErr := hs.Open(ctx, hs.Config{Path: path})
		if openErr == nil {
			for i := 0; i < 60; i++ { // past a checkpoint, which tightens too
				if _, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"}); err != nil {
					break
				}
			}
			require.NoError(t, st.Close())
		}
		fi, err := os.Stat(path)
		require.NoError(t, err)
		got := fi.Mode().Perm()
		require.Zerof(t, got&^c.before, "mode %o became %o: access was added", c.before, got)
		if openErr == nil {
			require.Equalf(t, c.after, got, "mode %o", c.before)
		}
	}
}

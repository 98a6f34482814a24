package hermesstate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// The write lock file (PATH-hslock) appears with the first write, mode
// 0600; a read-only open never creates it, nor a store with NoLockFile;
// two stores on one file (each with its own lock file handle, as two
// processes) appending at once lose nothing.
func TestWriteLockFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	lock := path + "-hslock"
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	fi, err := os.Stat(lock)
	require.NoError(t, err, "created by the first write")
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.NoError(t, st.Close())

	require.NoError(t, os.Remove(lock))
	ro, err := hs.Open(ctx, hs.Config{Path: path, ReadOnly: true})
	require.NoError(t, err)
	_, err = ro.Sessions().Get(ctx, s.ID)
	require.NoError(t, err)
	_, err = ro.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("refused")})
	require.ErrorIs(t, err, hs.ErrUnsupported)
	require.NoError(t, ro.Close())
	_, err = os.Stat(lock)
	require.True(t, os.IsNotExist(err), "a read-only store does not create the lock file")

	nl, err := hs.Open(ctx, hs.Config{Path: path, NoLockFile: true})
	require.NoError(t, err)
	_, err = nl.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("no lock file")})
	require.NoError(t, err)
	require.NoError(t, nl.Close())
	_, err = os.Stat(lock)
	require.True(t, os.IsNotExist(err), "NoLockFile")

	a, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer a.Close()
	b, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer b.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for k, st := range []*hs.Store{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if _, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("w%d-%d", k, i))}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	n, err := a.Messages().Count(ctx, s.ID)
	require.NoError(t, err)
	require.EqualValues(t, 201, n)
}

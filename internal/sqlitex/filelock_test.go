//go:build unix

package sqlitex

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Two FileLocks on the same database stand for two processes (flock
// belongs to the open file, and each FileLock opens its own): the second
// waits while the first holds the lock and gets it when it is released;
// waiting ends with ErrLockWait at the deadline (which IsLock reports, so
// a write retries it) or with the context's error, and a wait given up
// never leaves the lock held. The file is created at the first Lock, 0600.
func TestFileLockQueuesAcrossOpenFiles(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	a, b := NewFileLock(db), NewFileLock(db)
	defer a.Close()
	defer b.Close()
	_, err := os.Stat(a.Path())
	require.True(t, os.IsNotExist(err), "no file before the first Lock")
	ctx := context.Background()

	unlockA, err := a.Lock(ctx, time.Time{})
	require.NoError(t, err)
	fi, err := os.Stat(a.Path())
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	_, err = b.Lock(ctx, time.Now().Add(50*time.Millisecond))
	require.ErrorIs(t, err, ErrLockWait)
	require.True(t, IsLock(err))

	cctx, cancel := context.WithCancel(ctx)
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err = b.Lock(cctx, time.Time{})
	require.ErrorIs(t, err, context.Canceled)

	got := make(chan func(), 1)
	go func() {
		u, err := b.Lock(ctx, time.Now().Add(10*time.Second))
		if err == nil {
			got <- u
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("b got the lock while a held it")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	var unlockB func()
	select {
	case u, ok := <-got:
		require.True(t, ok, "b gets the lock once a releases it")
		unlockB = u
	case <-time.After(10 * time.Second):
		t.Fatal("b never got the lock")
	}
	// Now a waits for b; within a process one holder at a time.
	_, err = a.Lock(ctx, time.Now().Add(30*time.Millisecond))
	require.ErrorIs(t, err, ErrLockWait)
	unlockB()
	unlockA, err = a.Lock(ctx, time.Now().Add(10*time.Second))
	require.NoError(t, err, "the waits given up left nothing held")
	_, err = a.Lock(ctx, time.Now().Add(30*time.Millisecond))
	require.ErrorIs(t, err, ErrLockWait, "one holder per process")
	unlockA()
}

// A lock file that cannot be created (the directory is read-only) does not
// stop writes: Lock returns at once with a release that does nothing.
func TestFileLockWithoutFile(t *testing.T) {
	l := NewFileLock(filepath.Join(t.TempDir(), "missing-dir", "state.db"))
	defer l.Close()
	u, err := l.Lock(context.Background(), time.Now().Add(time.Second))
	require.NoError(t, err)
	u()
	u, err = l.Lock(context.Background(), time.Now().Add(time.Second))
	require.NoError(t, err)
	u()
}

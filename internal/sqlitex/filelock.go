package sqlitex

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"
)

// ErrLockWait is returned by FileLock.Lock when the lock was not had before
// its deadline. IsLock reports true for it, so a write retries it (within
// its budget) like SQLITE_BUSY.
var ErrLockWait = errors.New("sqlitex: another process held the write lock file until the deadline")

// WriteLockSuffix names the lock file beside a database (state.db →
// state.db-hslock).
const WriteLockSuffix = "-hslock"

// FileLock queues this library's writers across processes in the kernel:
// an exclusive flock(2) on a file beside the database, taken before BEGIN
// IMMEDIATE and released after COMMIT. A writer that finds it held sleeps
// in the kernel until it is released (no polling), so writers of different
// processes take turns instead of racing SQLite's busy handler, which polls
// with growing sleeps and lets a process that writes in a loop retake the
// lock within microseconds. The lock only orders writers; SQLite's own
// locks still decide, so a process that does not take it (Hermes, the
// sqlite3 shell) is arbitrated by SQLite's busy handler as before, and a
// lock file that cannot be opened (a read-only directory) is skipped.
//
// Within a process one goroutine holds it at a time (the writer connection
// serializes writes anyway). The file is created (mode 0600) on the first
// Lock, so a store that never writes never creates it.
type FileLock struct {
	path string
	sem  chan struct{}

	once sync.Once
	f    *os.File
}

// NewFileLock returns the lock for the database at dbPath (the file is
// dbPath + WriteLockSuffix; nothing is created yet).
func NewFileLock(dbPath string) *FileLock {
	return &FileLock{path: dbPath + WriteLockSuffix, sem: make(chan struct{}, 1)}
}

// Path returns the lock file's path.
func (l *FileLock) Path() string { return l.path }

// openLockFile opens (creating, 0600) the lock file: a file of its own
// beside the database, never the database or a sidecar of SQLite's, so
// closing it cannot drop any POSIX lock SQLite holds.
func (l *FileLock) openLockFile() *os.File {
	l.once.Do(func() {
		f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE, 0o600)
		if err == nil {
			l.f = f
		}
	})
	return l.f
}

// Lock waits until this goroutine holds the lock, ctx ends (ctx.Err()) or
// deadline passes (ErrLockWait; a zero deadline waits for ctx only), and
// returns the function that releases it. A free lock is taken even after
// the deadline. When the lock file cannot be
// opened it returns at once with a release that does nothing.
func (l *FileLock) Lock(ctx context.Context, deadline time.Time) (func(), error) {
	// Uncontended, the lock is taken even past the deadline: the caller
	// (a write's last attempt) then meets SQLite's own lock, if any.
	select {
	case l.sem <- struct{}{}:
	default:
		var expired <-chan time.Time
		if !deadline.IsZero() {
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			expired = t.C
		}
		select {
		case l.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-expired:
			return nil, ErrLockWait
		}
	}
	release := func() { <-l.sem }
	f := l.openLockFile()
	if f == nil {
		return release, nil
	}
	ok, err := tryFlock(f)
	if err != nil {
		return release, nil // no flock here: SQLite's locks alone
	}
	if ok {
		return func() { unflock(f); release() }, nil
	}
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	done := make(chan error, 1)
	go func() { done <- flock(f) }()
	select {
	case err := <-done:
		if err != nil {
			return release, nil
		}
		return func() { unflock(f); release() }, nil
	case <-ctx.Done():
		go func() { abandon(f, done); release() }()
		return nil, ctx.Err()
	case <-expired:
		go func() { abandon(f, done); release() }()
		return nil, ErrLockWait
	}
}

// abandon waits for a blocked flock given up by its caller and releases it
// at once.
func abandon(f *os.File, done <-chan error) {
	if <-done == nil {
		unflock(f)
	}
}

// Close releases the lock file (it is left on disk: removing it while
// another process waits on it would split the queue).
func (l *FileLock) Close() error {
	l.once.Do(func() {})
	if l.f != nil {
		return l.f.Close()
	}
	return nil
}

package sqlitex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/stretchr/testify/require"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type codeErr struct {
	code int
	msg  string
}

func (e codeErr) Error() string { return e.msg }
func (e codeErr) Code() int     { return e.code }

func TestIsLockByResultCode(t *testing.T) {
	lock := map[int]string{
		5:   "SQLITE_BUSY",
		261: "SQLITE_BUSY_RECOVERY",
		517: "SQLITE_BUSY_SNAPSHOT",
		773: "SQLITE_BUSY_TIMEOUT",
		6:   "SQLITE_LOCKED",
		262: "SQLITE_LOCKED_SHAREDCACHE",
		518: "SQLITE_LOCKED_VTAB",
	}
	for c, name := range lock {
		err := fmt.Errorf("wrapped: %w", codeErr{c, "some driver text"})
		require.True(t, IsLock(err), name)
		require.False(t, IsCorrupt(err), name)
	}
	notLock := map[int]string{1: "SQLITE_ERROR", 10: "SQLITE_IOERR", 11: "SQLITE_CORRUPT", 19: "SQLITE_CONSTRAINT",
		2067: "SQLITE_CONSTRAINT_UNIQUE", 266: "SQLITE_IOERR_READ", 26: "SQLITE_NOTADB"}
	for c, name := range notLock {
		require.False(t, IsLock(codeErr{c, "x"}), name)
	}
	// The code wins over the words: a coded non-lock error that happens to
	// mention locking is not a lock error.
	require.False(t, IsLock(codeErr{1, "near \"database is locked\": syntax error"}))
	// Without a code, the words are the fallback.
	require.True(t, IsLock(errors.New("database is locked")))
	require.True(t, IsLock(errors.New("Database Table Is Locked")))
	require.False(t, IsLock(errors.New("no such table: x")))
	require.False(t, IsLock(nil))

	require.True(t, IsCorrupt(codeErr{11, ""}))
	require.True(t, IsCorrupt(codeErr{267, ""})) // SQLITE_CORRUPT_VTAB
	require.True(t, IsCorrupt(codeErr{26, ""}))
	require.True(t, IsIOErr(codeErr{266, ""}))
	require.True(t, IsIOErr(codeErr{3338, ""})) // SQLITE_IOERR_FSYNC
	require.False(t, IsIOErr(codeErr{5, ""}))
}

func TestDSN(t *testing.T) {
	d := ConnConfig{Path: "/x/state.db", BusyTimeout: 100 * time.Millisecond, Synchronous: SyncNormal, ForeignKeys: true, Immediate: true}.DSN()
	require.Contains(t, d, "_txlock=immediate")
	require.Contains(t, d, "busy_timeout%28100%29")
	// _time_format silently disables _txlock in the driver.
	require.NotContains(t, d, "_time_format")
	d = ConnConfig{Path: "/x/state.db", QueryOnly: true}.DSN()
	require.NotContains(t, d, "_txlock")
	require.Contains(t, d, "query_only%281%29")
}

func openFile(t *testing.T, cfg ConnConfig) *sql.DB {
	t.Helper()
	db, err := OpenEnv(cfg.DSN())
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

func newWALFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.db")
	db := openFile(t, ConnConfig{Path: path, BusyTimeout: time.Second})
	_, err := db.Exec("PRAGMA journal_mode=WAL")
	require.NoError(t, err)
	_, err = db.Exec("CREATE TABLE t(x INTEGER)")
	require.NoError(t, err)
	require.NoError(t, db.Close())
	return path
}

// TestImmediateTakesLockAtBegin shows what _txlock=immediate buys and would
// catch a regression to deferred BEGIN: with it, a writer that meets a held
// lock waits (and at worst fails) at BEGIN, where SQLite's busy handler
// applies and nothing has been read yet; with a deferred BEGIN the
// transaction reads a snapshot first and its first write fails at once with
// SQLITE_BUSY_SNAPSHOT when another connection committed in between, which
// no busy timeout can wait out.
func TestImmediateTakesLockAtBegin(t *testing.T) {
	ctx := context.Background()
	path := newWALFile(t)
	holder := openFile(t, ConnConfig{Path: path, BusyTimeout: time.Second, Immediate: true})

	t.Run("immediate", func(t *testing.T) {
		w := openFile(t, ConnConfig{Path: path, BusyTimeout: 150 * time.Millisecond, Immediate: true})
		htx, err := holder.BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = htx.Exec("INSERT INTO t VALUES (1)")
		require.NoError(t, err)

		start := time.Now()
		_, err = w.BeginTx(ctx, nil)
		waited := time.Since(start)
		require.Error(t, err, "BEGIN must not succeed while another connection holds the write lock")
		require.True(t, IsLock(err), "%v", err)
		c, _ := Code(err)
		require.Equal(t, 5, c&0xff)
		require.GreaterOrEqual(t, waited, 100*time.Millisecond, "BEGIN IMMEDIATE waits in the busy handler")

		// Once the holder commits, BEGIN succeeds and the write goes through.
		// (A second connection with a long busy timeout, so a loaded machine
		// that delays the holder's commit cannot make this part flaky.)
		w2 := openFile(t, ConnConfig{Path: path, BusyTimeout: 10 * time.Second, Immediate: true})
		done := make(chan error, 1)
		go func() {
			tx, err := w2.BeginTx(ctx, nil)
			if err == nil {
				_, err = tx.Exec("INSERT INTO t VALUES (2)")
				if err == nil {
					err = tx.Commit()
				}
			}
			done <- err
		}()
		time.Sleep(30 * time.Millisecond)
		require.NoError(t, htx.Commit())
		require.NoError(t, <-done)
	})

	t.Run("deferred", func(t *testing.T) {
		cfg := ConnConfig{Path: path, BusyTimeout: 2 * time.Second}
		w := openFile(t, cfg)
		tx, err := w.BeginTx(ctx, nil)
		require.NoError(t, err)
		var n int
		require.NoError(t, tx.QueryRow("SELECT count(*) FROM t").Scan(&n))
		_, err = holder.Exec("INSERT INTO t VALUES (3)")
		require.NoError(t, err)
		start := time.Now()
		_, err = tx.Exec("INSERT INTO t VALUES (4)")
		require.Error(t, err)
		require.Less(t, time.Since(start), time.Second, "BUSY_SNAPSHOT is immediate: the busy timeout does not help")
		c, ok := Code(err)
		require.True(t, ok)
		require.Equal(t, 517, c, "SQLITE_BUSY_SNAPSHOT, got %v", err)
		require.True(t, IsLock(err), "an extended lock code is a lock error")
		require.NoError(t, tx.Rollback())
	})
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	busy := codeErr{517, "database is locked (snapshot)"}

	t.Run("succeeds after lock errors", func(t *testing.T) {
		n := 0
		res, err := Retry(ctx, time.Second, func() error {
			n++
			if n < 3 {
				return busy
			}
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, 3, res.Attempts)
		require.GreaterOrEqual(t, res.Waited, 2*time.Millisecond, "two jittered pauses of at least 1 ms")
	})
	t.Run("budget runs out", func(t *testing.T) {
		// No wall-clock upper bound (the machine may be loaded): what must
		// hold is that every attempt but the last starts inside the budget
		// (no pause follows an attempt made once the budget is spent) and
		// that the budget is used whole.
		const budget = 300 * time.Millisecond
		start := time.Now()
		var starts []time.Duration
		res, err := Retry(ctx, budget, func() error {
			starts = append(starts, time.Since(start))
			return busy
		})
		require.ErrorIs(t, err, busy)
		require.Greater(t, res.Attempts, 1)
		require.Len(t, starts, res.Attempts)
		for i, s := range starts[:len(starts)-1] {
			require.Less(t, s, budget, "attempt %d of %d started after the budget", i+1, len(starts))
		}
		require.GreaterOrEqual(t, res.Waited, budget, "the whole budget is used")
	})
	t.Run("other errors are not retried", func(t *testing.T) {
		other := codeErr{19, "constraint"}
		res, err := Retry(ctx, time.Second, func() error { return other })
		require.ErrorIs(t, err, other)
		require.Equal(t, 1, res.Attempts)
	})
	t.Run("context ends the wait", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 60*time.Millisecond)
		defer cancel()
		_, err := Retry(cctx, time.Minute, func() error { return busy })
		require.ErrorIs(t, err, context.DeadlineExceeded)
	})
	t.Run("jitter", func(t *testing.T) {
		seen := map[time.Duration]bool{}
		for i := 0; i < 50; i++ {
			b := Backoff(0)
			require.GreaterOrEqual(t, b, time.Millisecond)
			require.Less(t, b, 20*time.Millisecond)
			seen[b] = true
			m := Backoff(time.Second)
			require.GreaterOrEqual(t, m, 20*time.Millisecond)
			require.Less(t, m, 150*time.Millisecond)
			l := Backoff(3 * time.Second)
			require.GreaterOrEqual(t, l, 250*time.Millisecond)
			require.Less(t, l, time.Second)
		}
		require.Greater(t, len(seen), 10, "pauses are random")
	})
	require.True(t, strings.Contains(Transcript.String(), "transcript"))
	require.Equal(t, 60*time.Second, Transcript.Budget())
	require.Equal(t, 20*time.Second, Routine.Budget())
	require.Equal(t, 500*time.Millisecond, Activity.Budget())
}

package hermesstate

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/repo"
)

// readWithin runs repo.Read of q on st with a 300 ms deadline and returns
// its error, failing t when the read has not returned a minute later (the
// statement was not interrupted).
func readWithin(t *testing.T, st *Store, q string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := repo.Read(ctx, st.db, "test.read", func(tx *gorm.DB) (int64, error) {
			var n int64
			err := tx.Raw(q).Scan(&n).Error
			return n, err
		})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the read ignored its context: still running a minute after its 300 ms deadline")
		return nil
	}
}

// TestReadHonoursContext (issue 11, item 6): a read whose statement would
// never end stops when its context ends: SQLite interrupts the statement
// (sqlite3_interrupt on ctx.Done); PostgreSQL cancels it on the server.
func TestReadHonoursContext(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "state.db")})
		require.NoError(t, err)
		defer st.Close()
		err = readWithin(t, st, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c")
		require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
		// The connection is usable afterwards.
		var n int64
		n, err = repo.Read(context.Background(), st.db, "test.read", func(tx *gorm.DB) (int64, error) {
			var n int64
			return n, tx.Raw("SELECT 42").Scan(&n).Error
		})
		require.NoError(t, err)
		require.EqualValues(t, 42, n)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn, schema := pgtest.Schema(t)
		st, err := Open(context.Background(), Config{DSN: dsn, Schema: schema})
		require.NoError(t, err)
		defer st.Close()
		err = readWithin(t, st, "SELECT 1 FROM pg_sleep(120)")
		require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
		// The server stopped the statement too (a cancel request, not only
		// a closed socket that the server notices much later).
		deadline := time.Now().Add(20 * time.Second)
		for {
			n := pgtest.QueryInt(t, dsn, "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = 'SELECT 1 FROM pg_sleep(120)'")
			if n == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "the server still runs the cancelled statement")
			time.Sleep(100 * time.Millisecond)
		}
	})
}

//go:build cgo && (sqlite_fts5 || fts5)

package sqlitex

import (
	"context"
	"reflect"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/require"
)

// cachedStmts returns how many compiled statements the C connection keeps.
func cachedStmts(t *testing.T, dc any) int {
	t.Helper()
	sc, ok := dc.(*sqlite3.SQLiteConn)
	require.True(t, ok, "a C engine connection is a *sqlite3.SQLiteConn, got %T", dc)
	f := reflect.ValueOf(sc).Elem().FieldByName("stmtCache")
	require.True(t, f.IsValid(), "mattn/go-sqlite3 has no stmtCache field any more: check _stmt_cache_size")
	return f.Len()
}

// TestCStatementCache: a C engine connection keeps the statements it ran
// (a query run again is not compiled again), never more than the bound,
// and ConnConfig.StmtCache < 0 keeps none.
func TestCStatementCache(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		cache, want int
	}{{0, 3}, {2, 2}, {-1, 0}} {
		e, err := Lookup(EngineC)
		require.NoError(t, err)
		db, err := e.OpenDB(e.DSN(ConnConfig{Path: t.TempDir() + "/s.db", StmtCache: tc.cache}))
		require.NoError(t, err)
		conn, err := db.Conn(ctx)
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, "CREATE TABLE t(x)")
		require.NoError(t, err)
		for i := 0; i < 3; i++ {
			_, err = conn.ExecContext(ctx, "INSERT INTO t(x) VALUES (?)", i)
			require.NoError(t, err)
			var n int
			require.NoError(t, conn.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE x >= ?", 0).Scan(&n))
			require.NoError(t, conn.QueryRowContext(ctx, "SELECT max(x) FROM t").Scan(&n))
		}
		require.NoError(t, conn.Raw(func(dc any) error {
			require.Equal(t, tc.want, cachedStmts(t, dc), "cache %d", tc.cache)
			return nil
		}))
		require.NoError(t, conn.Close())
		require.NoError(t, db.Close())
	}
}

// TestBothEnginesOneProcessOwnFiles: both drivers are linked into one
// binary and work side by side, each on its own file.
func TestBothEnginesOneProcessOwnFiles(t *testing.T) {
	dir := t.TempDir()
	for _, e := range Engines() {
		db, err := e.OpenDB(e.DSN(ConnConfig{Path: dir + "/" + e.Name() + ".db"}))
		require.NoError(t, err)
		_, err = db.Exec("CREATE VIRTUAL TABLE f USING fts5(x, tokenize='trigram')")
		require.NoError(t, err, "%s: FTS5 with trigram", e.Name())
		require.NoError(t, db.Close())
	}
}

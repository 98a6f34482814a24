//go:build cgo && (sqlite_fts5 || fts5)

package hermesstate

import (
	"context"
	"reflect"
	"testing"

	sqlite3 "github.com/mattn/go-sqlite3"
	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestCStoreKeepsStatements: on the C engine the writer connection keeps
// the append's statements compiled (at most sqlitex.DefaultStmtCache), and
// the reader connections keep the search's; Close finalizes them with the
// connections.
func TestCStoreKeepsStatements(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{Engine: EngineC})
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	for i := 0; i < 20; i++ {
		_, err := s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("statement cache")})
		require.NoError(t, err)
	}
	_, err = s.Search().Messages(ctx, "statement", repo.SearchOptions{Limit: 5})
	require.NoError(t, err)
	for _, pool := range []string{"writer", "reader"} {
		g := s.db.W
		if pool == "reader" {
			g = s.db.R
		}
		sqlDB, err := g.DB()
		require.NoError(t, err)
		conn, err := sqlDB.Conn(ctx)
		require.NoError(t, err)
		require.NoError(t, conn.Raw(func(dc any) error {
			sc, ok := dc.(*sqlite3.SQLiteConn)
			require.True(t, ok, "%s: %T", pool, dc)
			n := reflect.ValueOf(sc).Elem().FieldByName("stmtCache").Len()
			require.Greater(t, n, 0, "%s keeps no statement", pool)
			require.LessOrEqual(t, n, sqlitex.DefaultStmtCache, pool)
			return nil
		}))
		require.NoError(t, conn.Close())
	}
	require.NoError(t, s.Close())
	sqlDB, err := s.db.W.DB()
	require.NoError(t, err)
	require.Error(t, sqlDB.PingContext(ctx), "the writer pool is closed with the store")
}

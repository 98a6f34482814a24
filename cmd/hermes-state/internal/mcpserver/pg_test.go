package mcpserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/internal/pgtest"
)

func openPG(t *testing.T) *hs.Store {
	t.Helper()
	dsn, schema := pgtest.Schema(t)
	st, err := hs.Open(context.Background(), hs.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestPostgresTools runs the tool tests on PostgreSQL stores: a fresh one
// (every read tool, bad arguments, the write tools) and one holding the
// current Hermes fixture, copied in with hs.Copy.
func TestPostgresTools(t *testing.T) {
	t.Run("fresh", func(t *testing.T) {
		st := openPG(t)
		sc := seed(t, st)
		checkFreshTools(t, st, sc)
		checkBadCalls(t, connect(t, st, mcpserver.Options{AllowWrite: true}))
		checkWriteTools(t, st)
	})
	t.Run("fixture", func(t *testing.T) {
		path, exp := fixtureCopy(t, "hermes-v30")
		src := openSQLite(t, path)
		st := openPG(t)
		_, err := hs.Copy(context.Background(), src, st, hs.CopyOptions{})
		require.NoError(t, err)
		checkFixtureTools(t, st, exp, true, false)
	})
}

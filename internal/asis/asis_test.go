package asis_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "github.com/glebarez/go-sqlite" // driver "sqlite"
	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/asis"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestShims: a v30 file needs no view; a v1 file gets one per v30 table
// it lacks or holds narrower, and every connection of the pool OpenDB
// makes sees them (the views live in each connection's temp schema):
// messages.active reads 1 (its DEFAULT), display_kind NULL, state_meta is
// empty, and the rows are the file's.
func TestShims(t *testing.T) {
	ctx := context.Background()
	v30 := fixturetest.Copy(t, "hermes-v30.db")
	db, err := sql.Open("sqlite", "file:"+v30+"?mode=ro")
	require.NoError(t, err)
	shims, err := asis.Shims(ctx, db)
	require.NoError(t, err)
	require.Empty(t, shims, "a v30 file is read with its own tables")
	require.NoError(t, db.Close())

	v1 := fixturetest.Copy(t, "hermes-v01.db")
	dsn := "file:" + filepath.ToSlash(v1) + "?mode=ro"
	db, err = sql.Open("sqlite", dsn)
	require.NoError(t, err)
	shims, err = asis.Shims(ctx, db)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	require.NotEmpty(t, shims)

	pool, err := asis.OpenDB("sqlite", dsn, shims)
	require.NoError(t, err)
	defer pool.Close()
	pool.SetMaxOpenConns(3)
	var conns []*sql.Conn
	for range 3 {
		c, err := pool.Conn(ctx)
		require.NoError(t, err)
		conns = append(conns, c)
	}
	for _, c := range conns {
		var n, active, meta int
		var kind sql.NullString
		require.NoError(t, c.QueryRowContext(ctx, "SELECT count(*), min(active), max(display_kind) FROM messages").Scan(&n, &active, &kind))
		require.Equal(t, 31, n)
		require.Equal(t, 1, active)
		require.False(t, kind.Valid)
		require.NoError(t, c.QueryRowContext(ctx, "SELECT count(*) FROM state_meta").Scan(&meta))
		require.Zero(t, meta)
		var fromMain int
		require.NoError(t, c.QueryRowContext(ctx, "SELECT count(*) FROM main.messages").Scan(&fromMain))
		require.Equal(t, n, fromMain)
		require.NoError(t, c.Close())
	}
}

// TestOpenDBInitFailure: a connection whose init statement fails is not
// handed out; the error says so.
func TestOpenDBInitFailure(t *testing.T) {
	pool, err := asis.OpenDB("sqlite", ":memory:", []string{"INSERT INTO no_such_table VALUES (1)"})
	require.NoError(t, err)
	defer pool.Close()
	err = pool.PingContext(context.Background())
	require.Error(t, err)
	require.Contains(t, err.Error(), "asis: preparing a connection")
}

package main

import (
	"database/sql"
	"testing"

	_ "github.com/glebarez/go-sqlite" // driver "sqlite" for raw test access
	"github.com/stretchr/testify/require"
)

// openRaw opens a plain database/sql connection to a file, as another
// program would.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

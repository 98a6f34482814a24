package main

import (
	"database/sql"
	"github.com/stretchr/testify/require"
	"testing"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// openRaw opens a plain database/sql connection to a file, as another
// program would.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sqlitex.OpenEnv(path + "?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

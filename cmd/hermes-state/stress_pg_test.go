package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/pgtest"
)

// TestStressPostgresWritesOnlyThere (issue 11, item 2): stress against a
// PostgreSQL schema runs its workers on exactly that store (DSN and
// schema): every append lands in the schema, and no SQLite file is created
// at the default location ($HERMES_HOME/state.db) or anywhere under it.
func TestStressPostgresWritesOnlyThere(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	home := t.TempDir()
	t.Setenv("HERMES_HOME", home)
	out, err := run(t, "--db", dsn, "--schema", schema, "--json", "stress", "--procs", "2", "--appends", "20", "--search-every", "5")
	require.NoError(t, err, out)
	var rep StressReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Empty(t, rep.WorkerFailures)
	require.Equal(t, 40, rep.Acknowledged)
	require.Equal(t, 40, rep.Found)
	n := pgtest.QueryInt(t, dsn, "SELECT count(*) FROM "+schema+".messages")
	require.EqualValues(t, 40, n, "the workers' appends are not in the PostgreSQL schema")
	var files []string
	require.NoError(t, filepath.Walk(home, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	require.Empty(t, files, "stress on PostgreSQL created SQLite files")
}

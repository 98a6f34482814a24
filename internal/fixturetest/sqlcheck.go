package fixturetest

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
)

// Count runs a one-number query (SELECT COUNT(*) ...) on db.
func Count(t testing.TB, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(q, args...).Scan(&n))
	return n
}

// FTSIntegrity runs FTS5 'integrity-check' on every FTS5 table of the
// file and PRAGMA integrity_check on the file.
func FTSIntegrity(t testing.TB, path string, skip map[string]bool) {
	t.Helper()
	db := Raw(t, path)
	if len(skip) == 0 {
		var ok string
		require.NoError(t, db.QueryRow("PRAGMA integrity_check").Scan(&ok))
		require.Equal(t, "ok", ok)
	}
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%USING fts5%'`)
	require.NoError(t, err)
	var names []string
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		if skip[n] {
			continue
		}
		_, err := db.Exec(`INSERT INTO "` + n + `"("` + n + `") VALUES ('integrity-check')`)
		require.NoError(t, err, "FTS integrity-check of %s", n)
	}
}

// FTSBrokenBefore returns the FTS tables of the pristine fixture file that
// already fail FTS5 'integrity-check'.
func FTSBrokenBefore(t testing.TB, f *Fixture) map[string]bool {
	t.Helper()
	db := Raw(t, f.CopyDB(t))
	out := map[string]bool{}
	for _, n := range []string{"messages_fts", "messages_fts_trigram"} {
		var c int
		require.NoError(t, db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = ?`, n).Scan(&c))
		if c == 0 {
			continue
		}
		if _, err := db.Exec(`INSERT INTO "` + n + `"("` + n + `") VALUES ('integrity-check')`); err != nil {
			out[n] = true
		}
	}
	return out
}

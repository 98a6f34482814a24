package main

import (
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestCLIFTSCheckWritesNothing (issue 20 §4): `fts check` is a check: on
// Hermes files as Hermes left them (v21 in WAL, v30 in delete mode) it
// changes neither the file nor its -wal (no adoption, no journal-mode
// switch), reports the trigram indexes SQLite 3.40.1 wrote as consistent,
// and still fails (exit 1) on an index that disagrees with its content.
func TestCLIFTSCheckWritesNothing(t *testing.T) {
	for _, name := range []string{"hermes-v21.db", "hermes-v30.db"} {
		t.Run(name, func(t *testing.T) {
			db := fixturetest.Copy(t, name)
			sum := fixturetest.SHA256(t, db)
			out, stderr, code := runCLI(t, "--db", db, "--json", "fts", "check")
			require.Zero(t, code, "stdout: %s\nstderr: %s", out, stderr)
			var checks []map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &checks))
			require.NotEmpty(t, checks)
			for _, c := range checks {
				require.Equal(t, true, c["ok"], c)
			}
			require.Equal(t, sum, fixturetest.SHA256(t, db), "fts check writes nothing")
			raw := openRaw(t, db)
			var adopted int
			require.NoError(t, raw.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'hermesstate_migrations'").Scan(&adopted))
			require.Zero(t, adopted, "fts check does not adopt the file")
			// Damage: the trigram index disagrees with a row.
			damage(t, raw, name)
			require.NoError(t, raw.Close())
			out, stderr, code = runCLI(t, "--db", db, "fts", "check")
			require.Equal(t, exitFailure, code, "stdout: %s\nstderr: %s", out, stderr)
			require.Contains(t, out, "messages_fts_trigram")
			require.Contains(t, out, "FAILED")
		})
	}
}

func damage(t *testing.T, raw *sql.DB, name string) {
	t.Helper()
	q := `UPDATE messages_fts_trigram_content SET c0 = 'ghost words' WHERE id = (SELECT min(id) FROM messages_fts_trigram_content WHERE instr(c0, char(0)) = 0)`
	if name == "hermes-v30.db" {
		q = `INSERT INTO messages_fts_trigram(rowid, content, tool_name) SELECT id, 'ghost words', NULL FROM messages WHERE role = 'user' ORDER BY id LIMIT 1`
	}
	_, err := raw.Exec(q)
	require.NoError(t, err)
}

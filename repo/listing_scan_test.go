package repo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// fixtureDBs returns the Hermes-made fixture files (testdata/fixtures).
func fixtureDBs(t *testing.T) []string {
	m, _ := filepath.Glob(filepath.Join(fixturetest.Dir(), "*.db"))
	if len(m) == 0 {
		t.Fatalf("no Hermes fixtures in %s", fixturetest.Dir())
	}
	return m
}

// TestSessionScanMatchesGORM: the listing's direct scan (scanRich) gives
// what GORM's Scan gives, on every Hermes fixture file (each schema
// version's columns) and on awkward stored values: NULL in number columns,
// numbers stored as text and text as numbers, JSON columns holding empty
// text, an empty BLOB or non-JSON text, extra and missing columns.
func TestSessionScanMatchesGORM(t *testing.T) {
	const q = `SELECT s.*, 'p' AS _prompt, NULL AS _preview, 1.5 AS _last_active, s.id AS t_id, s.ended_at AS tip_ended_at,
		s.end_reason AS tip_end_reason, s.message_count AS tip_msgs, NULL AS tip_tools, 'T' AS tip_title, 7 AS tip_model,
		NULL AS tip_prompt, '/w' AS tip_cwd, NULL AS tip_git_branch, NULL AS tip_git_repo_root, 'x' AS tip_preview,
		NULL AS tip_last_active, NULL AS _bound, 3 AS _above, 'extra' AS not_a_field FROM sessions s ORDER BY s.rowid`
	check := func(t *testing.T, db *gorm.DB) int {
		var want []richRow
		require.NoError(t, db.Raw(q).Scan(&want).Error)
		got, err := scanRich(db, q)
		require.NoError(t, err)
		if len(want) == 0 {
			require.Empty(t, got)
			return 0
		}
		require.Equal(t, want, got)
		return len(got)
	}
	n := 0
	for _, f := range fixtureDBs(t) {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), filepath.Base(f))
		require.NoError(t, os.WriteFile(p, b, 0o600))
		db, err := gorm.Open(sqlitex.EnvDialector(p), &gorm.Config{Logger: logger.Discard})
		require.NoError(t, err)
		n += check(t, db)
	}
	t.Logf("%d fixture rows compared", n)

	db, err := gorm.Open(sqlitex.EnvDialector(filepath.Join(t.TempDir(), "odd.db")), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.AutoMigrate(&models.Session{}))
	for _, ins := range []string{
		`INSERT INTO sessions (id, source, started_at) VALUES ('a', 'cli', 1760000000)`,
		`INSERT INTO sessions (id, source, started_at, message_count, model_config, origin_json, tool_names, ended_at, estimated_cost_usd)
			VALUES ('b', 'cli', '1760000000.5', NULL, '', X'', 'not json', 1760000001, '0.25')`,
		`INSERT INTO sessions (id, source, started_at, message_count, title, model_config, tool_names, last_read_at)
			VALUES ('c', 7, 1760000000, '12', 42, '{"_delegate_from": "x"}', '["a", "b"]', 1760000002.25)`,
		`INSERT INTO sessions (id, source, started_at, archived, pinned, hidden, input_tokens, model_config)
			VALUES (X'64', 'cli', 1760000000, 1, '1', 0, 3.0, X'7b7d')`,
	} {
		require.NoError(t, db.Exec(ins).Error, ins)
	}
	require.Equal(t, 4, check(t, db))
}

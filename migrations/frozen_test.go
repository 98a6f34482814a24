package migrations_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestFrozenActivityMatchesRepo: step 0102's frozen statements and
// repo.SessionActivityStatements (what repair rebuilds with, and what the
// listing expects) make the same objects. When repo's version changes, this
// fails: add a step that brings migrated files to the new shape.
func TestFrozenActivityMatchesRepo(t *testing.T) {
	st := hermesstatetest.Fresh(t)
	db := hermesstatetest.SQL(t, st)
	objects := func() []string {
		rows, err := db.Query(`SELECT type || ' ' || name || ': ' || sql FROM sqlite_master
			WHERE name = 'hermesstate_session_activity' OR name = 'idx_hermesstate_session_activity'
			OR name LIKE 'hermesstate_activity_%' ORDER BY name`)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s sql.NullString
			require.NoError(t, rows.Scan(&s))
			out = append(out, s.String)
		}
		require.NoError(t, rows.Err())
		return out
	}
	migrated := objects()
	require.Len(t, migrated, 8, "the table, its index and six triggers: %v", migrated)
	for _, n := range repo.SessionActivityTriggers() {
		_, err := db.Exec("DROP TRIGGER " + n)
		require.NoError(t, err)
	}
	_, err := db.Exec("DROP TABLE hermesstate_session_activity")
	require.NoError(t, err)
	for _, q := range repo.SessionActivityStatements() {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	require.Equal(t, migrated, objects())
}

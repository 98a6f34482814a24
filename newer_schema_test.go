package hermesstate_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestNewerSchemaFileIsNeverRewritten (issue 11, item 1): a state.db from a
// newer Hermes (schema_version 31, session_model_usage keyed by one more
// column, a table of its own) opened with the default, writable config is
// opened read-only: the file's bytes never change, reads the v30 shape can
// serve keep working, and every write fails with ErrUnsupported naming both
// versions. doctor says so instead of recommending migrate; repair refuses.
func TestNewerSchemaFileIsNeverRewritten(t *testing.T) {
	ctx := context.Background()
	path := fixturetest.Copy(t, "hermes-v30.db")
	usage := fixturetest.MakeNewer(t, path, 31)
	before := fixturetest.SHA256(t, path)
	dir := filepath.Dir(path)
	listing := fixturetest.Listing(t, dir)

	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	v, err := st.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, 31, v)
	rows, err := st.Listing().Rich(ctx, repo.RichOptions{Limit: 50})
	require.NoError(t, err)
	require.NotEmpty(t, rows)
	hits, err := st.Search().Messages(ctx, "kubernetes", repo.SearchOptions{})
	require.NoError(t, err)
	_ = hits
	bm, err := st.Usage().ByModel(ctx, repo.StatsFilter{})
	require.NoError(t, err)
	require.NotEmpty(t, bm)

	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	fixturetest.RequireKind(t, err, hs.ErrUnsupported)
	require.Contains(t, err.Error(), "31")
	require.Contains(t, err.Error(), "30")
	_, err = st.Messages().Append(ctx, rows[0].ID, repo.MessageInput{Role: "user", Content: models.Text("x")})
	fixturetest.RequireKind(t, err, hs.ErrUnsupported)
	err = st.Sessions().UpdateTokenCounts(ctx, rows[0].ID, repo.TokenUpdate{InputTokens: 5, Model: "m"})
	fixturetest.RequireKind(t, err, hs.ErrUnsupported)
	_, err = st.Cleanup().Vacuum(ctx, true)
	fixturetest.RequireKind(t, err, hs.ErrUnsupported)
	require.NoError(t, st.Close())

	require.Equal(t, before, fixturetest.SHA256(t, path), "the newer file was written to")
	db := fixturetest.Raw(t, path)
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM session_model_usage").Scan(&n))
	require.Equal(t, usage, n)
	require.NoError(t, db.QueryRow("SELECT count(*) FROM pragma_table_info('session_model_usage') WHERE name = 'region'").Scan(&n))
	require.Equal(t, 1, n)
	require.NoError(t, db.Close())

	rep, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
	require.NoError(t, err)
	newer := false
	for _, f := range rep.Findings {
		require.NotEqual(t, "hermes-state migrate", f.Fix, "doctor recommends migrate on a newer file: %+v", f)
		require.NotEqual(t, "hermes-state repair", f.Fix, "doctor recommends repair on a newer file: %+v", f)
		if f.Check == "migrations" && strings.Contains(f.Message, "31") && strings.Contains(f.Message, "newer") {
			newer = true
		}
	}
	require.True(t, newer, "doctor does not say the file is newer: %+v", rep.Findings)
	require.Empty(t, rep.PendingMigrations)

	_, err = hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
	fixturetest.RequireKind(t, err, hs.ErrUnsupported)
	require.Equal(t, before, fixturetest.SHA256(t, path), "repair wrote to the newer file")
	require.Equal(t, listing, fixturetest.Listing(t, dir), "files were created or changed beside the newer file")
}

// TestAdoptionNeverNarrowsAWiderKey (issue 11, item 1): in any version, the
// baseline's usage-key rebuild never runs when the file's key is a superset
// of v30's: every row and the extra key column stay.
func TestAdoptionNeverNarrowsAWiderKey(t *testing.T) {
	ctx := context.Background()
	path := fixturetest.Copy(t, "hermes-v30.db") // schema 30, not adopted yet
	usage := fixturetest.WidenUsageKey(t, path)
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	db := fixturetest.Raw(t, path)
	var n int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM session_model_usage").Scan(&n))
	require.Equal(t, usage, n, "usage rows lost by a key rebuild")
	require.NoError(t, db.QueryRow("SELECT count(*) FROM pragma_table_info('session_model_usage') WHERE name = 'region' AND pk > 0").Scan(&n))
	require.Equal(t, 1, n, "the wider key lost its column")
}

// TestNewerSchemaPostgres (issue 11, item 1): a PostgreSQL schema whose
// schema_version is above 30 is opened read-only: no migration runs, reads
// work, writes fail with ErrUnsupported naming both versions.
func TestNewerSchemaPostgres(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgtest.Schema(t)
	st, err := hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	pgtest.Exec(t, dsn, "UPDATE "+schema+".schema_version SET version = 31",
		"DELETE FROM "+schema+".hermesstate_migrations WHERE id = '0100_hermesstate_messages_activity_index'",
		"DROP INDEX "+schema+".idx_hermesstate_messages_activity")

	st, err = hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	defer st.Close()
	require.True(t, st.ReadOnly())
	require.Equal(t, 31, st.NewerSchema())
	got, err := st.Sessions().Get(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.ID, got.ID)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	fixturetest.RequireKind(t, err, hs.ErrUnsupported)
	require.Contains(t, err.Error(), "31")
	n := pgtest.QueryInt(t, dsn, "SELECT count(*) FROM pg_indexes WHERE schemaname = '"+schema+"' AND indexname = 'idx_hermesstate_messages_activity'")
	require.Zero(t, n, "a migration ran on a newer schema")
}

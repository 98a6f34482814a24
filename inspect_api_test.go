package hermesstate_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// TestInspectFixtures: has_archived_messages and distinct_session_cwds
// return what Hermes returned on every fixture whose Hermes had them.
func TestInspectFixtures(t *testing.T) {
	ctx := context.Background()
	for _, f := range loadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			st := openFixture(t, f)
			checked := 0
			if !f.absent("has_archived_messages") {
				for _, e := range f.extras("has_archived_messages") {
					got, err := st.Inspect().HasArchivedMessages(ctx, e.Args[0].(string))
					require.NoError(t, err)
					jsonEq(t, e.Result, got, "has_archived_messages(%v)", e.Args[0])
					checked++
				}
			}
			if !f.absent("distinct_session_cwds") {
				for _, e := range f.extras("distinct_session_cwds") {
					got, err := st.Inspect().DistinctCwds(ctx, false)
					require.NoError(t, err)
					jsonEq(t, e.Result, got, "distinct_session_cwds")
					checked++
				}
			}
			if f.SchemaVersion >= 18 {
				require.NotZero(t, checked, "Hermes had both methods from v18 on")
			}
		})
	}
}

func TestInspectFresh(t *testing.T) {
	ctx := context.Background()
	st, path := openTemp(t)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		_, err := st.Sessions().Create(ctx, repo.NewSession{ID: id, Source: "cli"})
		require.NoError(t, err)
	}
	hi := "hi"
	_, err := st.Messages().Append(ctx, "a", repo.NewMessage{Role: "user", Content: &hi})
	require.NoError(t, err)
	db := rawDB(t, path)
	for _, q := range []string{
		"UPDATE sessions SET cwd = '/w/x', started_at = 1767000000, ended_at = 1767000100 WHERE id = 'a'",
		"UPDATE sessions SET cwd = '/w/x', started_at = 1767000200, ended_at = NULL WHERE id = 'b'",
		"UPDATE sessions SET cwd = '/w/y', started_at = 1767000300, archived = 1 WHERE id = 'c'",
		"UPDATE sessions SET cwd = '   ' WHERE id = 'd'",
	} {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	got, err := st.Inspect().DistinctCwds(ctx, false)
	require.NoError(t, err)
	require.Equal(t, []repo.CwdUsage{{Cwd: "/w/x", Sessions: 2, LastActive: 1767000200}}, got)
	got, err = st.Inspect().DistinctCwds(ctx, true)
	require.NoError(t, err)
	require.Equal(t, []repo.CwdUsage{{Cwd: "/w/x", Sessions: 2, LastActive: 1767000200}, {Cwd: "/w/y", Sessions: 1, LastActive: 1767000300}}, got)

	has, err := st.Inspect().HasArchivedMessages(ctx, "a")
	require.NoError(t, err)
	require.False(t, has)
	_, err = db.Exec("UPDATE messages SET active = 0 WHERE session_id = 'a'")
	require.NoError(t, err)
	has, err = st.Inspect().HasArchivedMessages(ctx, "a")
	require.NoError(t, err)
	require.True(t, has)
	has, err = st.Inspect().HasArchivedMessages(ctx, "missing")
	require.NoError(t, err)
	require.False(t, has)
	_, err = st.Inspect().HasArchivedMessages(ctx, "")
	require.ErrorIs(t, err, hs.ErrInvalid)
}

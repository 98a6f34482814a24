package repo_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestInspectFixtures: has_archived_messages and distinct_session_cwds
// return what Hermes returned on every fixture whose Hermes had them.
func TestInspectFixtures(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			checked := 0
			if !f.Absent("has_archived_messages") {
				for _, e := range f.ExtrasOf("has_archived_messages") {
					got, err := st.Inspect().HasArchivedMessages(ctx, e.Args[0].(string))
					require.NoError(t, err)
					fixturetest.JSONEq(t, e.Result, got, "has_archived_messages(%v)", e.Args[0])
					checked++
				}
			}
			if !f.Absent("distinct_session_cwds") {
				for _, e := range f.ExtrasOf("distinct_session_cwds") {
					got, err := st.Inspect().DistinctCwds(ctx, false)
					require.NoError(t, err)
					fixturetest.JSONEq(t, e.Result, got, "distinct_session_cwds")
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
	st, path := hermesstatetest.FreshPath(t)
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
		require.NoError(t, err)
	}
	hi := "hi"
	_, err := st.Messages().Append(ctx, "a", repo.MessageInput{Role: "user", Content: &hi})
	require.NoError(t, err)
	db := fixturetest.Raw(t, path)
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

// TestRecentUserMessagesFixtures: Hermes' list_recent_user_messages on
// every fixture whose Hermes had it.
func TestRecentUserMessagesFixtures(t *testing.T) {
	ctx := context.Background()
	checked := 0
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		if f.Absent("list_recent_user_messages") {
			continue // that Hermes had no such method (its result is null)
		}
		checked++
		t.Run(f.Name, func(t *testing.T) {
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			es := f.ExtrasOf("list_recent_user_messages")
			require.NotEmpty(t, es)
			for _, e := range es {
				got, err := st.Inspect().RecentUserMessages(ctx, e.Args[0].(string), 0, false)
				require.NoError(t, err)
				fixturetest.JSONEq(t, e.Result, got, "list_recent_user_messages(%v)", e.Args[0])
			}
		})
	}
	require.GreaterOrEqual(t, checked, 7, "fixtures v14 and later record list_recent_user_messages")
}

func TestRecentUserMessagesFresh(t *testing.T) {
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
	require.NoError(t, err)
	long := strings.Repeat("é", 85)
	for _, m := range []repo.MessageInput{
		{Role: "user", Content: &long},
		{Role: "assistant", Content: &long},
		{Role: "user", Parts: []any{map[string]any{"type": "image_url"}, map[string]any{"type": "text", "text": " a \n\t b "}}},
		{Role: "user", Parts: []any{map[string]any{"type": "image_url"}}},
		{Role: "user", Content: &long, DisplayKind: "model_switch"},
		{Role: "user", Content: &long},
	} {
		_, err := st.Messages().Append(ctx, "s", m)
		require.NoError(t, err)
	}
	_, err = fixturetest.Raw(t, path).Exec("UPDATE messages SET active = 0 WHERE id = 6")
	require.NoError(t, err)
	got, err := st.Inspect().RecentUserMessages(ctx, "s", 0, false)
	require.NoError(t, err)
	var ids []int64
	var previews []string
	for _, g := range got {
		ids = append(ids, g.ID)
		previews = append(previews, g.Preview)
	}
	require.Equal(t, []int64{4, 3, 1}, ids)
	require.Equal(t, []string{"[multimodal content]", "a b", strings.Repeat("é", 77) + "..."}, previews)
	got, err = st.Inspect().RecentUserMessages(ctx, "s", 2, true)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.EqualValues(t, 6, got[0].ID)
	_, err = st.Inspect().RecentUserMessages(ctx, "s", -1, false)
	require.ErrorIs(t, err, hs.ErrInvalid)
}

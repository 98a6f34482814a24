package repo_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestContractBulkDeletesAndProbes(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss, cl := st.Sessions(), st.Cleanup()
		mk := func(id, parent string, mc models.JSON) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli", ParentSessionID: parent, ModelConfig: mc, SystemPrompt: "p-" + id})
			require.NoError(t, err)
		}
		mk("a", "", nil)
		mk("a_sub2", "a", models.MustJSON(map[string]any{"_delegate_from": "a"}))
		mk("a_sub1", "a", models.MustJSON(map[string]any{"_delegate_from": "a"}))
		mk("a_branch", "a", models.MustJSON(map[string]any{"_branched_from": "a"}))
		mk("b", "", nil)
		hermesstatetest.AppendAll(t, st, "b", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("x"), PlatformMessageID: "tg-1"})

		targets, err := cl.DeleteTargets(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, []string{"a", "a_sub1", "a_sub2"}, targets)
		targets, err = cl.DeleteTargets(ctx, "missing")
		require.NoError(t, err)
		require.Empty(t, targets)

		n, err := cl.DeleteMany(ctx, []string{"a", "missing", "a", ""})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		for _, id := range []string{"a", "a_sub1", "a_sub2"} {
			_, err := ss.Get(ctx, id)
			fixturetest.RequireKind(t, err, hs.ErrNotFound)
		}
		br, err := ss.Get(ctx, "a_branch")
		require.NoError(t, err)
		require.Nil(t, br.ParentSessionID, "a branch is orphaned, not deleted")
		var prompts int64
		hermesstatetest.QueryRow(t, st, `SELECT COUNT(*) FROM system_prompts`, nil, &prompts)
		require.EqualValues(t, 2, prompts, "the deleted sessions' prompts are collected")

		// Conditional and bulk deletes of empty sessions.
		ok, err := cl.DeleteIfEmpty(ctx, "b")
		require.NoError(t, err)
		require.False(t, ok, "b has a message")
		_, err = st.Titles().Set(ctx, "a_branch", "kept by its title")
		require.NoError(t, err)
		ok, err = cl.DeleteIfEmpty(ctx, "a_branch")
		require.NoError(t, err)
		require.False(t, ok)
		mk("e1", "", nil)
		ok, err = cl.DeleteIfEmpty(ctx, "e1")
		require.NoError(t, err)
		require.True(t, ok)
		mk("e2", "", nil)
		mk("e3", "", nil)
		mk("e3_kid", "e3", nil)
		_, err = ss.End(ctx, "e2", "user_exit")
		require.NoError(t, err)
		_, err = ss.End(ctx, "e3", "user_exit")
		require.NoError(t, err)
		empty, err := st.Listing().CountEmpty(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 2, empty)
		n, err = cl.DeleteEmpty(ctx)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		kid, err := ss.Get(ctx, "e3_kid")
		require.NoError(t, err)
		require.Nil(t, kid.ParentSessionID)

		// Probes.
		ids, err := st.Rewind().ActiveIDs(ctx, "b")
		require.NoError(t, err)
		role, err := st.Transcript().MessageRole(ctx, "b", ids[0])
		require.NoError(t, err)
		require.Equal(t, "user", role)
		role, err = st.Transcript().MessageRole(ctx, "a_branch", ids[0])
		require.NoError(t, err)
		require.Equal(t, "", role)
		has, err := st.Transcript().HasPlatformMessageID(ctx, "b", "tg-1")
		require.NoError(t, err)
		require.True(t, has)
		has, err = st.Transcript().HasPlatformMessageID(ctx, "b", "tg-2")
		require.NoError(t, err)
		require.False(t, has)

		_, err = ss.Create(ctx, repo.SessionInput{ID: "g", Source: "telegram", SessionKey: "peer"})
		require.NoError(t, err)
		_, crossed, err := st.SessionState().ConversationBoundary(ctx, "telegram", "peer")
		require.NoError(t, err)
		require.False(t, crossed)
		_, err = ss.End(ctx, "g", "session_reset")
		require.NoError(t, err)
		g, crossed, err := st.SessionState().ConversationBoundary(ctx, "telegram", "peer")
		require.NoError(t, err)
		require.True(t, crossed)
		require.EqualValues(t, 1, g)
		_, crossed, err = st.SessionState().ConversationBoundary(ctx, "discord", "peer")
		require.NoError(t, err)
		require.False(t, crossed, "the peer is (source, session_key), never the key alone")
	})
}

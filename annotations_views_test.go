package hermesstate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestAnnotationsReactions(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		a := st.Annotations()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		id, err := st.Messages().Append(ctx, "s", repo.MessageInput{Role: "assistant", Content: models.Text("answer"),
			DisplayMetadata: models.MustJSON(map[string]any{"kind": "x"})})
		require.NoError(t, err)
		rs, err := a.SetReaction(ctx, "s", id, repo.ReactionOptions{Emoji: "👍", Author: "user"})
		require.NoError(t, err)
		require.Len(t, rs, 1)
		require.Equal(t, "👍", rs[0].Emoji)
		_, err = a.SetReaction(ctx, "s", id, repo.ReactionOptions{Emoji: "🎉", Author: "bot"})
		require.NoError(t, err)
		rs, err = a.SetReaction(ctx, "s", id, repo.ReactionOptions{Emoji: "❤️", Author: "user"})
		require.NoError(t, err)
		require.Equal(t, []string{"bot", "user"}, []string{rs[0].Author, rs[1].Author}, "a different emoji replaces the author's")
		var meta string
		hermesstatetest.QueryRow(t, st, "SELECT display_metadata FROM messages WHERE id = $1", []any{id}, &meta)
		require.True(t, strings.HasPrefix(meta, `{"kind": "x", "reactions": [{"emoji": "\ud83c\udf89", "author": "bot", "at": `), meta)

		un, err := a.TakeUnseenReactions(ctx, "s", "user")
		require.NoError(t, err)
		require.Equal(t, []repo.UnseenReaction{{RowID: id, Role: "assistant", Emoji: "❤️", Text: "answer"}}, un)
		un, err = a.TakeUnseenReactions(ctx, "s", "user")
		require.NoError(t, err)
		require.Empty(t, un, "announced once")
		rs, err = a.Reactions(ctx, "s", id)
		require.NoError(t, err)
		require.True(t, rs[1].Seen)
		// The same emoji again clears it; no author is Hermes' "user"; Now
		// stamps "at".
		at := time.Unix(1767000000, 500000000)
		rs, err = a.SetReaction(ctx, "s", id, repo.ReactionOptions{Emoji: "❤️", Now: at})
		require.NoError(t, err)
		require.Len(t, rs, 1)
		rs, err = a.SetReaction(ctx, "s", id, repo.ReactionOptions{Emoji: "🎉", Now: at})
		require.NoError(t, err)
		require.Equal(t, "user", rs[1].Author)
		require.InDelta(t, 1767000000.5, float64(rs[1].At), 1e-6)
		rs, err = a.SetReaction(ctx, "s", id, repo.ReactionOptions{Emoji: "🎉"})
		require.NoError(t, err)
		require.Len(t, rs, 1)
		rs, err = a.SetReaction(ctx, "s", id, repo.ReactionOptions{Emoji: "", Author: "bot"})
		require.NoError(t, err)
		require.Empty(t, rs)
		hermesstatetest.QueryRow(t, st, "SELECT display_metadata FROM messages WHERE id = $1", []any{id}, &meta)
		require.Equal(t, `{"kind": "x"}`, meta)
		_, err = a.SetReaction(ctx, "other", id, repo.ReactionOptions{Emoji: "👍", Author: "user"})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		none, err := a.Reactions(ctx, "other", id)
		require.NoError(t, err)
		require.Empty(t, none)
	})
}

func TestAnnotationsToolRetries(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		a := st.Annotations()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "root", Source: "cli"})
		require.NoError(t, err)
		id, err := st.Messages().Append(ctx, "root", repo.MessageInput{Role: "tool", Content: models.Text("failed"), ToolCallID: "call_1", ToolName: "start_chat"})
		require.NoError(t, err)
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "tip", Source: "cli", ParentSessionID: "root"})
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, "root", "compression")
		require.NoError(t, err)
		tr, ok, err := a.ToolRetry(ctx, "tip", "call_1")
		require.NoError(t, err)
		require.True(t, ok, "found through the resume lineage")
		require.Equal(t, id, tr.RowID)
		require.Nil(t, tr.Result)
		require.NoError(t, a.SetToolRetry(ctx, id, map[string]any{"ok": true, "session_id": "x"}))
		tr, _, err = a.ToolRetry(ctx, "tip", "call_1")
		require.NoError(t, err)
		require.Equal(t, map[string]any{"ok": true, "session_id": "x"}, tr.Result)
		got, err := a.TakeUnannouncedToolRetries(ctx, "tip")
		require.NoError(t, err)
		require.Equal(t, []repo.AnnouncedRetry{{Result: map[string]any{"ok": true, "session_id": "x"}, ToolName: "start_chat"}}, got)
		got, err = a.TakeUnannouncedToolRetries(ctx, "tip")
		require.NoError(t, err)
		require.Empty(t, got)
		var meta string
		hermesstatetest.QueryRow(t, st, "SELECT display_metadata FROM messages WHERE id = $1", []any{id}, &meta)
		require.Equal(t, `{"retried": {"result": {"ok": true, "session_id": "x"}, "announced": true}}`, meta)
		_, ok, err = a.ToolRetry(ctx, "tip", "nope")
		require.NoError(t, err)
		require.False(t, ok)
		fixturetest.RequireKind(t, a.SetToolRetry(ctx, 999999, nil), hs.ErrNotFound)
	})
}

func TestViews(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		v := st.Views()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		var ids []int64
		for i := 0; i < 20; i++ {
			role := []string{"user", "assistant", "tool"}[i%3]
			id, err := st.Messages().Append(ctx, "s", repo.MessageInput{Role: role, Content: models.Text("m" + itoa(i)), Timestamp: models.Epoch(1_700_000_000 + i)})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		av, err := v.Anchored(ctx, "s", ids[10], repo.AnchoredOptions{Window: 2, Bookend: 2})
		require.NoError(t, err)
		require.Equal(t, 2, av.MessagesBefore)
		var win []string
		for _, m := range av.Window {
			win = append(win, *m.Content)
		}
		require.Equal(t, []string{"m9", "m10", "m12"}, win, "roles kept: user, assistant, and the anchor (tool rows 8 and 11 dropped)")
		require.Equal(t, "m0", *av.BookendStart[0].Content)
		require.Equal(t, "m1", *av.BookendStart[1].Content)
		require.Equal(t, "m18", *av.BookendEnd[0].Content)
		require.Equal(t, "m19", *av.BookendEnd[1].Content)
		none, err := v.Anchored(ctx, "other", ids[10], repo.AnchoredOptions{})
		require.NoError(t, err)
		require.Empty(t, none.Window)

		// PR URLs.
		_, err = st.Messages().Append(ctx, "s", repo.MessageInput{Role: "tool", Content: models.Text("opened https://github.com/o/r/pull/7")})
		require.NoError(t, err)
		prs, err := v.PRURLMessages(ctx, []string{"s", "", "x"})
		require.NoError(t, err)
		require.Equal(t, []repo.PRURLMessage{{SessionID: "s", Content: "opened https://github.com/o/r/pull/7"}}, prs)

		// Skill scaffolded.
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "sk", Source: "cli"})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "sk", repo.MessageInput{Role: "user", Content: models.Text(`[IMPORTANT: The user has invoked the "work" skill.]`)})
		require.NoError(t, err)
		_, err = st.Titles().Set(ctx, "sk", "Work skill body")
		require.NoError(t, err)
		sc, err := v.SkillScaffolded(ctx, 0)
		require.NoError(t, err)
		require.Len(t, sc, 1)
		require.Equal(t, "sk", sc[0].ID)

		// Ancestor prefix and project clocks over a compression lineage.
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "tip", Source: "cli", ParentSessionID: "s", Cwd: "/tip"})
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, "s", "compression")
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "tip", repo.MessageInput{Role: "user", Content: models.Text("newest"), Timestamp: 1_700_000_500})
		require.NoError(t, err)
		prefix, err := v.AncestorDisplayPrefix(ctx, "tip")
		require.NoError(t, err)
		require.Len(t, prefix, 21, "every row of the ancestor s")
		require.Zero(t, prefix[0].RowID)
		alone, err := v.AncestorDisplayPrefix(ctx, "sk")
		require.NoError(t, err)
		require.Empty(t, alone)
		clocks, err := v.ProjectClocks(ctx, nil)
		require.NoError(t, err)
		byID := map[string]repo.ProjectClock{}
		for _, c := range clocks {
			byID[c.ID] = c
		}
		require.Equal(t, []string{"s", "tip"}, byID["tip"].LineageIDs)
		require.Equal(t, "/tip", *byID["tip"].Cwd)
		require.Equal(t, 1_700_000_500.0, byID["tip"].LastMessageAt)
		clocks, err = v.ProjectClocks(ctx, []string{"cli"})
		require.NoError(t, err)
		require.Empty(t, clocks)
	})
}

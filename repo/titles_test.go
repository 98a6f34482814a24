package repo_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

func TestTitlesFixtures(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			var tt struct {
				Stored  []string `json:"stored"`
				Resolve []struct {
					Title  string  `json:"title"`
					Result *string `json:"result"`
				} `json:"resolve_session_by_title"`
				ByTitle []struct {
					Title  string  `json:"title"`
					Result *string `json:"result"`
				} `json:"get_session_by_title_id"`
				Next []struct {
					Base   string  `json:"base"`
					Result *string `json:"result"`
				} `json:"get_next_title_in_lineage"`
				Sanitize []struct {
					Input  string          `json:"input"`
					Result json.RawMessage `json:"result"`
				} `json:"sanitize_title"`
			}
			require.NoError(t, json.Unmarshal(f.Titles, &tt))
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			titles := st.Titles()
			stored, err := titles.Stored(ctx)
			require.NoError(t, err)
			require.Equal(t, tt.Stored, stored)
			if !f.Absent("resolve_session_by_title") {
				for _, c := range tt.Resolve {
					id, err := titles.Resolve(ctx, c.Title)
					if c.Result == nil {
						require.ErrorIs(t, err, hs.ErrNotFound, c.Title)
						continue
					}
					require.NoError(t, err, c.Title)
					require.Equal(t, *c.Result, id, c.Title)
				}
			}
			if !f.Absent("get_session_by_title") {
				for _, c := range tt.ByTitle {
					s, err := titles.ByTitle(ctx, c.Title)
					if c.Result == nil {
						require.ErrorIs(t, err, hs.ErrNotFound, c.Title)
						continue
					}
					require.NoError(t, err, c.Title)
					require.Equal(t, *c.Result, s.ID, c.Title)
					// The row is get_session's dict.
					var want map[string]any
					require.NoError(t, json.Unmarshal(f.Sessions[s.ID], &want))
					fixturetest.SubsetEq(t, want, s, c.Title)
				}
			}
			if !f.Absent("get_next_title_in_lineage") {
				for _, c := range tt.Next {
					got, err := titles.NextInLineage(ctx, c.Base)
					require.NoError(t, err)
					require.NotNil(t, c.Result)
					require.Equal(t, *c.Result, got, c.Base)
				}
			}
			for _, c := range tt.Sanitize {
				if string(c.Result) == "null" && f.SchemaVersion < 4 {
					continue // no sanitizer at this version
				}
				got, err := repo.SanitizeTitle(c.Input)
				var want any
				require.NoError(t, json.Unmarshal(c.Result, &want))
				switch w := want.(type) {
				case nil:
					require.NoError(t, err)
					require.Equal(t, "", got, "%q", c.Input)
				case string:
					require.NoError(t, err)
					require.Equal(t, w, got, "%q", c.Input)
				case map[string]any:
					require.ErrorIs(t, err, hs.ErrInvalid, "%q", c.Input)
					require.Contains(t, w["error"], "Title too long")
				}
			}
			if !f.Absent("get_session_title") {
				for _, e := range f.ExtrasOf("get_session_title") {
					got, err := titles.Get(ctx, e.Args[0].(string))
					require.NoError(t, err)
					var want *string
					require.NoError(t, json.Unmarshal(e.Result, &want))
					require.Equal(t, fixturetest.Deref(want), got)
				}
			}
		})
	}
}

func TestTitlesFresh(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		ss, tl := st.Sessions(), st.Titles()
		mk := func(id string) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
			require.NoError(t, err)
		}
		mk("a")
		mk("b")

		ok, err := tl.Set(ctx, "a", "  My \u200btitle\t ")
		require.NoError(t, err)
		require.True(t, ok)
		got, err := tl.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, "My title", got)
		s, err := ss.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, "user", fixturetest.Deref(s.TitleSource))

		// Collision: ErrConflict carrying the holder's id.
		_, err = tl.Set(ctx, "b", "My title")
		require.ErrorIs(t, err, hs.ErrConflict)
		var me *errs.Error
		require.True(t, errors.As(err, &me))
		require.Equal(t, "a", me.ID)

		// Too long.
		_, err = tl.Set(ctx, "b", strings.Repeat("x", 101))
		require.ErrorIs(t, err, hs.ErrInvalid)
		ok, err = tl.Set(ctx, "b", strings.Repeat("é", 100))
		require.NoError(t, err)
		require.True(t, ok)

		// Missing session.
		_, err = tl.Set(ctx, "nope", "x")
		require.ErrorIs(t, err, hs.ErrNotFound)

		// Provenance: derived < llm < user.
		mk("c")
		ok, err = tl.SetAuto(ctx, "c", "derived one", repo.TitleDerived)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tl.SetAuto(ctx, "c", "derived two", repo.TitleDerived)
		require.NoError(t, err)
		require.False(t, ok, "equal rank does not replace")
		ok, err = tl.SetAuto(ctx, "c", "llm one", repo.TitleLLM)
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tl.SetAuto(ctx, "a", "llm two", repo.TitleLLM)
		require.NoError(t, err)
		require.False(t, ok, "an automatic title never replaces a user title")
		_, err = tl.SetAuto(ctx, "c", "x", "bogus")
		require.ErrorIs(t, err, hs.ErrInvalid)

		// Clearing.
		ok, err = tl.Set(ctx, "c", " \u200b ")
		require.NoError(t, err)
		require.True(t, ok)
		s, err = ss.Get(ctx, "c")
		require.NoError(t, err)
		require.Nil(t, s.Title)
		require.Nil(t, s.TitleSource)

		// Compression ancestor: the title moves to the continuation.
		mk("root")
		_, err = tl.Set(ctx, "root", "Long chat")
		require.NoError(t, err)
		_, err = ss.End(ctx, "root", "compression")
		require.NoError(t, err)
		_, err = ss.Create(ctx, repo.SessionInput{ID: "tip", Source: "cli", ParentSessionID: "root"})
		require.NoError(t, err)
		ok, err = tl.Set(ctx, "tip", "Long chat")
		require.NoError(t, err)
		require.True(t, ok)
		rt, err := tl.Get(ctx, "root")
		require.NoError(t, err)
		require.Equal(t, "", rt)

		// Lineage numbering and resolution; LIKE wildcards are literal.
		_, err = tl.Set(ctx, "b", "rate_limit fix")
		require.NoError(t, err)
		next, err := tl.NextInLineage(ctx, "rate_limit fix")
		require.NoError(t, err)
		require.Equal(t, "rate_limit fix #2", next)
		next, err = tl.NextInLineage(ctx, "rateXlimit fix")
		require.NoError(t, err)
		require.Equal(t, "rateXlimit fix", next)
		mk("b2")
		_, err = tl.Set(ctx, "b2", "rate_limit fix #7")
		require.NoError(t, err)
		next, err = tl.NextInLineage(ctx, "rate_limit fix #2")
		require.NoError(t, err)
		require.Equal(t, "rate_limit fix #8", next)
		id, err := tl.Resolve(ctx, "rate_limit fix")
		require.NoError(t, err)
		require.Equal(t, "b2", id)
		_, err = tl.Resolve(ctx, "rate%")
		require.ErrorIs(t, err, hs.ErrNotFound)
	})
}

func TestBotChatTitle(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		ss, tl := st.Sessions(), st.Titles()
		for _, id := range []string{"bot", "new", "dm"} {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
			require.NoError(t, err)
		}
		_, err := tl.Set(ctx, "bot", repo.BotChatTitle)
		require.NoError(t, err)
		require.NoError(t, setFlags(st, "bot", 0, 1))
		// The hidden canonical Bot Chat cannot be renamed.
		_, err = tl.Set(ctx, "bot", "Other")
		require.ErrorIs(t, err, hs.ErrConflict)
		ok, err := tl.SetAuto(ctx, "bot", "Other", repo.TitleLLM)
		require.NoError(t, err)
		require.False(t, ok)
		// A numbered sibling does not win resolution of the exact Bot Chat.
		_, err = tl.Set(ctx, "dm", repo.BotChatTitle+" #2")
		require.NoError(t, err)
		id, err := tl.Resolve(ctx, repo.BotChatTitle)
		require.NoError(t, err)
		require.Equal(t, "bot", id)
		// Live canonical chat: its title is taken.
		_, err = tl.Set(ctx, "new", repo.BotChatTitle)
		require.ErrorIs(t, err, hs.ErrConflict)
		// Archived + hidden: retired, the title moves.
		require.NoError(t, setFlags(st, "bot", 1, 1))
		ok, err = tl.Set(ctx, "new", repo.BotChatTitle)
		require.NoError(t, err)
		require.True(t, ok)
		old, err := tl.Get(ctx, "bot")
		require.NoError(t, err)
		require.Equal(t, "", old)
	})
}

func setFlags(st *hs.Store, id string, archived, hidden int) error {
	ctx := context.Background()
	if _, err := st.Lineage().SetArchived(ctx, id, archived == 1); err != nil {
		return err
	}
	_, err := st.Lineage().SetHidden(ctx, id, hidden == 1)
	return err
}

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

// TestCompactionFixtures: get_messages_as_conversation(include_ancestors=
// True) and resolve_resume_session_id against what Hermes returned.
func TestCompactionFixtures(t *testing.T) {
	checked := 0
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			ctx := fixturetest.Ctx(t)
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			for _, e := range f.ExtrasOf("get_messages_as_conversation") {
				if string(e.Result) == "null" {
					continue
				}
				require.Equal(t, true, e.Kwargs["include_ancestors"])
				got, err := st.Messages().Conversation(ctx, e.Args[0].(string),
					repo.ConversationOptions{IncludeAncestors: true, KeepMemoryContext: f.SchemaVersion < 10})
				require.NoError(t, err)
				want := fixturetest.ToAny(e.Result).([]any)
				g := fixturetest.ToAny(got).([]any)
				for i := range g {
					if i < len(want) {
						fixturetest.TrimToVersion(g[i].(map[string]any), want[i].(map[string]any))
					}
				}
				if d := fixturetest.JSONDiff("conversation", want, g, false); d != "" {
					t.Errorf("get_messages_as_conversation(%v, include_ancestors=True) differs:\n%s", e.Args, d)
				}
				checked++
			}
			for _, e := range f.ExtrasOf("resolve_resume_session_id") {
				if string(e.Result) == "null" || f.SchemaVersion < 16 {
					continue // before v16 Hermes did not follow the compression tip
				}
				got, err := st.Compaction().ResolveResumeID(ctx, e.Args[0].(string))
				require.NoError(t, err)
				fixturetest.JSONEq(t, e.Result, got, "resolve_resume_session_id%v", e.Args)
			}
		})
	}
	require.GreaterOrEqual(t, checked, 10, "include_ancestors replay is recorded from v09 on")
}

func TestContractArchiveAndCompact(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		cp := st.Compaction()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli",
			ModelConfig: models.MustJSON(map[string]any{"_branched_from": "x", "keep": 1, "drop": true})})
		require.NoError(t, err)
		w, err := cp.Watermark(ctx, "s")
		require.NoError(t, err)
		require.Zero(t, w)
		calls := models.MustJSON([]map[string]any{{"id": "c1"}, {"id": "c2"}})
		ids := hermesstatetest.AppendAll(t, st, "s",
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("q1")},
			repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("a1")},
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("q2")},
			repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("a2")},
		)
		w, err = cp.Watermark(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, ids[3], w)
		// Arrive during the summary: kept live after the compacted rows.
		late := hermesstatetest.AppendAll(t, st, "s",
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("late q"), PlatformMessageID: "pm-1", APIContent: fixturetest.Ptr("late wire")},
			repo.MessageInput{Role: "assistant", ToolCalls: calls},
		)
		summary := repo.MessageInput{Role: "user", Content: fixturetest.Ptr("[CONTEXT SUMMARY]: q1/a1"), CompressedSummary: true}
		tail := []repo.MessageInput{{Role: "user", Content: fixturetest.Ptr("q2")}, {Role: "assistant", Content: fixturetest.Ptr("a2")}}
		n, err := cp.ArchiveAndCompact(ctx, "s", append([]repo.MessageInput{summary}, tail...), repo.CompactOptions{
			Watermark: &w, TailCount: 2, ModelConfigPatch: map[string]any{"drop": nil, "added": "v"}})
		require.NoError(t, err)
		require.Equal(t, 5, n)

		every, err := st.Transcript().Get(ctx, "s", repo.GetOptions{IncludeInactive: true})
		require.NoError(t, err)
		state := map[int64][2]int64{}
		for _, m := range every {
			state[m.ID] = [2]int64{m.Active, m.Compacted}
		}
		require.Equal(t, [2]int64{0, 1}, state[ids[0]], "summarized away")
		require.Equal(t, [2]int64{0, 1}, state[ids[1]])
		require.Equal(t, [2]int64{0, 0}, state[ids[2]], "carried tail originals become rewind rows")
		require.Equal(t, [2]int64{0, 0}, state[ids[3]])
		require.Equal(t, [2]int64{0, 0}, state[late[0]], "cloned concurrent tail")
		live, err := st.Transcript().Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		var shape []string
		for _, m := range live {
			shape = append(shape, m.Role+":"+fixturetest.Deref(m.Content))
		}
		require.Equal(t, []string{"user:[CONTEXT SUMMARY]: q1/a1", "user:q2", "assistant:a2", "user:late q", "assistant:"}, shape)
		require.Greater(t, live[3].ID, late[1], "clones get fresh ids")
		require.Equal(t, "pm-1", fixturetest.Deref(live[3].PlatformMessageID), "clones keep every column")
		require.Equal(t, "late wire", fixturetest.Deref(live[3].APIContent))
		require.EqualValues(t, 1, live[0].CompressedSummary)
		// The summary row holds the display_identity Hermes writes for it
		// (its stored content: a standalone summary carries no live turn).
		require.NotNil(t, live[0].DisplayIdentity, "issue 30 item 5")
		require.Equal(t, models.DisplayIdentity(&live[0]), live[0].DisplayIdentity)
		s, err := st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.EqualValues(t, 5, s.MessageCount)
		require.EqualValues(t, 2, s.ToolCallCount)
		require.Equal(t, `{"_branched_from": "x", "keep": 1, "added": "v"}`, string(s.ModelConfig))

		// Search still finds archived rows, and finds the cloned row.
		res, err := st.Search().Messages(ctx, "q1", repo.SearchOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, res)

		// Without a watermark every live row is archived.
		n, err = cp.ArchiveAndCompact(ctx, "s", []repo.MessageInput{summary}, repo.CompactOptions{})
		require.NoError(t, err)
		require.Equal(t, 1, n)

		// A lost lease writes nothing.
		_, err = cp.ArchiveAndCompact(ctx, "s", []repo.MessageInput{summary}, repo.CompactOptions{LockHolder: "me"})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		hermesstatetest.Exec(t, st, `INSERT INTO compression_locks (session_id, holder, acquired_at, expires_at) VALUES ('s', 'me', 1, 4102444800)`)
		_, err = cp.ArchiveAndCompact(ctx, "s", []repo.MessageInput{summary}, repo.CompactOptions{LockHolder: "me"})
		require.NoError(t, err)
		_, err = cp.ArchiveAndCompact(ctx, "missing", []repo.MessageInput{summary}, repo.CompactOptions{})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
	})
}

func TestContractResume(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		cp := st.Compaction()
		mk := func(id, parent string, started float64, mc models.JSON) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli", ParentSessionID: parent, StartedAt: models.Epoch(started), ModelConfig: mc})
			require.NoError(t, err)
		}
		// root -> (compression) mid -> (compression) tip; tip has an
		// untagged child with messages, and a branch child.
		mk("root", "", 1700000000, nil)
		hermesstatetest.AppendAll(t, st, "root", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("hello"), Timestamp: 1700000001},
			repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("hi"), Timestamp: 1700000002})
		_, err := ss.End(ctx, "root", "compression")
		require.NoError(t, err)
		mk("mid", "root", 1700000100, nil)
		// The continuation re-persists the same ask (an exact clone) and
		// repeats it once more with no reply in between.
		hermesstatetest.AppendAll(t, st, "mid", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("hello"), Timestamp: 1700000001},
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("again"), Timestamp: 1700000101},
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("again"), Timestamp: 1700000102},
			repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("ok"), Timestamp: 1700000103})
		_, err = ss.End(ctx, "mid", "compression")
		require.NoError(t, err)
		mk("tip", "mid", 1700000200, nil)
		mk("branch", "tip", 1700000300, models.MustJSON(map[string]any{"_branched_from": "tip"}))
		hermesstatetest.AppendAll(t, st, "branch", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("b")})

		conv, err := st.Messages().Conversation(ctx, "mid", repo.ConversationOptions{IncludeAncestors: true, IncludeRowIDs: true})
		require.NoError(t, err)
		var shape []string
		for _, c := range conv {
			shape = append(shape, c.Role+":"+c.Content.(string))
			require.NotZero(t, c.RowID)
		}
		require.Equal(t, []string{"assistant:hi", "user:hello", "user:again", "assistant:ok"}, shape)

		got, err := cp.ResolveResumeID(ctx, "root")
		require.NoError(t, err)
		require.Equal(t, "tip", got, "nothing below the tip has messages (its only child is a branch)")
		mk("untagged", "tip", 1700000400, nil)
		hermesstatetest.AppendAll(t, st, "untagged", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("u")})
		got, err = cp.ResolveResumeID(ctx, "root")
		require.NoError(t, err)
		require.Equal(t, "untagged", got, "the deepest descendant with messages")
		got, err = st.Lineage().ResolveResume(ctx, "roo")
		require.NoError(t, err)
		require.Equal(t, "untagged", got)
		got, err = cp.ResolveResumeID(ctx, "nowhere")
		require.NoError(t, err)
		require.Equal(t, "nowhere", got)

		root, err := cp.ConversationRoot(ctx, "untagged")
		require.NoError(t, err)
		require.Equal(t, "root", root)
		root, err = cp.ConversationRoot(ctx, "nowhere")
		require.NoError(t, err)
		require.Equal(t, "nowhere", root)
		fork, err := cp.IsExplicitForkChild(ctx, "branch")
		require.NoError(t, err)
		require.True(t, fork)
		fork, err = cp.IsExplicitForkChild(ctx, "mid")
		require.NoError(t, err)
		require.False(t, fork)
		fork, err = cp.IsExplicitForkChild(ctx, "nowhere")
		require.NoError(t, err)
		require.False(t, fork)

		// A resume of mid: the model sees mid's live rows; the display the
		// lineage with compaction-archived rows, each logical message once.
		w, err := cp.Watermark(ctx, "mid")
		require.NoError(t, err)
		_, err = cp.ArchiveAndCompact(ctx, "mid", []repo.MessageInput{{Role: "user", Content: fixturetest.Ptr("[CONTEXT SUMMARY]: s"), CompressedSummary: true},
			{Role: "assistant", Content: fixturetest.Ptr("ok"), Timestamp: 1700000103}}, repo.CompactOptions{Watermark: &w})
		require.NoError(t, err)
		model, display, err := cp.ResumeConversations(ctx, "mid")
		require.NoError(t, err)
		require.Len(t, model, 2)
		require.True(t, model[0].CompressedSummary)
		shape = nil
		for _, c := range display {
			shape = append(shape, c.Role+":"+c.Content.(string))
		}
		// The root's "hello" and its copy in mid are one logical message.
		require.Equal(t, []string{"user:hello", "assistant:hi", "user:again", "assistant:ok", "user:[CONTEXT SUMMARY]: s"}, shape)
		n, err := cp.ResumeMessageCount(ctx, "mid", true)
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		n, err = cp.ResumeMessageCount(ctx, "mid", false)
		require.NoError(t, err)
		require.EqualValues(t, 8, n, "root's 2 rows, mid's 4 archived and its 2 live rows")
		n, err = cp.ResumeMessageCount(ctx, "branch", false)
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "a /branch copy stands alone")
		_, _, err = cp.ResumeConversations(ctx, "nowhere")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
	})
}

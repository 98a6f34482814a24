package repo_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestTranscriptFixtures: get_messages_around, get_messages and get_session
// on a missing id, compared with what Hermes returned on each fixture.
func TestTranscriptFixtures(t *testing.T) {
	checked := 0
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			ctx := fixturetest.Ctx(t)
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			for _, e := range f.ExtrasOf("get_messages_around") {
				if string(e.Result) == "null" {
					continue // that Hermes had no such method
				}
				window := 5
				if w, ok := e.Kwargs["window"]; ok {
					window = int(w.(float64))
				}
				got, err := st.Transcript().Around(ctx, e.Args[0].(string), int64(e.Args[1].(float64)), window)
				require.NoError(t, err)
				if d := fixturetest.JSONDiff("around", fixturetest.ToAny(e.Result), fixturetest.ToAny(got), true); d != "" {
					t.Errorf("get_messages_around%v differs:\n%s", e.Args, d)
				}
				checked++
			}
			for _, e := range f.ExtrasOf("get_messages") {
				got, err := st.Transcript().Get(ctx, e.Args[0].(string), repo.GetOptions{})
				require.NoError(t, err)
				fixturetest.JSONEq(t, e.Result, got, "get_messages%v", e.Args)
			}
			for _, e := range f.ExtrasOf("get_session") {
				_, err := st.Sessions().Get(ctx, e.Args[0].(string))
				require.JSONEq(t, "null", string(e.Result))
				fixturetest.RequireKind(t, err, hs.ErrNotFound)
			}
		})
	}
	require.GreaterOrEqual(t, checked, 8, "get_messages_around is recorded from v11 on")
}

func msgIDs(ms []models.Message) []int64 {
	out := []int64{}
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func sessionCounters(t *testing.T, st *hs.Store, sid string) (int64, int64) {
	t.Helper()
	s, err := st.Sessions().Get(fixturetest.Ctx(t), sid)
	require.NoError(t, err)
	return s.MessageCount, s.ToolCallCount
}

func TestContractTranscriptGet(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tr := st.Transcript()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		var ms []repo.MessageInput
		for i := 0; i < 6; i++ {
			ms = append(ms, repo.MessageInput{Role: "user", Content: fixturetest.Ptr("m" + string(rune('0'+i))), Timestamp: models.Epoch(1700000000 + float64(i))})
		}
		ids := hermesstatetest.AppendAll(t, st, "s", ms...)

		all, err := tr.Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, ids, msgIDs(all))
		got, err := tr.Get(ctx, "s", repo.GetOptions{Latest: true, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, ids[4:], msgIDs(got))
		got, err = tr.Get(ctx, "s", repo.GetOptions{Latest: true, Limit: 2, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, ids[3:5], msgIDs(got))
		got, err = tr.Get(ctx, "s", repo.GetOptions{Limit: 2, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, ids[1:3], msgIDs(got))
		got, err = tr.Get(ctx, "s", repo.GetOptions{AfterID: ids[3], Limit: 1})
		require.NoError(t, err)
		require.Equal(t, ids[4:5], msgIDs(got))

		// Rewind rows show only with IncludeInactive; compaction-archived
		// rows also with IncludeCompacted, deduplicated against their live
		// copy (same role, content, timestamp and tool fields).
		hermesstatetest.Exec(t, st, `UPDATE messages SET active = 0 WHERE id = ?`, ids[5])
		hermesstatetest.Exec(t, st, `UPDATE messages SET active = 0, compacted = 1 WHERE id IN (?, ?)`, ids[0], ids[1])
		hermesstatetest.AppendAll(t, st, "s", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("m1"), Timestamp: 1700000001})
		got, err = tr.Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		live := msgIDs(got)
		require.Len(t, live, 4)
		got, err = tr.Get(ctx, "s", repo.GetOptions{IncludeInactive: true})
		require.NoError(t, err)
		require.Len(t, got, 7)
		got, err = tr.Get(ctx, "s", repo.GetOptions{IncludeCompacted: true})
		require.NoError(t, err)
		// m0 (archived), m1 (its live copy, at m1's first position), m2..m4.
		require.Equal(t, []int64{ids[0], live[3], ids[2], ids[3], ids[4]}, msgIDs(got))
		got, err = tr.Get(ctx, "s", repo.GetOptions{IncludeCompacted: true, Latest: true, Limit: 2})
		require.NoError(t, err)
		require.Equal(t, ids[3:5], msgIDs(got))

		// Paging errors, and a missing session has no rows (as Hermes).
		_, err = tr.Get(ctx, "s", repo.GetOptions{AfterID: 1, Latest: true})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = tr.Get(ctx, "s", repo.GetOptions{AfterID: 1, IncludeCompacted: true})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = tr.Get(ctx, "s", repo.GetOptions{Limit: -1})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		none, err := tr.Get(ctx, "missing", repo.GetOptions{})
		require.NoError(t, err)
		require.Empty(t, none)
		b, _ := json.Marshal(none)
		require.Equal(t, "[]", string(b))
	})
}

func TestContractTranscriptAround(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		for _, id := range []string{"a", "b"} {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
			require.NoError(t, err)
		}
		var ids []int64
		for i := 0; i < 5; i++ {
			ids = append(ids, hermesstatetest.AppendAll(t, st, "a", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("x")})...)
			hermesstatetest.AppendAll(t, st, "b", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("y")})
		}
		hermesstatetest.Exec(t, st, `UPDATE messages SET active = 0 WHERE id = ?`, ids[1])
		res, err := st.Transcript().Around(ctx, "a", ids[2], 1)
		require.NoError(t, err)
		require.Equal(t, 1, res.MessagesBefore)
		require.Equal(t, 1, res.MessagesAfter)
		require.Equal(t, []int64{ids[1], ids[2], ids[3]}, []int64{res.Window[0].ID, res.Window[1].ID, res.Window[2].ID})
		b, err := json.Marshal(res.Window[0])
		require.NoError(t, err)
		require.Contains(t, string(b), `"_compressed_summary":0`)
		require.Contains(t, string(b), `"active":0`)

		res, err = st.Transcript().Around(ctx, "a", ids[0], 3)
		require.NoError(t, err)
		require.Equal(t, 0, res.MessagesBefore)
		require.Equal(t, 3, res.MessagesAfter)
		res, err = st.Transcript().Around(ctx, "a", ids[4], -2)
		require.NoError(t, err)
		require.Len(t, res.Window, 1)

		// An anchor of another session gives an empty window.
		res, err = st.Transcript().Around(ctx, "b", ids[2], 5)
		require.NoError(t, err)
		require.Empty(t, res.Window)
		b, err = json.Marshal(res)
		require.NoError(t, err)
		require.JSONEq(t, `{"window": [], "messages_before": 0, "messages_after": 0}`, string(b))
	})
}

func TestContractTranscriptReplace(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tr := st.Transcript()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		old := hermesstatetest.AppendAll(t, st, "s", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("old q")}, repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("old a")})
		hermesstatetest.Exec(t, st, `UPDATE messages SET active = 0, compacted = 1 WHERE id = ?`, old[0])

		calls := models.MustJSON([]map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "t", "arguments": "{}"}},
			{"id": "c2", "type": "function", "function": map[string]any{"name": "t", "arguments": "{}"}}})
		repl := []repo.MessageInput{
			{Role: "user", Content: fixturetest.Ptr("new q"), Reasoning: fixturetest.Ptr("dropped on a user row"), Timestamp: 1700000000},
			{Role: "assistant", Content: nil, ToolCalls: calls, Reasoning: fixturetest.Ptr("kept"), Timestamp: 1600000000},
			{Role: "tool", Content: fixturetest.Ptr("ok"), ToolCallID: "c1"},
		}
		n, err := tr.Replace(ctx, "s", repl, repo.ReplaceOptions{ActiveOnly: true})
		require.NoError(t, err)
		require.Equal(t, 3, n)
		live, err := tr.Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		require.Len(t, live, 3)
		require.Nil(t, live[0].Reasoning)
		require.Equal(t, "kept", fixturetest.Deref(live[1].Reasoning))
		require.EqualValues(t, 1600000000, live[1].Timestamp, "a valid explicit timestamp is kept")
		require.Greater(t, float64(live[2].Timestamp), float64(live[0].Timestamp), "a row without one gets the running clock")
		msgs, tools := sessionCounters(t, st, "s")
		require.EqualValues(t, 3, msgs)
		require.EqualValues(t, 2, tools)
		every, err := tr.Get(ctx, "s", repo.GetOptions{IncludeInactive: true})
		require.NoError(t, err)
		require.Len(t, every, 4, "ActiveOnly keeps the archived row")

		// ArchiveDropped keeps the replaced rows as rewind rows.
		_, err = tr.Replace(ctx, "s", []repo.MessageInput{{Role: "user", Content: fixturetest.Ptr("only")}}, repo.ReplaceOptions{ArchiveDropped: true})
		require.NoError(t, err)
		every, err = tr.Get(ctx, "s", repo.GetOptions{IncludeInactive: true})
		require.NoError(t, err)
		require.Len(t, every, 5)
		// The default deletes every row.
		_, err = tr.Replace(ctx, "s", nil, repo.ReplaceOptions{})
		require.NoError(t, err)
		every, err = tr.Get(ctx, "s", repo.GetOptions{IncludeInactive: true})
		require.NoError(t, err)
		require.Empty(t, every)
		msgs, tools = sessionCounters(t, st, "s")
		require.Zero(t, msgs+tools)

		_, err = tr.Replace(ctx, "missing", repl, repo.ReplaceOptions{})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		_, err = st.Sessions().End(ctx, "s", "compression")
		require.NoError(t, err)
		_, err = tr.Replace(ctx, "s", repl, repo.ReplaceOptions{})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		_, err = tr.Replace(ctx, "s", []repo.MessageInput{{Role: ""}}, repo.ReplaceOptions{})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
	})
}

func TestContractTranscriptDeleteClear(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tr := st.Transcript()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli", SystemPrompt: "sp"})
		require.NoError(t, err)
		calls := models.MustJSON([]map[string]any{{"id": "c1"}, {"id": "c2"}})
		var ms []repo.MessageInput
		for i := 0; i < 6; i++ {
			m := repo.MessageInput{Role: "user", Content: fixturetest.Ptr("m"), Timestamp: models.Epoch(1700000000 + float64(i*10))}
			if i == 2 {
				m = repo.MessageInput{Role: "assistant", ToolCalls: calls, Timestamp: m.Timestamp}
			}
			ms = append(ms, m)
		}
		ids := hermesstatetest.AppendAll(t, st, "s", ms...)
		require.NoError(t, st.Sessions().UpdateTokenCounts(ctx, "s", repo.TokenUpdate{InputTokens: 9, APICallCount: 1, Model: "m", BillingProvider: "p"}))

		n, err := tr.DeleteMessages(ctx, "s", []int64{ids[0], ids[1], 999999})
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		msgs, tools := sessionCounters(t, st, "s")
		require.EqualValues(t, 4, msgs)
		require.EqualValues(t, 1, tools, "delete recounts tool rows and rows with tool_calls, as Hermes")
		n, err = tr.DeleteMessages(ctx, "missing", []int64{ids[2]})
		require.NoError(t, err)
		require.Zero(t, n)

		ok, err := tr.Clear(ctx, "s", repo.ClearOptions{KeepLastN: 3})
		require.NoError(t, err)
		require.True(t, ok)
		left, err := tr.Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, ids[3:], msgIDs(left))
		before := 1700000045.0
		ok, err = tr.Clear(ctx, "s", repo.ClearOptions{Before: &before})
		require.NoError(t, err)
		require.True(t, ok)
		left, err = tr.Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, ids[5:], msgIDs(left))
		s, err := st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.EqualValues(t, 9, s.InputTokens, "tokens are kept while messages remain")

		ok, err = tr.Clear(ctx, "s", repo.ClearOptions{})
		require.NoError(t, err)
		require.True(t, ok)
		s, err = st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.Zero(t, s.InputTokens+s.APICallCount+s.MessageCount)
		require.NotNil(t, s.LastActivityAt)
		rows, err := st.Usage().Rows(ctx, "s")
		require.NoError(t, err)
		require.Empty(t, rows)
		ok, err = tr.Clear(ctx, "missing", repo.ClearOptions{})
		require.NoError(t, err)
		require.False(t, ok)
	})
}

func TestContractTranscriptProbes(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tr := st.Transcript()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		_, found, err := tr.LatestRowID(ctx, "s", "user", 0, true)
		require.NoError(t, err)
		require.False(t, found)
		role, err := tr.LatestConversationRole(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "", role)
		text, err := tr.FirstAssistantText(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "", text)

		ids := hermesstatetest.AppendAll(t, st, "s",
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("q1"), Timestamp: 1700000000},
			repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("first reply"), Timestamp: 1700000001},
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("  "), Timestamp: 1700000002},
			repo.MessageInput{Role: "assistant", Parts: []any{map[string]any{"type": "text", "text": "x"}}, Timestamp: 1700000003},
			repo.MessageInput{Role: "system", Content: fixturetest.Ptr("note"), Timestamp: 1700000004},
		)
		id, found, err := tr.LatestRowID(ctx, "s", "user", 0, true)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, ids[0], id)
		id, _, err = tr.LatestRowID(ctx, "s", "user", 0, false)
		require.NoError(t, err)
		require.Equal(t, ids[2], id)
		id, _, err = tr.LatestRowID(ctx, "s", "user", 1, false)
		require.NoError(t, err)
		require.Equal(t, ids[0], id)
		_, _, err = tr.LatestRowID(ctx, "s", "tool", 0, false)
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		role, err = tr.LatestConversationRole(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "assistant", role)
		text, err = tr.FirstAssistantText(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "first reply", text)

		// api_content lands only on the addressed live user row whose
		// content still matches.
		n, err := tr.SetAPIContent(ctx, "s", ids[0], "other", "wire")
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = tr.SetAPIContent(ctx, "s", ids[0], "q1", "wire q1")
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		n, err = tr.SetLatestUserAPIContent(ctx, "s", "q1", "nope")
		require.NoError(t, err)
		require.Zero(t, n, "the newest user row is ids[2]")
		n, err = tr.SetLatestUserAPIContent(ctx, "s", "  ", "wire blank")
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		all, err := tr.Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "wire q1", fixturetest.Deref(all[0].APIContent))
		require.Equal(t, "wire blank", fixturetest.Deref(all[2].APIContent))

		ok, err := tr.SetLatestDisplayKind(ctx, "s", "assistant", "first reply", "notice", models.MustJSON(map[string]any{"k": "é"}))
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tr.SetLatestDisplayKind(ctx, "s", "assistant", "no such text", "notice", nil)
		require.NoError(t, err)
		require.False(t, ok)
		_, err = tr.SetLatestDisplayKind(ctx, "s", "assistant", "first reply", "notice", models.JSON(`[1]`))
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		all, err = tr.Get(ctx, "s", repo.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "notice", fixturetest.Deref(all[1].DisplayKind))
		var raw string
		hermesstatetest.QueryRow(t, st, `SELECT display_metadata FROM messages WHERE id = ?`, []any{ids[1]}, &raw)
		require.Equal(t, `{"k": "\u00e9"}`, raw, "written as Python's json.dumps")
	})
}

func TestContractRewind(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		rw := st.Rewind()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		calls := models.MustJSON([]map[string]any{{"id": "c1"}})
		summary := "[CONTEXT SUMMARY]: earlier turns"
		ids := hermesstatetest.AppendAll(t, st, "s",
			repo.MessageInput{Role: "user", Content: &summary},                                            // 0: not a typed turn
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("turn one")},                         // 1: turn 0
			repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("reply one")},                   // 2
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("turn two")},                         // 3: turn 1
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("no reply, same turn")},              // 4: merged into turn 1
			repo.MessageInput{Role: "assistant", ToolCalls: calls},                                        // 5
			repo.MessageInput{Role: "tool", Content: fixturetest.Ptr("ok"), ToolCallID: "c1"},             // 6
			repo.MessageInput{Role: "user", Content: fixturetest.Ptr("turn three"), DisplayKind: "steer"}, // 7: turn 2
			repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("reply three")},                 // 8
		)
		active, err := rw.ActiveIDs(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, ids, active)

		// Refusals.
		_, err = rw.ToMessage(ctx, "s", ids[2], repo.RewindOptions{})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = rw.ToMessage(ctx, "s", 999999, repo.RewindOptions{})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		_, err = rw.ToMessage(ctx, "s", ids[7], repo.RewindOptions{ExpectedActiveIDs: ids[:3]})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		_, err = rw.ToMessage(ctx, "s", ids[7], repo.RewindOptions{ExpectedTargetContent: fixturetest.Ptr("something else")})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		_, err = rw.ToMessage(ctx, "missing", ids[7], repo.RewindOptions{})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		// A live compression lock refuses; an expired one is reclaimed.
		hermesstatetest.Exec(t, st, `INSERT INTO compression_locks (session_id, holder, acquired_at, expires_at) VALUES ('s', 'other', 1, 4102444800)`)
		_, err = rw.ToMessage(ctx, "s", ids[7], repo.RewindOptions{})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		hermesstatetest.Exec(t, st, `UPDATE compression_locks SET expires_at = 2 WHERE session_id = 's'`)
		hermesstatetest.Exec(t, st, `INSERT INTO session_turn_leases (conversation_id, holder, acquired_at, expires_at) VALUES ('s', 'h', 1, 4102444800)`)
		_, err = rw.ToMessage(ctx, "s", ids[7], repo.RewindOptions{})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		hermesstatetest.Exec(t, st, `UPDATE session_turn_leases SET expires_at = 2`)

		// Undo the last turn.
		res, err := rw.UserTurn(ctx, "s", -1)
		require.NoError(t, err)
		require.Equal(t, 2, res.RewoundCount)
		require.Equal(t, ids[7], res.TargetMessage.ID)
		require.Equal(t, 1, res.TurnsUndone)
		require.Equal(t, ids[6], *res.NewHeadID)
		var locks, leases int64
		hermesstatetest.QueryRow(t, st, `SELECT (SELECT COUNT(*) FROM compression_locks), (SELECT COUNT(*) FROM session_turn_leases)`, nil, &locks, &leases)
		require.Zero(t, locks+leases, "expired guards are reclaimed")
		s, err := st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.EqualValues(t, 1, s.RewindCount)
		require.EqualValues(t, 7, s.MessageCount)
		require.EqualValues(t, 1, s.ToolCallCount)

		// Turn 1 starts at "turn two"; the user row after it joined it.
		res, err = rw.UserTurn(ctx, "s", 1)
		require.NoError(t, err)
		require.Equal(t, ids[3], res.TargetMessage.ID)
		require.Equal(t, 4, res.RewoundCount)
		_, err = rw.UserTurn(ctx, "s", 1)
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		// A turn counted back past the oldest is no turn either (it does not
		// rewind the whole session).
		_, err = rw.UserTurn(ctx, "s", -9999999)
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		// Rewinding with pinned expectations.
		active, err = rw.ActiveIDs(ctx, "s")
		require.NoError(t, err)
		res, err = rw.ToMessage(ctx, "s", ids[1], repo.RewindOptions{ExpectedActiveIDs: active, ExpectedTargetContent: fixturetest.Ptr("turn one")})
		require.NoError(t, err)
		require.Equal(t, 2, res.RewoundCount)
		require.Equal(t, ids[0], *res.NewHeadID)
		all, err := st.Transcript().Get(ctx, "s", repo.GetOptions{IncludeInactive: true})
		require.NoError(t, err)
		require.Len(t, all, len(ids), "rewound rows stay on disk")

		// A session ended by compression cannot be rewound.
		_, err = st.Sessions().End(ctx, "s", "compression")
		require.NoError(t, err)
		_, err = rw.ToMessage(ctx, "s", ids[0], repo.RewindOptions{})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
	})
}

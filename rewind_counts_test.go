package hermesstate_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestRewindCountsAgreeWithDoctorAndRepair: Hermes v30 keeps
// message_count and tool_call_count as the counts of the ACTIVE rows
// (_active_transcript_counts, after a rewind and a compaction). After a
// normal rewind doctor finds nothing wrong, and repair leaves the counters
// as the rewind set them; counters that disagree with the active rows are
// still found and recomputed from the active rows.
func TestRewindCountsAgreeWithDoctorAndRepair(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	cfg := hs.Config{Path: path}
	st, err := hs.Open(ctx, cfg)
	require.NoError(t, err)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", Model: "m"})
	require.NoError(t, err)
	calls := []byte(`[{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]`)
	for _, m := range []repo.MessageInput{
		{Role: "user", Content: strp("first question")},
		{Role: "assistant", ToolCalls: calls},
		{Role: "tool", Content: strp("ok"), ToolCallID: "c1", ToolName: "terminal"},
		{Role: "assistant", Content: strp("first answer")},
		{Role: "user", Content: strp("second question")},
		{Role: "assistant", ToolCalls: calls},
		{Role: "assistant", Content: strp("second answer")},
	} {
		_, err := st.Messages().Append(ctx, s.ID, m)
		require.NoError(t, err)
	}
	res, err := st.Rewind().UserTurn(ctx, s.ID, -1)
	require.NoError(t, err)
	require.Equal(t, 3, res.RewoundCount)
	got, err := st.Sessions().Get(ctx, s.ID)
	require.NoError(t, err)
	require.EqualValues(t, 4, got.MessageCount, "the rewind counts the active rows")
	require.EqualValues(t, 1, got.ToolCallCount)
	require.NoError(t, st.Close())

	r, err := hs.Doctor(ctx, cfg, hs.DoctorOptions{Full: true})
	require.NoError(t, err)
	requireHealthy(t, r)

	rep, err := hs.Repair(ctx, cfg, hs.RepairOptions{})
	require.NoError(t, err)
	for _, a := range rep.Actions {
		require.NotEqual(t, "counters", a.Step, "repair must not undo the rewind's counts: %+v", a)
	}
	db := fixturetest.Raw(t, path)
	var mc, tc int64
	require.NoError(t, db.QueryRow("SELECT message_count, tool_call_count FROM sessions WHERE id = ?", s.ID).Scan(&mc, &tc))
	require.EqualValues(t, 4, mc)
	require.EqualValues(t, 1, tc)

	// Counters that disagree with the active rows are found, and repair
	// sets them to the active counts (not to every row).
	_, err = db.Exec("UPDATE sessions SET message_count = 7, tool_call_count = 2 WHERE id = ?", s.ID)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	r, err = hs.Doctor(ctx, cfg, hs.DoctorOptions{})
	require.NoError(t, err)
	require.True(t, r.Has("counters", ""), "%+v", r.Problems())
	_, err = hs.Repair(ctx, cfg, hs.RepairOptions{})
	require.NoError(t, err)
	db = fixturetest.Raw(t, path)
	require.NoError(t, db.QueryRow("SELECT message_count, tool_call_count FROM sessions WHERE id = ?", s.ID).Scan(&mc, &tc))
	require.NoError(t, db.Close())
	require.EqualValues(t, 4, mc)
	require.EqualValues(t, 1, tc)
	r, err = hs.Doctor(ctx, cfg, hs.DoctorOptions{})
	require.NoError(t, err)
	requireHealthy(t, r)
}

// TestRewindTurnThatDoesNotExist: a user turn ordinal outside the live
// transcript is refused (ErrNotFound), negative ones too, and nothing is
// rewound; -1 is the last turn and -N (N turns) the first.
func TestRewindTurnThatDoesNotExist(t *testing.T) {
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	require.NoError(t, err)
	defer st.Close()
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	for _, m := range []string{"q1", "a1", "q2", "a2"} {
		role := "user"
		if m[0] == 'a' {
			role = "assistant"
		}
		_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: role, Content: strp(m)})
		require.NoError(t, err)
	}
	for _, n := range []int{2, 5, -3, -9999999} {
		_, err := st.Rewind().UserTurn(ctx, s.ID, n)
		require.ErrorIs(t, err, hs.ErrNotFound, "turn %d", n)
	}
	ids, err := st.Rewind().ActiveIDs(ctx, s.ID)
	require.NoError(t, err)
	require.Len(t, ids, 4, "a refused rewind rewinds nothing")
	res, err := st.Rewind().UserTurn(ctx, s.ID, -2)
	require.NoError(t, err)
	require.Equal(t, 4, res.RewoundCount, "-2 of 2 turns is the first turn")
}

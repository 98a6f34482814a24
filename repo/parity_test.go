package repo_test

// Behaviours where hermesstate used to store or return something other than
// Hermes' SessionDB (issue 14, "divergences that change data"). Each test
// failed before its fix.

import (
	"database/sql"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestParityTokenCountsAbsolute: update_token_counts as Hermes' code does it
// (hermes_state_usage.update_token_counts and _insert_session_row).
func TestParityTokenCountsAbsolute(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		_, err := ss.Create(ctx, repo.SessionInput{ID: "s1", Source: "telegram"})
		require.NoError(t, err)

		// Absolute mode SETS actual_cost_usd when a value is given
		// (CASE WHEN ? IS NULL THEN actual_cost_usd ELSE ? END) ...
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s1", repo.TokenUpdate{InputTokens: 10, ActualCostUSD: fixturetest.Ptr(0.5)}))
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s1", repo.TokenUpdate{InputTokens: 100, OutputTokens: 7,
			ActualCostUSD: fixturetest.Ptr(0.25), Absolute: true}))
		got, err := ss.Get(ctx, "s1")
		require.NoError(t, err)
		require.NotNil(t, got.ActualCostUSD)
		require.Equal(t, 0.25, *got.ActualCostUSD)
		require.EqualValues(t, 100, got.InputTokens)
		require.EqualValues(t, 7, got.OutputTokens)
		// ... and keeps it when none is given.
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s1", repo.TokenUpdate{InputTokens: 120, Absolute: true}))
		got, err = ss.Get(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, 0.25, *got.ActualCostUSD)
		require.EqualValues(t, 120, got.InputTokens)
		require.EqualValues(t, 0, got.OutputTokens)
		// Delta mode adds.
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s1", repo.TokenUpdate{InputTokens: 1, ActualCostUSD: fixturetest.Ptr(0.5)}))
		got, err = ss.Get(ctx, "s1")
		require.NoError(t, err)
		require.Equal(t, 0.75, *got.ActualCostUSD)

		// A report with a model but no usage fills a NULL model (the row
		// guard upserts model = COALESCE(model, ?)); it never replaces one.
		_, err = ss.Create(ctx, repo.SessionInput{ID: "s2", Source: "cli"})
		require.NoError(t, err)
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s2", repo.TokenUpdate{Model: "m-first", BillingProvider: "p1"}))
		got, err = ss.Get(ctx, "s2")
		require.NoError(t, err)
		require.Equal(t, "m-first", fixturetest.Deref(got.Model))
		require.Nil(t, got.BillingProvider, "route parts other than the model need an accounted report")
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s2", repo.TokenUpdate{Model: "m-second"}))
		got, err = ss.Get(ctx, "s2")
		require.NoError(t, err)
		require.Equal(t, "m-first", fixturetest.Deref(got.Model))

		// A placeholder row (source 'unknown', made by a report without a
		// source) takes the real source of a later report.
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s3", repo.TokenUpdate{InputTokens: 1}))
		got, err = ss.Get(ctx, "s3")
		require.NoError(t, err)
		require.Equal(t, "unknown", got.Source)
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s3", repo.TokenUpdate{InputTokens: 1, Source: "discord"}))
		got, err = ss.Get(ctx, "s3")
		require.NoError(t, err)
		require.Equal(t, "discord", got.Source)
		require.EqualValues(t, 2, got.InputTokens)
		// A real source is never replaced.
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s3", repo.TokenUpdate{InputTokens: 1, Source: "cli"}))
		got, err = ss.Get(ctx, "s3")
		require.NoError(t, err)
		require.Equal(t, "discord", got.Source)

		// NULL token counters (rows written by old versions) stay NULL in
		// delta mode ("input_tokens = input_tokens + ?"); api_call_count
		// is COALESCEd; absolute mode sets them.
		_, err = ss.Create(ctx, repo.SessionInput{ID: "s4", Source: "cli"})
		require.NoError(t, err)
		hermesstatetest.Exec(t, st, `UPDATE sessions SET input_tokens = NULL, output_tokens = NULL, api_call_count = NULL WHERE id = 's4'`)
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s4", repo.TokenUpdate{InputTokens: 5, OutputTokens: 6, APICallCount: 1}))
		var in, out, calls sql.NullInt64
		hermesstatetest.QueryRow(t, st, `SELECT input_tokens, output_tokens, api_call_count FROM sessions WHERE id = 's4'`, nil, &in, &out, &calls)
		require.False(t, in.Valid, "a NULL counter stays NULL in delta mode")
		require.False(t, out.Valid)
		require.Equal(t, sql.NullInt64{Int64: 1, Valid: true}, calls)
		require.NoError(t, ss.UpdateTokenCounts(ctx, "s4", repo.TokenUpdate{InputTokens: 5, OutputTokens: 6, APICallCount: 2, Absolute: true}))
		hermesstatetest.QueryRow(t, st, `SELECT input_tokens, output_tokens, api_call_count FROM sessions WHERE id = 's4'`, nil, &in, &out, &calls)
		require.Equal(t, sql.NullInt64{Int64: 5, Valid: true}, in)
		require.Equal(t, sql.NullInt64{Int64: 6, Valid: true}, out)
		require.Equal(t, sql.NullInt64{Int64: 2, Valid: true}, calls)
	})
}

// TestParityPromptGCKeepsToolNames: system_prompts rows that
// sessions.tool_names references survive every garbage collection
// (delete, prune, clear), as _delete_unreferenced_system_prompts does.
func TestParityPromptGCKeepsToolNames(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		mk := func(id, prompt string) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli", SystemPrompt: prompt, StartedAt: 1700000000})
			require.NoError(t, err)
		}
		promptRows := func() int64 {
			var n int64
			hermesstatetest.QueryRow(t, st, `SELECT COUNT(*) FROM system_prompts`, nil, &n)
			return n
		}
		// Session "holder" references the prompts of "a", "b" and "c" only
		// through tool_names.
		mk("a", "prompt A")
		mk("b", "prompt B")
		mk("c", "prompt C")
		_, err := ss.Create(ctx, repo.SessionInput{ID: "holder", Source: "cli"})
		require.NoError(t, err)
		for _, p := range []string{"prompt A", "prompt B", "prompt C"} {
			hermesstatetest.Exec(t, st, `UPDATE sessions SET tool_names = ? WHERE id = 'holder'`, repo.PromptHash(p))
			switch p {
			case "prompt A":
				_, err = st.Cleanup().Delete(ctx, "a")
			case "prompt B":
				_, err = ss.End(ctx, "b", "user_exit")
				require.NoError(t, err)
				_, err = st.Cleanup().Prune(ctx, repo.PruneOptions{OlderThan: 1})
			case "prompt C":
				require.NoError(t, ss.SetSystemPrompt(ctx, "c", "prompt C2"))
			}
			require.NoError(t, err)
			var kept int64
			hermesstatetest.QueryRow(t, st, `SELECT COUNT(*) FROM system_prompts WHERE hash = ?`, []any{repo.PromptHash(p)}, &kept)
			require.EqualValues(t, 1, kept, "%q is referenced by tool_names", p)
		}
		// Without the reference, the next collection removes it.
		hermesstatetest.Exec(t, st, `UPDATE sessions SET tool_names = NULL WHERE id = 'holder'`)
		mk("d", "prompt D")
		_, err = st.Cleanup().Delete(ctx, "d")
		require.NoError(t, err)
		require.EqualValues(t, 1, promptRows(), "only prompt C2 (session c) is left")
	})
}

// TestParityCompressionChildChoice: the next continuation of a compressed
// session is the one Hermes' _CHAIN_STEP_SQL picks: a child that itself
// ended with compression, then a live child, then by last activity.
func TestParityCompressionChildChoice(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		mk := func(id, parent string, started float64) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli", ParentSessionID: parent, StartedAt: models.Epoch(started)})
			require.NoError(t, err)
		}
		end := func(id, reason string) {
			_, err := ss.End(ctx, id, reason)
			require.NoError(t, err)
		}
		say := func(id string, ts float64) {
			c := "hi"
			_, err := st.Messages().Append(ctx, id, repo.MessageInput{Role: "user", Content: &c, Timestamp: models.Epoch(ts)})
			require.NoError(t, err)
		}
		chain := func(id string) []string {
			c, err := st.Lineage().CompressionChain(ctx, id)
			require.NoError(t, err)
			return c
		}
		tip := func(id string) string {
			c, err := st.Lineage().CompressionTip(ctx, id)
			require.NoError(t, err)
			return c
		}

		// A live continuation beats a newer sibling a reaper closed.
		mk("r1", "", 1700000000)
		end("r1", "compression")
		mk("r1_live", "r1", 1700000100)
		mk("r1_reaped", "r1", 1700000200)
		end("r1_reaped", "ws_orphan_reap")
		require.Equal(t, "r1_live", tip("r1"))
		require.Equal(t, []string{"r1", "r1_live"}, chain("r1_live"))

		// A child that continued the chain beats a live sibling.
		mk("r2", "", 1700001000)
		end("r2", "compression")
		mk("r2_cont", "r2", 1700001100)
		end("r2_cont", "compression")
		mk("r2_cont_tip", "r2_cont", 1700001150)
		mk("r2_live", "r2", 1700001200)
		require.Equal(t, "r2_cont_tip", tip("r2"))
		require.Equal(t, []string{"r2", "r2_cont", "r2_cont_tip"}, chain("r2"))

		// Among live children, the most recently active wins, not the
		// newest started.
		mk("r3", "", 1700002000)
		end("r3", "compression")
		mk("r3_old", "r3", 1700002100)
		mk("r3_new", "r3", 1700002200)
		say("r3_old", 1700003000)
		require.Equal(t, "r3_old", tip("r3"))
		resumed, err := st.Lineage().ResolveResume(ctx, "r3")
		require.NoError(t, err)
		require.Equal(t, "r3_old", resumed)

		// The listing projects the root onto the same tip.
		rows, err := st.Listing().Rich(ctx, repo.RichOptions{Limit: 50})
		require.NoError(t, err)
		proj := map[string]string{}
		for _, r := range rows {
			if r.LineageRootID != "" {
				proj[r.LineageRootID] = r.ID
			}
		}
		require.Equal(t, map[string]string{"r1": "r1_live", "r2": "r2_cont_tip", "r3": "r3_old"}, proj)
	})
}

// TestParityReplay: get_messages_as_conversation keeps finish_reason and
// reasoning only when truthy, drops background-review harness turns (and
// the curator reply after each) and blanks stale [marker] assistant content.
func TestParityReplay(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		calls := models.MustJSON([]map[string]any{{"id": "c1", "type": "function", "function": map[string]any{"name": "memory", "arguments": "{}"}}})
		msgs := []repo.MessageInput{
			{Role: "user", Content: fixturetest.Ptr("first question")},
			{Role: "assistant", Content: fixturetest.Ptr("answer"), FinishReason: fixturetest.Ptr(""), Reasoning: fixturetest.Ptr(""), ReasoningContent: fixturetest.Ptr("")},
			{Role: "user", Content: fixturetest.Ptr("  Review the conversation above and consider saving to memory. Be brief.")},
			{Role: "assistant", Content: fixturetest.Ptr("curator reply")},
			{Role: "system", Content: fixturetest.Ptr("Review the conversation above and update the skill library")},
			{Role: "user", Content: fixturetest.Ptr("Review the conversation above and consider saving to memory")},
			{Role: "assistant", Content: fixturetest.Ptr("second curator reply")},
			{Role: "assistant", Content: fixturetest.Ptr(" [memory] "), ToolCalls: calls, FinishReason: fixturetest.Ptr("tool_calls"), Reasoning: fixturetest.Ptr("think")},
			{Role: "tool", Content: fixturetest.Ptr("[memory]"), ToolCallID: "c1", ToolName: "memory"},
			{Role: "assistant", Content: fixturetest.Ptr("[memory]")},
		}
		_, err = st.Messages().AppendBatch(ctx, "s", msgs)
		require.NoError(t, err)
		conv, err := st.Messages().Conversation(ctx, "s", repo.ConversationOptions{})
		require.NoError(t, err)
		b, err := json.Marshal(conv)
		require.NoError(t, err)
		var got []map[string]any
		require.NoError(t, json.Unmarshal(b, &got))
		var shape []string
		for _, m := range got {
			shape = append(shape, m["role"].(string)+":"+m["content"].(string))
		}
		require.Equal(t, []string{"user:first question", "assistant:answer", "assistant:second curator reply",
			"assistant:", "tool:[memory]", "assistant:[memory]"}, shape)
		require.NotContains(t, got[1], "finish_reason")
		require.NotContains(t, got[1], "reasoning")
		require.Equal(t, "", got[1]["reasoning_content"], "reasoning_content is kept whenever not NULL")
		require.Equal(t, "tool_calls", got[3]["finish_reason"])
		require.Equal(t, "think", got[3]["reasoning"])
		require.NotNil(t, got[3]["tool_calls"])

		// Stored rows are unchanged.
		list, err := st.Messages().List(ctx, "s")
		require.NoError(t, err)
		require.Len(t, list, len(msgs))
		require.Equal(t, " [memory] ", fixturetest.Deref(list[7].Content))
	})
}

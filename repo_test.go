// The integration tests of the repository interfaces through Open: each
// runs the same assertions on a SQLite file in t.TempDir() and on a fresh
// PostgreSQL schema (hermesstatetest.ForEachBackend). The repositories'
// finer tests sit beside them in repo/ (package repo_test), the same way.
package hermesstate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestContractSessions(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		v, err := st.SchemaVersion(ctx)
		require.NoError(t, err)
		require.Equal(t, 30, v)

		p, err := ss.Create(ctx, repo.SessionInput{ID: "p1", Source: "cli", Model: "m1", SystemPrompt: "You are X",
			Cwd: "/work", ProfileName: "default", ModelConfig: models.MustJSON(map[string]any{"a": "é", "n": 1.5}),
			StartedAt: 1767225600.25})
		require.NoError(t, err)
		require.Equal(t, "cli", p.Source)
		require.Equal(t, models.Epoch(1767225600.25), p.StartedAt)
		require.Equal(t, `{"a": "\u00e9", "n": 1.5}`, string(p.ModelConfig))

		got, err := ss.Get(ctx, "p1")
		require.NoError(t, err)
		require.Equal(t, "You are X", *got.SystemPrompt)
		require.Equal(t, repo.PromptHash("You are X"), *got.SystemPromptHash)

		// Upsert keeps what was set and fills what was missing.
		again, err := ss.Create(ctx, repo.SessionInput{ID: "p1", Source: "telegram", Model: "other", SessionKey: "k1"})
		require.NoError(t, err)
		require.Equal(t, "cli", again.Source)
		require.Equal(t, "m1", *again.Model)
		require.Equal(t, "k1", *again.SessionKey)

		// A placeholder source is replaced.
		_, err = ss.Create(ctx, repo.SessionInput{ID: "ph", Source: "unknown"})
		require.NoError(t, err)
		ph, err := ss.Create(ctx, repo.SessionInput{ID: "ph", Source: "discord"})
		require.NoError(t, err)
		require.Equal(t, "discord", ph.Source)

		// A child inherits the workspace.
		c, err := ss.Create(ctx, repo.SessionInput{ID: "c1", Source: "subagent", ParentSessionID: "p1", StartedAt: 1767225700})
		require.NoError(t, err)
		require.Equal(t, "/work", *c.Cwd)
		require.Equal(t, "default", *c.ProfileName)
		require.Equal(t, "p1", *c.ParentSessionID)

		_, err = ss.Create(ctx, repo.SessionInput{ID: "c2", Source: "cli", ParentSessionID: "missing"})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		_, err = ss.Create(ctx, repo.SessionInput{ID: "c3", Source: "cli", ParentSessionID: "c3"})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = ss.Create(ctx, repo.SessionInput{ID: "bad\x01id", Source: "cli"})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = ss.Get(ctx, "nope")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		// End: the first reason wins; Reopen clears.
		wrote, err := ss.End(ctx, "p1", "user_exit")
		require.NoError(t, err)
		require.True(t, wrote)
		wrote, err = ss.End(ctx, "p1", "other")
		require.NoError(t, err)
		require.False(t, wrote)
		got, err = ss.Get(ctx, "p1")
		require.NoError(t, err)
		require.Equal(t, "user_exit", *got.EndReason)
		require.NotNil(t, got.EndedAt)
		require.NoError(t, ss.Reopen(ctx, "p1"))
		got, err = ss.Get(ctx, "p1")
		require.NoError(t, err)
		require.Nil(t, got.EndReason)
		require.Nil(t, got.EndedAt)
		_, err = ss.End(ctx, "nope", "x")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		// System prompts are deduplicated; an unused one is removed.
		require.NoError(t, ss.SetSystemPrompt(ctx, "c1", "You are X"))
		counts, err := st.TableCounts(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, counts["system_prompts"])
		require.NoError(t, ss.SetSystemPrompt(ctx, "p1", "You are Y"))
		require.NoError(t, ss.SetSystemPrompt(ctx, "c1", "You are Y"))
		counts, err = st.TableCounts(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, counts["system_prompts"])
		got, err = ss.Get(ctx, "c1")
		require.NoError(t, err)
		require.Equal(t, "You are Y", *got.SystemPrompt)

		// Listing: newest first, by source, paged; ties broken by id DESC.
		for i := 0; i < 5; i++ {
			_, err := ss.Create(ctx, repo.SessionInput{ID: fmt.Sprintf("l_%d", i), Source: "cron", StartedAt: models.Epoch(1767300000 + i%3)})
			require.NoError(t, err)
		}
		list, err := ss.List(ctx, repo.ListOptions{Source: "cron"})
		require.NoError(t, err)
		require.Equal(t, []string{"l_2", "l_4", "l_1", "l_3", "l_0"}, sessionIDs(list))
		list, err = ss.List(ctx, repo.ListOptions{Source: "cron", Limit: 2, Offset: 1})
		require.NoError(t, err)
		require.Equal(t, []string{"l_4", "l_1"}, sessionIDs(list))
		n, err := ss.Count(ctx, "")
		require.NoError(t, err)
		require.EqualValues(t, 8, n)
		n, err = ss.Count(ctx, "cron")
		require.NoError(t, err)
		require.EqualValues(t, 5, n)

		// The JSON of a session is the same dict on both hermesstatetest.Backends.
		b, err := json.Marshal(got)
		require.NoError(t, err)
		require.Contains(t, string(b), `"system_prompt":"You are Y"`)
	})
}

func sessionIDs(ss []models.Session) []string {
	out := make([]string, len(ss))
	for i := range ss {
		out[i] = ss[i].ID
	}
	return out
}

func TestContractMessages(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss, ms := st.Sessions(), st.Messages()
		_, err := ss.Create(ctx, repo.SessionInput{ID: "s1", Source: "cli"})
		require.NoError(t, err)

		id1, err := ms.Append(ctx, "s1", repo.MessageInput{Role: "user", Content: models.Text("hello <b>world</b>"), Timestamp: 1767225601.5})
		require.NoError(t, err)
		calls := models.MustJSON([]models.ToolCall{
			{ID: "c1", Type: "function", Function: models.ToolCallFunction{Name: "read", Arguments: `{"p": 1}`}},
			{ID: "c2", Type: "function", Function: models.ToolCallFunction{Name: "grep", Arguments: `{}`}},
		})
		id2, err := ms.Append(ctx, "s1", repo.MessageInput{Role: "assistant", ToolCalls: calls, Reasoning: models.Text("think")})
		require.NoError(t, err)
		ids, err := ms.AppendBatch(ctx, "s1", []repo.MessageInput{
			{Role: "tool", ToolCallID: "c1", ToolName: "read", Content: models.Text("file body")},
			{Role: "tool", ToolCallID: "c2", ToolName: "grep", Content: models.Text("")},
			{Role: "user", Parts: []any{map[string]any{"type": "text", "text": "look"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:x"}}}},
			{Role: "assistant", Content: models.Text("NUL \x00 and \uE000 and \uE000e kept")},
		})
		require.NoError(t, err)
		require.Len(t, ids, 4)
		all := append([]int64{id1, id2}, ids...)
		require.True(t, sort.SliceIsSorted(all, func(i, j int) bool { return all[i] < all[j] }), "ids increase: %v", all)

		list, err := ms.List(ctx, "s1")
		require.NoError(t, err)
		require.Len(t, list, 6)
		require.Equal(t, "hello <b>world</b>", *list[0].Content)
		require.Equal(t, models.Epoch(1767225601.5), list[0].Timestamp)
		require.Nil(t, list[1].Content)
		require.Equal(t, "", *list[3].Content)
		require.True(t, list[4].IsMultimodal())
		require.Equal(t, "look", list[4].ContentText())
		require.Equal(t, "NUL \x00 and \uE000 and \uE000e kept", *list[5].Content)
		require.NotNil(t, list[0].DisplayOrder)
		require.Equal(t, list[0].ID, *list[0].DisplayOrder)

		conv, err := ms.Conversation(ctx, "s1", repo.ConversationOptions{})
		require.NoError(t, err)
		require.Len(t, conv, 6)
		b, err := json.Marshal(conv)
		require.NoError(t, err)
		require.Contains(t, string(b), `"tool_call_id":"c1"`)
		require.Contains(t, string(b), `"content":[{"text":"look","type":"text"}`)

		s, err := ss.Get(ctx, "s1")
		require.NoError(t, err)
		require.EqualValues(t, 6, s.MessageCount)
		require.EqualValues(t, 2, s.ToolCallCount)
		n, err := ms.Count(ctx, "s1")
		require.NoError(t, err)
		require.EqualValues(t, 6, n)

		_, err = ms.Append(ctx, "missing", repo.MessageInput{Role: "user", Content: models.Text("x")})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		_, err = ms.List(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		_, err = ms.Append(ctx, "s1", repo.MessageInput{Role: "user", Content: models.Text("bad \xff")})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = ms.Append(ctx, "s1", repo.MessageInput{Role: ""})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)

		// A session ended by compression refuses appends.
		_, err = ss.End(ctx, "s1", "compression")
		require.NoError(t, err)
		_, err = ms.Append(ctx, "s1", repo.MessageInput{Role: "user", Content: models.Text("late")})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		n, err = ms.Count(ctx, "")
		require.NoError(t, err)
		require.EqualValues(t, 6, n)
	})
}

func TestContractUsage(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		cost := func(f float64) *float64 { return &f }
		// A report for a missing session creates it.
		require.NoError(t, ss.UpdateTokenCounts(ctx, "u1", repo.TokenUpdate{InputTokens: 100, OutputTokens: 10, APICallCount: 1,
			Model: "gpt-x", BillingProvider: "openai", EstimatedCostUSD: cost(0.25), Source: "telegram"}))
		require.NoError(t, ss.UpdateTokenCounts(ctx, "u1", repo.TokenUpdate{InputTokens: 50, CacheReadTokens: 5, APICallCount: 1,
			Model: "gpt-x", BillingProvider: "openai", EstimatedCostUSD: cost(0.5)}))
		require.NoError(t, ss.UpdateTokenCounts(ctx, "u1", repo.TokenUpdate{InputTokens: 7, APICallCount: 1,
			Model: "claude-y", BillingProvider: "anthropic", Task: "title"}))
		s, err := ss.Get(ctx, "u1")
		require.NoError(t, err)
		require.Equal(t, "telegram", s.Source)
		require.EqualValues(t, 157, s.InputTokens)
		require.EqualValues(t, 10, s.OutputTokens)
		require.EqualValues(t, 5, s.CacheReadTokens)
		require.EqualValues(t, 3, s.APICallCount)
		require.InDelta(t, 0.75, *s.EstimatedCostUSD, 1e-12)
		require.Equal(t, "gpt-x", *s.Model)
		require.Equal(t, "openai", *s.BillingProvider)

		rows, err := st.ModelUsage(ctx, "u1")
		require.NoError(t, err)
		require.Len(t, rows, 2)
		byTask := map[string]models.SessionModelUsage{}
		for _, r := range rows {
			byTask[r.Task] = r
		}
		main := byTask[""]
		require.Equal(t, "gpt-x", main.Model)
		require.EqualValues(t, 150, main.InputTokens)
		require.EqualValues(t, 2, main.APICallCount)
		require.InDelta(t, 0.75, main.EstimatedCostUSD, 1e-12)
		require.NotNil(t, main.FirstSeen)
		require.NotNil(t, main.LastSeen)
		require.GreaterOrEqual(t, float64(*main.LastSeen), float64(*main.FirstSeen))
		require.Equal(t, "claude-y", byTask["title"].Model)
		require.EqualValues(t, 7, byTask["title"].InputTokens)

		// Absolute totals replace the session's and write no usage row.
		require.NoError(t, ss.UpdateTokenCounts(ctx, "u1", repo.TokenUpdate{InputTokens: 1, OutputTokens: 2, Absolute: true}))
		s, err = ss.Get(ctx, "u1")
		require.NoError(t, err)
		require.EqualValues(t, 1, s.InputTokens)
		require.EqualValues(t, 2, s.OutputTokens)
		rows, err = st.ModelUsage(ctx, "u1")
		require.NoError(t, err)
		require.Len(t, rows, 2)
		fixturetest.RequireKind(t, ss.UpdateTokenCounts(ctx, "", repo.TokenUpdate{InputTokens: 1}), hs.ErrInvalid)
	})
}

// TestContractConcurrentWriters: goroutines appending to one session and
// reporting usage at once lose nothing and keep the counters exact.
func TestContractConcurrentWriters(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "hot", Source: "cli"})
		require.NoError(t, err)
		const workers, each = 6, 25
		var wg sync.WaitGroup
		errs := make(chan error, workers*each*2)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if _, err := st.Messages().Append(ctx, "hot", repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("w%d-%d", w, i))}); err != nil {
						errs <- err
					}
					if err := st.Sessions().UpdateTokenCounts(ctx, "hot", repo.TokenUpdate{InputTokens: 1, APICallCount: 1, Model: "m", BillingProvider: "p"}); err != nil {
						errs <- err
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		s, err := st.Sessions().Get(ctx, "hot")
		require.NoError(t, err)
		require.EqualValues(t, workers*each, s.MessageCount)
		require.EqualValues(t, workers*each, s.InputTokens)
		require.EqualValues(t, workers*each, s.APICallCount)
		list, err := st.Messages().List(ctx, "hot")
		require.NoError(t, err)
		require.Len(t, list, workers*each)
		// Each worker's messages are in its own order.
		last := map[string]int{}
		for _, m := range list {
			var w, i int
			_, err := fmt.Sscanf(*m.Content, "w%d-%d", &w, &i)
			require.NoError(t, err)
			k := fmt.Sprint(w)
			if prev, ok := last[k]; ok {
				require.Greater(t, i, prev)
			}
			last[k] = i
		}
		rows, err := st.ModelUsage(ctx, "hot")
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.EqualValues(t, workers*each, rows[0].InputTokens)
	})
}

func TestContractClosed(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		require.NoError(t, st.Close())
		_, err := st.Sessions().Get(ctx, "x")
		fixturetest.RequireKind(t, err, hs.ErrClosed)
		_, err = st.Messages().Append(ctx, "x", repo.MessageInput{Role: "user"})
		fixturetest.RequireKind(t, err, hs.ErrClosed)
	})
}

// TestContractExportCleanup: export → import round trip, delete, clear and
// prune give the same results on both hermesstatetest.Backends.
func TestContractExportCleanup(t *testing.T) {
	for _, b := range hermesstatetest.Backends {
		t.Run(string(b), func(t *testing.T) {
			st := hermesstatetest.Open(t, b, hs.Config{})
			ctx := fixturetest.Ctx(t)
			ss, ms, cl := st.Sessions(), st.Messages(), st.Cleanup()
			old := models.Epoch(1767225600)
			for _, id := range []string{"old1", "old2", "new1"} {
				at := old
				if id == "new1" {
					at = models.Now()
				}
				_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli", StartedAt: at, SystemPrompt: "p " + id})
				require.NoError(t, err)
				_, err = ms.AppendBatch(ctx, id, []repo.MessageInput{{Role: "user", Content: models.Text("hi " + id), Timestamp: at},
					{Role: "assistant", Content: models.Text("multi\x00modal-ish"), Timestamp: at}})
				require.NoError(t, err)
				if id != "new1" {
					_, err = ss.End(ctx, id, "user_exit")
					require.NoError(t, err)
				}
			}
			var buf bytes.Buffer
			n, err := st.Portability().WriteJSONL(ctx, &buf, repo.ExportFilter{}, nil, nil)
			require.NoError(t, err)
			require.EqualValues(t, 3, n)
			other := hermesstatetest.Open(t, b, hs.Config{})
			_, err = other.Portability().Import(ctx, bytes.NewReader(buf.Bytes()), nil)
			require.NoError(t, err)
			requireSameCounts(t, st, other)

			res, err := cl.Prune(ctx, repo.PruneOptions{OlderThan: 24 * time.Hour, DryRun: true})
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"old1", "old2"}, res.IDs)
			res, err = cl.Prune(ctx, repo.PruneOptions{OlderThan: 24 * time.Hour})
			require.NoError(t, err)
			require.EqualValues(t, 2, res.Deleted)
			n2, err := cl.ClearMessages(ctx, "new1")
			require.NoError(t, err)
			require.EqualValues(t, 2, n2)
			_, err = cl.Delete(ctx, "new1")
			require.NoError(t, err)
			counts, err := st.TableCounts(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 0, counts["sessions"])
			require.EqualValues(t, 0, counts["messages"])
			require.EqualValues(t, 0, counts["system_prompts"])
		})
	}
}

func requireSameCounts(t *testing.T, a, b *hs.Store) {
	t.Helper()
	ca, err := a.TableCounts(fixturetest.Ctx(t))
	require.NoError(t, err)
	cb, err := b.TableCounts(fixturetest.Ctx(t))
	require.NoError(t, err)
	delete(ca, "state_meta")
	delete(cb, "state_meta")
	require.Equal(t, ca, cb)
}

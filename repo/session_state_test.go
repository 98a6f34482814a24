package repo_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestLookupFixtures: search_sessions_by_id against what Hermes returned.
func TestLookupFixtures(t *testing.T) {
	checked := 0
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			ctx := fixturetest.Ctx(t)
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			for _, e := range f.ExtrasOf("search_sessions_by_id") {
				if string(e.Result) == "null" {
					continue
				}
				got, err := st.Lookup().SearchByID(ctx, e.Args[0].(string), repo.SearchByIDOptions{})
				require.NoError(t, err)
				want := fixturetest.ToAny(e.Result).([]any)
				require.Len(t, got, len(want))
				for i, w := range want {
					if d := fixturetest.JSONDiff("search_sessions_by_id", w, fixturetest.ToAny(got[i]), true); d != "" {
						t.Errorf("search_sessions_by_id(%v)[%d] differs:\n%s", e.Args, i, d)
					}
				}
				checked++
			}
		})
	}
	require.GreaterOrEqual(t, checked, 7, "search_sessions_by_id is recorded from v14 on")
}

func TestContractSessionState(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss, sst := st.Sessions(), st.SessionState()

		e, err := sst.Ensure(ctx, repo.SessionInput{ID: "e"})
		require.NoError(t, err)
		require.Equal(t, "unknown", e.Source)
		e, err = sst.Ensure(ctx, repo.SessionInput{ID: "e", Source: "telegram", Model: "m0"})
		require.NoError(t, err)
		require.Equal(t, "telegram", e.Source, "the placeholder source is replaced")

		_, err = ss.Create(ctx, repo.SessionInput{ID: "s", Source: "cli", Model: "m1", SystemPrompt: "Model: m1",
			ModelConfig: models.MustJSON(map[string]any{"_branched_from": "p", "browser_model_lock": map[string]any{"x": 1}, "temperature": 0.5})})
		require.NoError(t, err)
		got, err := ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "p", got.BranchedFrom, "markers are lifted out of model_config")
		b, _ := json.Marshal(got)
		require.Contains(t, string(b), `"_branched_from":"p"`)
		require.NotContains(t, string(b), `"_reset_from"`)

		// /model switch: model set, config merged, lock dropped, prompt gone.
		require.NoError(t, sst.UpdateModel(ctx, "s", "m2", "prov"))
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "m2", fixturetest.Deref(got.Model))
		require.Equal(t, `{"_branched_from": "p", "temperature": 0.5, "model": "m2", "provider": "prov"}`, string(got.ModelConfig))
		require.Nil(t, got.SystemPromptHash)
		counts, err := st.TableCounts(ctx)
		require.NoError(t, err)
		require.Zero(t, counts["system_prompts"], "the dropped prompt is collected")
		fixturetest.RequireKind(t, sst.UpdateModel(ctx, "missing", "m", ""), hs.ErrNotFound)

		require.NoError(t, sst.PatchModelConfig(ctx, "s", map[string]any{"temperature": nil, "yolo_mode": true}))
		v, ok, err := sst.ModelConfigValue(ctx, "s", "yolo_mode")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, true, v)
		_, ok, err = sst.ModelConfigValue(ctx, "s", "temperature")
		require.NoError(t, err)
		require.False(t, ok)
		_, ok, err = sst.ModelConfigValue(ctx, "missing", "x")
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, sst.UpdateMeta(ctx, "s", models.MustJSON(map[string]any{"a": "é"}), ""))
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, `{"a": "\u00e9"}`, string(got.ModelConfig))
		require.Equal(t, "m2", fixturetest.Deref(got.Model), "an empty model keeps the stored one")
		require.NoError(t, sst.UpdateMeta(ctx, "s", nil, "m3"))
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Nil(t, got.ModelConfig)
		require.Equal(t, "m3", fixturetest.Deref(got.Model))

		// cwd and git metadata generations.
		g1, err := sst.UpdateCwd(ctx, "s", "/w/a", "main", "/w", false)
		require.NoError(t, err)
		g2, err := sst.UpdateCwd(ctx, "s", "/w/a", "", "", false)
		require.NoError(t, err)
		require.Equal(t, g1+1, g2)
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "main", fixturetest.Deref(got.GitBranch), "the same cwd keeps known git values")
		ok, err = sst.PublishGitMetadata(ctx, "s", "/w/a", g1, "stale", "")
		require.NoError(t, err)
		require.False(t, ok, "an older generation cannot publish")
		ok, err = sst.PublishGitMetadata(ctx, "s", "/w/a", g2, "feature", "")
		require.NoError(t, err)
		require.True(t, ok)
		_, err = sst.UpdateCwd(ctx, "s", "/elsewhere", "", "", false)
		require.NoError(t, err)
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Nil(t, got.GitBranch, "a new cwd replaces the git values")
		_, err = sst.UpdateCwd(ctx, "s", "", "", "", false)
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = sst.UpdateCwd(ctx, "missing", "/x", "", "", false)
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		// tools[] pin.
		require.NoError(t, sst.UpdateToolNames(ctx, "s", []string{"terminal", "ré"}))
		var tn string
		hermesstatetest.QueryRow(t, st, `SELECT tool_names FROM sessions WHERE id = 's'`, nil, &tn)
		require.Equal(t, `["terminal", "r\u00e9"]`, tn)
		require.NoError(t, sst.UpdateToolNames(ctx, "s", nil))
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Nil(t, got.ToolNames)

		// Activity labels.
		wrote, err := sst.TouchActivity(ctx, "s", 1767000000, "  running a tool  ", "agent.compression")
		require.NoError(t, err)
		require.True(t, wrote)
		wrote, err = sst.TouchActivity(ctx, "s", 1766000000, "older", "")
		require.NoError(t, err)
		require.False(t, wrote, "never moves backwards")
		long := ""
		for len(long) < 200 {
			long += "abcdefghij"
		}
		_, err = sst.TouchActivity(ctx, "s", 1768000000, long, "made-up")
		require.NoError(t, err)
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, []rune(long[:119]+"…"), []rune(fixturetest.Deref(got.LastActivityDescription)))
		require.Equal(t, "unknown", fixturetest.Deref(got.LastActivityProvenance))
		require.NoError(t, sst.ClearActivityLabels(ctx, "s"))
		got, err = ss.Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "", fixturetest.Deref(got.LastActivityDescription))
		require.EqualValues(t, 1768000000, *got.LastActivityAt)
		require.NoError(t, sst.ClearActivityLabels(ctx, "missing"))
	})
}

func TestContractSessionLifecycle(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss, sst := st.Sessions(), st.SessionState()
		mk := func(id, parent, key string, started float64) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "telegram", ParentSessionID: parent, SessionKey: key, StartedAt: models.Epoch(started)})
			require.NoError(t, err)
		}
		generation := func() int64 {
			var g int64
			hermesstatetest.QueryRow(t, st, `SELECT COALESCE(MAX(generation), 0) FROM conversation_generations`, nil, &g)
			return g
		}

		// Promotion: live rows and recoverable ends only.
		mk("live", "", "k", 1700000000)
		ok, err := sst.PromoteToReset(ctx, "live", "")
		require.NoError(t, err)
		require.True(t, ok)
		require.EqualValues(t, 1, generation())
		ok, err = sst.PromoteToReset(ctx, "live", "idle")
		require.NoError(t, err)
		require.False(t, ok, "an explicit boundary is kept")
		mk("closed", "", "k", 1700000100)
		_, err = ss.End(ctx, "closed", "agent_close")
		require.NoError(t, err)
		ok, err = sst.PromoteToReset(ctx, "closed", "session_reset")
		require.NoError(t, err)
		require.True(t, ok)
		got, err := ss.Get(ctx, "closed")
		require.NoError(t, err)
		require.Equal(t, "session_reset", fixturetest.Deref(got.EndReason))
		require.EqualValues(t, 2, generation())
		ok, err = sst.PromoteToReset(ctx, "missing", "")
		require.NoError(t, err)
		require.False(t, ok)

		// A compression lineage is read/unread and un-archived as a unit.
		mk("root", "", "", 1700001000)
		_, err = ss.End(ctx, "root", "compression")
		require.NoError(t, err)
		mk("tip", "root", "", 1700001100)
		ok, err = sst.SetRead(ctx, "root", false)
		require.NoError(t, err)
		require.True(t, ok)
		got, err = ss.Get(ctx, "tip")
		require.NoError(t, err)
		require.EqualValues(t, 0, *got.LastReadAt)
		_, err = sst.SetRead(ctx, "tip", true)
		require.NoError(t, err)
		got, err = ss.Get(ctx, "root")
		require.NoError(t, err)
		require.Greater(t, float64(*got.LastReadAt), 1.7e9)

		_, err = st.Lineage().SetArchived(ctx, "root", true)
		require.NoError(t, err)
		ok, err = sst.UnarchiveRecoverable(ctx, "root")
		require.NoError(t, err)
		require.False(t, ok, "a deliberate archive stays (the tip is live)")
		_, err = ss.End(ctx, "tip", "ws_orphan_reap")
		require.NoError(t, err)
		ok, err = sst.UnarchiveRecoverable(ctx, "root")
		require.NoError(t, err)
		require.True(t, ok)
		got, err = ss.Get(ctx, "tip")
		require.NoError(t, err)
		require.Zero(t, got.Archived)
		require.Nil(t, got.EndReason, "the accidental end stamp is cleared")
		ok, err = sst.UnarchiveRecoverable(ctx, "missing")
		require.NoError(t, err)
		require.False(t, ok)

		// Bulk archive: ended, unarchived, unpinned, old enough.
		now := time.Unix(1700100000, 0)
		mk("old", "", "", 1700000500)
		_, err = ss.End(ctx, "old", "user_exit")
		require.NoError(t, err)
		hermesstatetest.Exec(t, st, `UPDATE sessions SET ended_at = 1700000600 WHERE id = 'old'`)
		mk("pinned", "", "", 1700000500)
		_, err = ss.End(ctx, "pinned", "user_exit")
		require.NoError(t, err)
		_, err = st.Lineage().SetPinned(ctx, "pinned", true)
		require.NoError(t, err)
		n, err := sst.ArchiveSessions(ctx, repo.ArchiveOptions{OlderThan: 24 * time.Hour, Now: now})
		require.NoError(t, err)
		require.Equal(t, 3, n, "old, live and closed (ended, idle a day) -- not pinned, not the open tip")
		got, err = ss.Get(ctx, "old")
		require.NoError(t, err)
		require.EqualValues(t, 1, got.Archived)
		n, err = sst.ArchiveSessions(ctx, repo.ArchiveOptions{OlderThan: 24 * time.Hour, Now: now})
		require.NoError(t, err)
		require.Zero(t, n, "idempotent")
		n, err = sst.ArchiveSessions(ctx, repo.ArchiveOptions{Source: "cron"})
		require.NoError(t, err)
		require.Zero(t, n)

		yes, err := sst.CountAtLeast(ctx, 6)
		require.NoError(t, err)
		require.True(t, yes)
		yes, err = sst.CountAtLeast(ctx, 100)
		require.NoError(t, err)
		require.False(t, yes)

		// Lifecycle statuses from the last message row.
		for _, id := range []string{"c1", "c2", "c3", "c4"} {
			mk(id, "", "", 1700002000)
		}
		calls := models.MustJSON([]map[string]any{{"id": "x"}})
		hermesstatetest.AppendAll(t, st, "c1", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("q")}, repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("a")})
		hermesstatetest.AppendAll(t, st, "c2", repo.MessageInput{Role: "assistant", ToolCalls: calls})
		hermesstatetest.AppendAll(t, st, "c3", repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("x"), FinishReason: fixturetest.Ptr(" Error ")})
		statuses, err := sst.LifecycleStatuses(ctx, []string{"c1", "c2", "c3", "c4", "missing", ""})
		require.NoError(t, err)
		require.Equal(t, map[string]string{"c1": "complete", "c2": "interrupted", "c3": "error", "c4": "empty", "missing": "empty"}, statuses)
	})
}

func TestContractLookupAndUsage(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		mk := func(id, parent, source, title string, started float64, mc models.JSON) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: source, ParentSessionID: parent, StartedAt: models.Epoch(started), ModelConfig: mc})
			require.NoError(t, err)
			if title != "" {
				_, err = st.Titles().Set(ctx, id, title)
				require.NoError(t, err)
			}
		}
		mk("abc_root", "", "cli", "AN-94 rollout", 1700000000, nil)
		hermesstatetest.AppendAll(t, st, "abc_root", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("start the rollout")})
		_, err := ss.End(ctx, "abc_root", "compression")
		require.NoError(t, err)
		mk("zzz_tip", "abc_root", "cli", "", 1700000100, nil)
		mk("abc", "", "cli", "", 1700000200, nil)
		mk("xabc", "", "cli", "", 1700000300, nil)
		mk("other", "", "telegram", "", 1700000400, nil)

		// id search: exact, then prefix, then substring; an old root id
		// finds its live tip.
		hits, err := st.Lookup().SearchByID(ctx, " ABC ", repo.SearchByIDOptions{})
		require.NoError(t, err)
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		require.Equal(t, []string{"abc", "zzz_tip", "xabc"}, ids)
		require.Equal(t, "abc_root", hits[1].LineageRootID)
		hits, err = st.Lookup().SearchByID(ctx, "tip", repo.SearchByIDOptions{})
		require.NoError(t, err)
		require.Len(t, hits, 1, "a chain member's id matches its root's row")
		hits, err = st.Lookup().SearchByID(ctx, "abc", repo.SearchByIDOptions{Limit: 1, Source: "cli"})
		require.NoError(t, err)
		require.Len(t, hits, 1)
		hits, err = st.Lookup().SearchByID(ctx, "  ", repo.SearchByIDOptions{})
		require.NoError(t, err)
		require.Empty(t, hits)

		// search_query matches titles, also without punctuation.
		rows, err := st.Listing().Rich(ctx, repo.RichOptions{SearchQuery: "an94", OrderByLastActive: true})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		require.Equal(t, "zzz_tip", rows[0].ID)
		rows, err = st.Listing().Rich(ctx, repo.RichOptions{SearchQuery: "Rollout", IDQuery: "xabc"})
		require.NoError(t, err)
		require.Empty(t, rows, "both filters must hold")

		// One enriched row; a cron job's runs.
		row, err := st.Lookup().RichRow(ctx, "abc_root")
		require.NoError(t, err)
		require.Equal(t, "abc_root", row.ID, "never projected")
		require.Equal(t, "start the rollout", row.Preview)
		_, err = st.Lookup().RichRow(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		for i, id := range []string{"cron_daily_20260101", "cron_daily_20260102", "cron_dailyx_20260103", "cron_weekly_1"} {
			mk(id, "", "cron", "", 1700010000+float64(i), nil)
		}
		mk("cron_daily_fake", "", "cli", "", 1700020000, nil)
		runs, err := st.Lookup().CronJobRuns(ctx, "daily", 0, 0)
		require.NoError(t, err)
		require.Len(t, runs, 2)
		require.Equal(t, "cron_daily_20260102", runs[0].ID)
		runs, err = st.Lookup().CronJobRuns(ctx, "daily", 1, 1)
		require.NoError(t, err)
		require.Equal(t, "cron_daily_20260101", runs[0].ID)
		_, err = st.Lookup().CronJobRuns(ctx, "", 0, 0)
		fixturetest.RequireKind(t, err, hs.ErrInvalid)

		// state_meta prefix listing.
		for _, k := range []string{"loop:a", "loop:b", "loop_x", "other"} {
			require.NoError(t, st.Meta().Set(ctx, k, "v-"+k))
		}
		kv, err := st.Meta().ListPrefix(ctx, "loop:")
		require.NoError(t, err)
		require.Equal(t, []repo.MetaEntry{{Key: "loop:a", Value: "v-loop:a"}, {Key: "loop:b", Value: "v-loop:b"}}, kv)
		kv, err = st.Meta().ListPrefix(ctx, "loop_")
		require.NoError(t, err)
		require.Len(t, kv, 1, "_ is literal")
		kv, err = st.Meta().ListPrefix(ctx, "")
		require.NoError(t, err)
		require.Empty(t, kv)

		// Usage: totals over roots, auxiliary usage over the lineage, the
		// recent route; auxiliary usage on a missing session.
		us := st.Usage()
		require.NoError(t, ss.UpdateTokenCounts(ctx, "abc_root", repo.TokenUpdate{InputTokens: 10, OutputTokens: 5, APICallCount: 1,
			Model: "m1", BillingProvider: "p1", EstimatedCostUSD: fixturetest.Ptr(0.5)}))
		require.NoError(t, ss.UpdateTokenCounts(ctx, "abc", repo.TokenUpdate{InputTokens: 1, APICallCount: 1, ActualCostUSD: fixturetest.Ptr(2.0)}))
		hermesstatetest.AppendAll(t, st, "abc", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("q")})
		tot, err := us.Totals(ctx, repo.TotalsOptions{})
		require.NoError(t, err)
		require.Equal(t, repo.Totals{Tokens: 16, CostUSD: 2.5}, tot)
		tot, err = us.Totals(ctx, repo.TotalsOptions{MinMessages: 5})
		require.NoError(t, err)
		require.Zero(t, tot.Tokens)
		tot, err = us.Totals(ctx, repo.TotalsOptions{MinMessages: -1})
		require.NoError(t, err)
		require.EqualValues(t, 16, tot.Tokens)

		require.NoError(t, us.RecordAuxiliary(ctx, "abc_root", repo.AuxUsage{Task: "vision", InputTokens: 3}))
		require.NoError(t, us.RecordAuxiliary(ctx, "zzz_tip", repo.AuxUsage{Task: "vision", InputTokens: 4, APICallCount: 2}))
		require.NoError(t, us.RecordAuxiliary(ctx, "zzz_tip", repo.AuxUsage{Task: "title_generation", OutputTokens: 1}))
		aux, err := us.AuxiliaryByTask(ctx, "zzz_tip")
		require.NoError(t, err)
		require.Equal(t, repo.AuxTotals{APICalls: 3, TokenCounts: repo.TokenCounts{InputTokens: 7}}, aux["vision"])
		require.EqualValues(t, 1, aux["title_generation"].OutputTokens)
		mk("br", "zzz_tip", "cli", "", 1700000500, models.MustJSON(map[string]any{"_branched_from": "zzz_tip"}))
		require.NoError(t, us.RecordAuxiliary(ctx, "br", repo.AuxUsage{Task: "vision", InputTokens: 100}))
		aux, err = us.AuxiliaryByTask(ctx, "br")
		require.NoError(t, err)
		require.EqualValues(t, 100, aux["vision"].InputTokens, "a branch owns its spend")

		route, err := us.RecentModelRoute(ctx, "abc_root")
		require.NoError(t, err)
		require.Equal(t, &repo.ModelRoute{Model: "m1", BillingProvider: "p1", APICallCount: 1}, route)
		route, err = us.RecentModelRoute(ctx, "abc")
		require.NoError(t, err)
		require.Nil(t, route, "no known model or provider")

		require.NoError(t, us.RecordAuxiliary(ctx, "fresh", repo.AuxUsage{Task: "vision"}))
		ph, err := ss.Get(ctx, "fresh")
		require.NoError(t, err)
		require.Equal(t, "unknown", ph.Source, "a placeholder row, as Hermes")
	})
}

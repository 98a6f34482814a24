package repo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

func TestUsageFresh(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		ss, us := st.Sessions(), st.Usage()
		_, err := ss.Create(ctx, repo.SessionInput{ID: "a", Source: "cli"})
		require.NoError(t, err)
		_, err = ss.Create(ctx, repo.SessionInput{ID: "b", Source: "telegram"})
		require.NoError(t, err)
		cost := 0.5
		require.NoError(t, ss.UpdateTokenCounts(ctx, "a", repo.TokenUpdate{InputTokens: 100, OutputTokens: 10, APICallCount: 1, Model: "m1", BillingProvider: "p", EstimatedCostUSD: &cost}))
		require.NoError(t, ss.UpdateTokenCounts(ctx, "a", repo.TokenUpdate{InputTokens: 50, OutputTokens: 5, APICallCount: 1, Model: "m1", BillingProvider: "p"}))
		require.NoError(t, ss.UpdateTokenCounts(ctx, "b", repo.TokenUpdate{InputTokens: 1000, OutputTokens: 1, APICallCount: 1, Model: "m2", BillingProvider: "q"}))
		// Auxiliary work: attribution rows only.
		require.NoError(t, us.RecordAuxiliary(ctx, "a", repo.AuxUsage{Task: "title_generation", Model: "small", InputTokens: 7, EstimatedCostUSD: 0.01}))
		require.NoError(t, us.RecordAuxiliary(ctx, "a", repo.AuxUsage{Task: "title_generation", Model: "small", InputTokens: 3}))
		require.ErrorIs(t, us.RecordAuxiliary(ctx, "a", repo.AuxUsage{Model: "small"}), hs.ErrInvalid)
		a, err := ss.Get(ctx, "a")
		require.NoError(t, err)
		require.EqualValues(t, 150, a.InputTokens, "session totals untouched by auxiliary usage")
		require.EqualValues(t, 2, a.APICallCount)
		rows, err := us.Rows(ctx, "a")
		require.NoError(t, err)
		require.Len(t, rows, 2)
		for _, r := range rows {
			switch r.Task {
			case "":
				require.Equal(t, "m1", r.Model)
				require.EqualValues(t, 150, r.InputTokens)
				require.EqualValues(t, 2, r.APICallCount)
			case "title_generation":
				require.Equal(t, "small", r.Model)
				require.EqualValues(t, 10, r.InputTokens)
				require.EqualValues(t, 2, r.APICallCount)
				require.InDelta(t, 0.01, r.EstimatedCostUSD, 1e-12)
				require.NotNil(t, r.FirstSeen)
			default:
				t.Fatalf("unexpected task %q", r.Task)
			}
		}
		bm, err := us.ByModel(ctx, repo.StatsFilter{})
		require.NoError(t, err)
		require.Equal(t, []string{"m2", "m1", "small"}, []string{bm[0].Model, bm[1].Model, bm[2].Model})
		require.EqualValues(t, 150, bm[1].InputTokens)
		bm, err = us.ByModel(ctx, repo.StatsFilter{Source: "cli"})
		require.NoError(t, err)
		require.Len(t, bm, 2)
		bs, err := us.BySource(ctx, repo.StatsFilter{})
		require.NoError(t, err)
		require.Len(t, bs, 2)
		top, err := us.TopSessions(ctx, 1, repo.StatsFilter{})
		require.NoError(t, err)
		require.Equal(t, "b", top[0].ID)
		require.EqualValues(t, 1001, top[0].TotalTokens)
	})
}

// The stats agree with the fixture's recorded totals.
func TestUsageFixtures(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			bs, err := st.Usage().BySource(ctx, repo.StatsFilter{})
			require.NoError(t, err)
			want := map[string][2]int64{} // source → sessions, input tokens
			for _, raw := range f.Sessions {
				var s struct {
					Source      string `json:"source"`
					InputTokens int64  `json:"input_tokens"`
				}
				require.NoError(t, json.Unmarshal(raw, &s))
				w := want[s.Source]
				want[s.Source] = [2]int64{w[0] + 1, w[1] + s.InputTokens}
			}
			got := map[string][2]int64{}
			for _, x := range bs {
				got[x.Source] = [2]int64{x.Sessions, x.InputTokens}
			}
			if f.SchemaVersion < 16 {
				// Step 16 re-labels the delegate child's source as subagent.
				return
			}
			require.Equal(t, want, got)
			if f.SchemaVersion < 20 {
				return // no attribution rows before v20 (the upgrade backfills them)
			}
			var usageIn int64
			for _, r := range f.Rows["session_model_usage"] {
				usageIn += int64(r["input_tokens"].(float64))
			}
			bm, err := st.Usage().ByModel(ctx, repo.StatsFilter{})
			require.NoError(t, err)
			var gotIn int64
			for _, m := range bm {
				gotIn += m.InputTokens
			}
			require.Equal(t, usageIn, gotIn)
		})
	}
}

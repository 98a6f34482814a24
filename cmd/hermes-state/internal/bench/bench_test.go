package bench

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPctlMatchesPython: the nearest-rank percentile and the median are
// bench_hermes.py's (values computed with its pctl and statistics.median,
// Python's round-half-to-even included).
func TestPctlMatchesPython(t *testing.T) {
	for _, c := range []struct{ n, p95, p99, p50 int }{
		{1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 2}, {5, 5, 5, 3}, {10, 10, 10, 6}, {30, 29, 30, 16}, {31, 30, 31, 16},
		{100, 96, 100, 50}, {2000, 1900, 1980, 1000},
	} {
		xs := make([]float64, c.n)
		for i := range xs {
			xs[i] = float64(i + 1)
		}
		require.EqualValues(t, c.p95, pctl(xs, 95), "n=%d", c.n)
		require.EqualValues(t, c.p99, pctl(xs, 99), "n=%d", c.n)
		require.EqualValues(t, c.p50, pctl(xs, 50), "n=%d", c.n)
	}
	require.Equal(t, 2.5, median([]float64{1, 2, 3, 4}))
	require.Equal(t, 3.0, median([]float64{1, 3, 9}))
}

// TestGeneratedCorpus: the built-in corpus is in bench_hermes.py's format
// (meta line, sets, session and message lines) with the requested sizes,
// and is the same for the same seed.
func TestGeneratedCorpus(t *testing.T) {
	dir := t.TempDir()
	o := GenOptions{Sessions: 40, PerSession: 12, LongN: 30, AppendN: 20, AppendSessions: 2}
	a, err := GenerateCorpus(filepath.Join(dir, "a.jsonl"), o)
	require.NoError(t, err)
	b, err := GenerateCorpus(filepath.Join(dir, "b.jsonl"), o)
	require.NoError(t, err)
	require.Equal(t, a.SHA256, b.SHA256, "same seed, same corpus")
	require.Equal(t, 41, a.Sessions)
	require.Equal(t, 40*12+30, a.Messages)
	require.Equal(t, a.Messages, a.ByRole["user"]+a.ByRole["assistant"]+a.ByRole["tool"])
	require.Positive(t, a.ToolCallMessages)
	sets, err := corpusMeta(filepath.Join(dir, "a.jsonl"))
	require.NoError(t, err)
	require.Equal(t, map[string][2]int{"store": {40, 12}, "long": {1, 30}, "append": {2, 10}}, sets)
	set, err := loadAppendSet(filepath.Join(dir, "a.jsonl"))
	require.NoError(t, err)
	require.Len(t, set.sessions, 2)
	require.Len(t, set.order, 20)
	require.Equal(t, set.sessions[0].ID, set.order[0].SessionID, "round robin")
	require.Equal(t, set.sessions[1].ID, set.order[1].SessionID, "round robin")
	for _, m := range set.order {
		if m.HasToolCalls() {
			var calls []map[string]any
			require.NoError(t, json.Unmarshal(m.ToolCalls, &calls))
			require.NotEmpty(t, calls)
		}
	}
	long, err := longSessionID(filepath.Join(dir, "a.jsonl"))
	require.NoError(t, err)
	require.Contains(t, long, "_long")
	_, err = Stats(filepath.Join(dir, "missing.jsonl"))
	require.Error(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.jsonl"), []byte("{\"type\": \"meta\"}\n{not json\n"), 0o644))
	_, err = Stats(filepath.Join(dir, "bad.jsonl"))
	require.Error(t, err)
}

// TestRunInProcess runs every phase but conc in this process on a tiny
// corpus: the figures are there and consistent with the corpus (no timing
// is asserted).
func TestRunInProcess(t *testing.T) {
	ctx := context.Background()
	doc, err := Run(ctx, Options{WorkDir: t.TempDir(), Gen: GenOptions{Sessions: 30, PerSession: 10, LongN: 40, AppendN: 30, AppendSessions: 3},
		Phases: []string{"append", "append_diag", "build", "search", "listing"}, Reps: 2, Warmup: 1, DiagN: 10})
	require.NoError(t, err)
	require.Len(t, doc.Runs, 1)
	r := doc.Runs[0]
	require.Equal(t, 30, r.Append.Messages)
	require.Equal(t, 30, r.Append.Latency.N)
	require.Positive(t, r.Append.CPUUSPerMessage)
	require.NotNil(t, r.Append.RawSQL)
	require.Equal(t, "wal", r.Append.JournalMode)
	require.Equal(t, 10, r.AppendDiag.APISyncFull.Messages)
	require.NotContains(t, r.AppendDiag.APISyncNormalNoFTSTriggers.RemainingTriggers, "messages_fts_insert")
	require.Contains(t, r.AppendDiag.APISyncNormalNoFTSTriggers.RemainingTriggers, "messages_display_order_insert")
	require.Equal(t, 31, r.Build.Sessions)
	require.EqualValues(t, 31, r.Build.Counts["sessions"])
	require.EqualValues(t, 30*10+40, r.Build.Counts["messages"])
	require.EqualValues(t, 30*10+40, r.Build.Counts["messages_fts_docsize_rows"])
	require.Contains(t, r.Build.LongSessionID, "_long")
	require.Len(t, r.Search.Queries, len(Queries))
	for name, q := range r.Search.Queries {
		require.LessOrEqual(t, q.ResultsReturned, 20, name)
		require.GreaterOrEqual(t, q.MatchingRows, q.ResultsReturned, name)
		require.Len(t, q.Top20IDs, q.ResultsReturned, name)
		require.NotEmpty(t, q.Path, name)
		require.NotNil(t, q.RawSQLMedianMS, name)
	}
	require.EqualValues(t, 340, r.Search.MessagesInStore)
	require.EqualValues(t, 40, r.Listing.LongSessionMessages)
	require.Equal(t, 20, *r.Listing.ListStarted.Rows)
	require.True(t, *r.Listing.ListStarted.HasPreview)
	require.Equal(t, 20, *r.Listing.ListLastActive.Rows)
	require.Equal(t, 40, *r.Listing.Conversation.Messages)
	require.Equal(t, 40, *r.Listing.Export.Messages)
	require.Positive(t, *r.Listing.Export.JSONBytes)
	require.Len(t, r.Listing.RawSQL, 5)
	require.NotEmpty(t, r.StoreFileBytesEnd)

	_, err = Run(ctx, Options{WorkDir: t.TempDir(), Phases: []string{"conc"}})
	require.ErrorContains(t, err, "worker processes")
	_, err = Run(ctx, Options{WorkDir: t.TempDir(), Phases: []string{"search"}})
	require.ErrorContains(t, err, "build phase")
	_, err = Run(ctx, Options{WorkDir: t.TempDir(), Phases: []string{"nope"}})
	require.ErrorContains(t, err, "unknown phase")
}

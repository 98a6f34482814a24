package hermesstate_test

import (
	"context"
	"os"
	"testing"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/repo"
)

// corpusQueries are bench_hermes.py's 11 search queries (same names).
var corpusQueries = []struct{ name, q string }{
	{"common_word", "docker"},
	{"rare_word", "kubeconfig"},
	{"two_words", "docker deployment"},
	{"phrase", `"connection refused"`},
	{"prefix", "deplo*"},
	{"trigram_substring", "youer服务端"},
	{"cjk_2char", "桂林"},
	{"cjk_3plus", "服务端配置"},
	{"japanese", "データベース"},
	{"japanese_2char", "検索"},
	{"latin_substring", "ployment"},
}

// BenchmarkSearchCorpus runs bench_hermes.py's 11 queries (limit 20) on a
// store built from the shared corpus (HERMESSTATE_BENCH_STORE: the store a
// `hermes-state bench --phases build --keep` run leaves, or any copy), through
// the API and, as the floor, as Hermes' own statements (the route's main
// statement, then the context statement for the hits) on a raw connection
// of the same engine. The file is opened read-only by both.
//
//	HERMESSTATE_BENCH_STORE=/path/state.db go test -run XXX -bench SearchCorpus -benchtime 30x -benchmem .
func BenchmarkSearchCorpus(b *testing.B) {
	path := os.Getenv("HERMESSTATE_BENCH_STORE")
	if path == "" {
		b.Skip("HERMESSTATE_BENCH_STORE is not set (a store built from ../shared/bench's corpus)")
	}
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: path, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	raw, err := sqlitex.OpenEnv(path + "?_pragma=query_only(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	timed := func(b *testing.B, f func()) {
		f()
		var lat []time.Duration
		b.ResetTimer()
		c0 := cpuMS()
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			f()
			lat = append(lat, time.Since(t0))
		}
		b.ReportMetric((cpuMS()-c0)/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(pct(lat, 0.95).Microseconds())/1000, "p95-ms")
	}
	for _, q := range corpusQueries {
		res, err := st.Search().Run(ctx, q.q, repo.SearchOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(q.name+"/api", func(b *testing.B) {
			timed(b, func() {
				if _, err := st.Search().Messages(ctx, q.q, repo.SearchOptions{}); err != nil {
					b.Fatal(err)
				}
			})
		})
		var main ftsql.Query
		raws := ftsql.StripQuotes(res.Sanitized)
		switch res.Route {
		case repo.RouteWord:
			main = ftsql.MatchQuery(ftsql.WordTable, res.Sanitized, "", 20, 0, ftsql.Filters{})
		case repo.RouteTrigram:
			main = ftsql.MatchQuery(ftsql.TrigramTable, ftsql.QuoteTokens(raws), "", 20, 0, ftsql.Filters{})
		case repo.RouteWordRetry:
			main = ftsql.MatchQuery(ftsql.TrigramTable, ftsql.QuoteTokens(raws), "", 20, 0, ftsql.Filters{})
		default: // Hermes' LIKE scan
			main = ftsql.CJKLikeQuery(raws, 20, 0, ftsql.Filters{})
		}
		b.Run(q.name+"/hermes_sql", func(b *testing.B) {
			timed(b, func() {
				rows, err := raw.QueryContext(ctx, main.SQL, main.Args...)
				if err != nil {
					b.Fatal(err)
				}
				var ids []any
				for rows.Next() {
					var id int64
					var a, c2, d, e, f, g, h, i any
					if err := rows.Scan(&id, &a, &c2, &d, &e, &f, &g, &h, &i); err != nil {
						b.Fatal(err)
					}
					ids = append(ids, id)
				}
				rows.Close()
				if len(ids) == 0 {
					return
				}
				crow, err := raw.QueryContext(ctx, ftsql.ContextSQL(len(ids)), ids...)
				if err != nil {
					b.Fatal(err)
				}
				for crow.Next() {
				}
				crow.Close()
			})
		})
	}
}

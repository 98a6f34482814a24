package hermesstate_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

var pgBenchWords = strings.Fields(`the deployment kubernetes docker pod crash loop backoff config yaml service ingress
network timeout retry database migration schema index query latency cache redis queue worker
python golang rust compile error warning test suite coverage branch merge commit release
gateway telegram discord session token budget model prompt context summary agent tool terminal`)

var pgBenchCJK = []string{"广西桂林的山水很美", "修改服务端配置文件", "検索エンジンの設定", "トライグラム索引の検証", "旅游计划和预算"}

// pgBenchText returns a deterministic message of 12-40 words, one in 20 with
// a CJK sentence.
func pgBenchText(r *rand.Rand) string {
	n := 12 + r.IntN(28)
	w := make([]string, n)
	for i := range w {
		w[i] = pgBenchWords[r.IntN(len(pgBenchWords))]
	}
	if r.IntN(20) == 0 {
		w = append(w, pgBenchCJK[r.IntN(len(pgBenchCJK))])
	}
	return strings.Join(w, " ")
}

// pgSeedBench writes sessions × perSession messages (batches of one session).
func pgSeedBench(b testing.TB, st *hs.Store, sessions, perSession int) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	base := 1767225600.0
	for s := 0; s < sessions; s++ {
		id := fmt.Sprintf("bench_%05d", s)
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: []string{"cli", "telegram", "discord"}[s%3], StartedAt: models.Epoch(base + float64(s)*60)})
		require.NoError(b, err)
		batch := make([]repo.MessageInput, perSession)
		for i := range batch {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			batch[i] = repo.MessageInput{Role: role, Content: models.Text(pgBenchText(r)), Timestamp: models.Epoch(base + float64(s)*60 + float64(i))}
		}
		_, err = st.Messages().AppendBatch(ctx, id, batch)
		require.NoError(b, err)
	}
}

func pgPct(d []time.Duration, p float64) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(float64(len(d)-1)*p)].Microseconds())
}

// BenchmarkPostgresVsSQLite200k: append and search latency on a store of
// 200,000 messages (2,000 sessions × 100), SQLite file vs PostgreSQL schema,
// in the same run. Needs HERMESSTATE_PG_DSN. The PostgreSQL schema is
// analyzed after the seed (autovacuum's job, which would otherwise run at
// some point during the measurement). Run:
//
//	go test -run '^$' -bench PostgresVsSQLite200k -benchtime 200x .
func BenchmarkPostgresVsSQLite200k(b *testing.B) {
	const sessions, per = 2000, 100
	for _, backend := range []string{"sqlite", "postgres"} {
		ctx := context.Background()
		var cfg hs.Config
		if backend == "sqlite" {
			cfg.Path = filepath.Join(b.TempDir(), "state.db")
		} else {
			dsn, schema := pgtest.Schema(b)
			cfg.DSN, cfg.Schema = dsn, schema
		}
		st, err := hs.Open(ctx, cfg)
		require.NoError(b, err)
		start := time.Now()
		pgSeedBench(b, st, sessions, per)
		b.Logf("%s: seeded %d messages in %s", backend, sessions*per, time.Since(start).Round(time.Millisecond))
		if backend == "postgres" {
			// What autovacuum does within a minute of a bulk load: without
			// statistics the planner takes the fresh tables for empty ones
			// (the 5-character CJK query's plan then ANDs a bitmap of every
			// active message: 365 ms instead of 77 ms).
			pgtest.Exec(b, hermesstatetest.PostgresDSN(b, st), "ANALYZE messages, sessions, hs_messages_fts")
		}
		r := rand.New(rand.NewPCG(3, 4))
		b.Run(backend+"/append", func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("bench_%05d", r.IntN(sessions))
				t0 := time.Now()
				_, err := st.Messages().Append(ctx, id, repo.MessageInput{Role: "user", Content: models.Text(pgBenchText(r))})
				lat = append(lat, time.Since(t0))
				require.NoError(b, err)
			}
			b.ReportMetric(pgPct(lat, 0.5), "p50-µs")
			b.ReportMetric(pgPct(lat, 0.99), "p99-µs")
		})
		for _, q := range []struct{ name, query string }{
			{"search-word", "kubernetes timeout"}, {"search-phrase", `"crash loop"`}, {"search-prefix", "deploy*"},
			{"search-rare-and", "redis AND gateway AND coverage"}, {"search-cjk2", "桂林"}, {"search-cjk4", "服务端配置"},
		} {
			b.Run(backend+"/"+q.name, func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				var hits int
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					res, err := st.Search().Run(ctx, q.query, repo.SearchOptions{})
					lat = append(lat, time.Since(t0))
					require.NoError(b, err)
					hits = len(res.Hits)
				}
				b.ReportMetric(pgPct(lat, 0.5), "p50-µs")
				b.ReportMetric(pgPct(lat, 0.99), "p99-µs")
				b.ReportMetric(float64(hits), "hits")
			})
		}
		require.NoError(b, st.Close())
	}
}

package hermesstate_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// Search benchmarks on a synthetic store (HERMESSTATE_BENCH_N messages,
// default 200,000): 2,000-word Latin vocabulary, ~10% Chinese and ~3%
// Japanese messages, a planted phrase and CJK terms. The file is built once
// per N under the temp dir and reused by later runs.
//
//	go test -run XXX -bench BenchmarkSearch -benchtime 200x .

func benchN() int {
	if v, err := strconv.Atoi(os.Getenv("HERMESSTATE_BENCH_N")); err == nil && v > 0 {
		return v
	}
	return 200_000
}

var syll = []string{"ka", "lo", "mi", "ren", "sa", "tor", "vel", "un", "bri", "dax", "el", "fon", "gu", "hal", "jo", "ni", "pe", "qua", "ru", "zy"}

func benchWord(r *rand.Rand) string {
	// Zipf-ish: low ids are common.
	id := int(r.ExpFloat64() * 300)
	if id >= 2000 {
		id %= 2000
	}
	return syll[id%20] + syll[(id/20)%20] + syll[(id/400)%20]
}

const zhPool = "我想去旅游推荐一下路线到阳朔可以坐船游漓江大约四个小时修改服务端的配置文件天气很好今天明天数据库查询性能优化系统日志错误"
const jaPool = "日本語のテキスト検索はトライグラムで動きますエンジン設定を確認してください東京大阪天気"

func benchText(r *rand.Rand, i int) string {
	switch k := r.Intn(100); {
	case k < 10:
		zh := []rune(zhPool)
		var b strings.Builder
		for j := 0; j < 20+r.Intn(30); j++ {
			b.WriteRune(zh[r.Intn(len(zh))])
		}
		if i%97 == 0 {
			b.WriteString("去广西桂林看看")
		}
		return b.String()
	case k < 13:
		ja := []rune(jaPool)
		var b strings.Builder
		for j := 0; j < 20+r.Intn(30); j++ {
			b.WriteRune(ja[r.Intn(len(ja))])
		}
		return b.String()
	}
	n := 10 + r.Intn(40)
	w := make([]string, n)
	for j := range w {
		w[j] = benchWord(r)
	}
	if i%200 == 0 {
		w[r.Intn(n)] = "docker image"
	}
	if i%50 == 0 {
		w[r.Intn(n)] = "deployment"
	}
	return strings.Join(w, " ")
}

// benchStore returns the path of a built store with n messages.
func benchStore(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hermesstate-bench-search-%d.db", n))
	return cachedBenchFile(b, path, func(tmp string) { buildSearchStore(b, tmp, n) })
}

// buildSearchStore writes the synthetic search corpus of n messages to path.
func buildSearchStore(b *testing.B, path string, n int) {
	ctx := context.Background()
	start := time.Now()
	st, err := hs.Open(ctx, hs.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewSource(42))
	const perSession = 100
	sources := []string{"cli", "telegram", "discord", "cron"}
	for i := 0; i < n; i += perSession {
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: sources[(i/perSession)%len(sources)], Model: "bench/model"})
		if err != nil {
			b.Fatal(err)
		}
		batch := make([]repo.MessageInput, 0, perSession)
		for j := i; j < min(i+perSession, n); j++ {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			batch = append(batch, repo.MessageInput{Role: role, Content: models.Text(benchText(r, j)), Timestamp: models.Epoch(1.7e9 + float64(j))})
		}
		if _, err := st.Messages().AppendBatch(ctx, s.ID, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d messages in %s", n, time.Since(start).Round(time.Second))
}

type benchQuery struct {
	name, query string
	route       repo.Route
	// raw is the same main statement as plain SQL on the same driver.
	raw  string
	args []any
	// prep, when set, computes args before each raw run (the CJK index:
	// reading and decoding the postings is part of the work).
	prep func(ctx context.Context, db *sql.DB) ([]any, error)
}

// rawPostings returns the ids of term's postings as a JSON array, read and
// decoded as the CJK index route does.
func rawPostings(ctx context.Context, db *sql.DB, term string) (string, error) {
	rows, err := db.QueryContext(ctx, "SELECT ids FROM "+ftsql.CJKIndexTable+" WHERE term = ?", term)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return "", err
		}
		ids, _ = ftsql.DecodePostings(ids, b)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	return "[" + strings.Join(parts, ",") + "]", rows.Err()
}

func cjkPrep(term string, rest ...any) func(ctx context.Context, db *sql.DB) ([]any, error) {
	return func(ctx context.Context, db *sql.DB) ([]any, error) {
		list, err := rawPostings(ctx, db, term)
		if err != nil {
			return nil, err
		}
		return append([]any{rest[0], list}, rest[1:]...), nil
	}
}

const rawMatch = `SELECT m.id, m.session_id, m.role, snippet(%[1]s, -1, '>>>', '<<<', '...', 40), m.timestamp, m.tool_name, s.source, s.model, s.started_at
FROM %[1]s JOIN messages m ON m.id = %[1]s.rowid JOIN sessions s ON s.id = m.session_id
WHERE %[1]s MATCH ? AND (m.active = 1 OR m.compacted = 1) ORDER BY rank LIMIT 20`

var benchQueries = []benchQuery{
	{"word", "kalomi", repo.RouteWord, fmt.Sprintf(rawMatch, "messages_fts"), []any{"kalomi"}, nil},
	{"phrase", `"docker image"`, repo.RouteWord, fmt.Sprintf(rawMatch, "messages_fts"), []any{`"docker image"`}, nil},
	{"prefix", "deploy*", repo.RouteWord, fmt.Sprintf(rawMatch, "messages_fts"), []any{"deploy*"}, nil},
	{"trigram_cjk3", "广西桂林", repo.RouteTrigram, fmt.Sprintf(rawMatch, "messages_fts_trigram"), []any{`"广西桂林"`}, nil},
	{"cjk2_index", "桂林", repo.RouteCJKIndex, `SELECT m.id, m.session_id, m.role, substr(m.content, max(1, instr(m.content, ?) - 40), 120), m.timestamp, m.tool_name, s.source, s.model, s.started_at
FROM (SELECT value AS id FROM json_each(?)) c CROSS JOIN messages m ON m.id = c.id JOIN sessions s ON s.id = m.session_id
WHERE m.content LIKE ? AND (m.active = 1 OR m.compacted = 1) ORDER BY m.timestamp DESC LIMIT 20`, nil, cjkPrep("桂林", "桂林", "%桂林%")},
	// A 2-character term no message contains: the index answers at once,
	// the LIKE scan reads every row (Hermes' worst case).
	{"cjk2_absent_index", "熊猫", repo.RouteCJKIndex, `SELECT m.id FROM (SELECT value AS id FROM json_each(?)) c CROSS JOIN messages m ON m.id = c.id WHERE m.content LIKE ? ORDER BY m.timestamp DESC LIMIT 20`, nil,
		func(ctx context.Context, db *sql.DB) ([]any, error) {
			list, err := rawPostings(ctx, db, "熊猫")
			return []any{list, "%熊猫%"}, err
		}},
	{"cjk2_absent_like_scan_hermes", "熊猫", "", `SELECT m.id, m.session_id, m.role, substr(m.content, max(1, instr(m.content, ?) - 40), 120), m.timestamp, m.tool_name, s.source, s.model, s.started_at
FROM messages m JOIN sessions s ON s.id = m.session_id
WHERE (m.content LIKE ? ESCAPE '\' OR m.tool_name LIKE ? ESCAPE '\' OR m.tool_calls LIKE ? ESCAPE '\') AND (m.active = 1 OR m.compacted = 1) AND COALESCE(m.display_kind, '') <> 'hidden'
ORDER BY m.timestamp DESC LIMIT 20`, []any{"熊猫", "%熊猫%", "%熊猫%", "%熊猫%"}, nil},
	// Hermes' route for the same query without a CJK index: a LIKE scan.
	{"cjk2_like_scan_hermes", "桂林", "", `SELECT m.id, m.session_id, m.role, substr(m.content, max(1, instr(m.content, ?) - 40), 120), m.timestamp, m.tool_name, s.source, s.model, s.started_at
FROM messages m JOIN sessions s ON s.id = m.session_id
WHERE (m.content LIKE ? ESCAPE '\' OR m.tool_name LIKE ? ESCAPE '\' OR m.tool_calls LIKE ? ESCAPE '\') AND (m.active = 1 OR m.compacted = 1) AND COALESCE(m.display_kind, '') <> 'hidden'
ORDER BY m.timestamp DESC LIMIT 20`, []any{"桂林", "%桂林%", "%桂林%", "%桂林%"}, nil},
}

func pct(d []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func BenchmarkSearch(b *testing.B) {
	n := benchN()
	path := benchStore(b, n)
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	raw, err := sqlitex.OpenEnv(path + "?_pragma=query_only(1)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	for _, q := range benchQueries {
		if q.route != "" {
			res, err := st.Search().Run(ctx, q.query, repo.SearchOptions{})
			if err != nil {
				b.Fatal(err)
			}
			if res.Route != q.route {
				b.Fatalf("%s: route %s, want %s", q.name, res.Route, q.route)
			}
			if len(res.Hits) == 0 && !strings.Contains(q.name, "absent") {
				b.Fatalf("%s: no hits", q.name)
			}
			b.Run(q.name+"/api", func(b *testing.B) {
				var lat []time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					if _, err := st.Search().Messages(ctx, q.query, repo.SearchOptions{}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(t0))
				}
				b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(pct(lat, 0.95).Microseconds())/1000, "p95-ms")
			})
		}
		if q.route == repo.RouteWord {
			// The exact statement the API runs (ftsql.MatchQuery), on the raw
			// connection: separates the SQL cost from the Go-side overhead.
			mq := ftsql.MatchQuery(ftsql.WordTable, fts.Sanitize(q.query), "", 20, 0, ftsql.Filters{})
			b.Run(q.name+"/raw_sql_api_statement", func(b *testing.B) {
				var lat []time.Duration
				for i := 0; i < b.N; i++ {
					t0 := time.Now()
					rows, err := raw.QueryContext(ctx, mq.SQL, mq.Args...)
					if err != nil {
						b.Fatal(err)
					}
					for rows.Next() {
					}
					rows.Close()
					lat = append(lat, time.Since(t0))
				}
				b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(pct(lat, 0.95).Microseconds())/1000, "p95-ms")
			})
		}
		b.Run(q.name+"/raw_sql", func(b *testing.B) {
			var lat []time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				args := q.args
				if q.prep != nil {
					var err error
					if args, err = q.prep(ctx, raw); err != nil {
						b.Fatal(err)
					}
				}
				rows, err := raw.QueryContext(ctx, q.raw, args...)
				if err != nil {
					b.Fatal(err)
				}
				k := 0
				for rows.Next() {
					k++
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				rows.Close()
				if k == 0 && !strings.Contains(q.name, "absent") {
					b.Fatalf("%s: raw query found nothing", q.name)
				}
				lat = append(lat, time.Since(t0))
			}
			b.ReportMetric(float64(pct(lat, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(pct(lat, 0.95).Microseconds())/1000, "p95-ms")
		})
	}
}

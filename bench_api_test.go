package hermesstate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// Benchmark store: 10k sessions × 100 messages = 1M messages, built once
// with multi-row INSERTs and cached in the temp dir across sub-benchmarks
// and runs (delete the file to rebuild).
const (
	benchSessions    = 10000
	benchMsgsPerSess = 100
)

// benchStorePathN builds (once) a store of nSess sessions × perSess
// messages.
func benchStorePathN(b *testing.B, nSess, perSess int) string {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hermesstate-bench-%dx%d.db", nSess, perSess))
	return cachedBenchFile(b, path, func(tmp string) {
		st, err := hs.Open(context.Background(), hs.Config{Path: tmp})
		require.NoError(b, err)
		require.NoError(b, st.Close())
		db := fixturetest.Raw(b, tmp)
		_, err = db.Exec("PRAGMA synchronous=OFF")
		require.NoError(b, err)
		tx, err := db.Begin()
		require.NoError(b, err)
		base := 1760000000.0
		sources := []string{"cli", "telegram", "discord", "cron", "slack"}
		models := []string{"anthropic/claude-sonnet-4", "openai/gpt-4.1", "google/gemini-2.5-pro"}
		const rowsPer = 500
		var sb strings.Builder
		var args []any
		flushMsgs := func() {
			if len(args) == 0 {
				return
			}
			_, err := tx.Exec("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES "+strings.TrimSuffix(sb.String(), ","), args...)
			require.NoError(b, err)
			sb.Reset()
			args = args[:0]
		}
		for s := 0; s < nSess; s++ {
			id := fmt.Sprintf("20260101_%06d_%06x", s, s)
			start := base + float64(s)*600
			_, err := tx.Exec(`INSERT INTO sessions (id, source, model, started_at, ended_at, end_reason, message_count, input_tokens, output_tokens, api_call_count, estimated_cost_usd, title)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, id, sources[s%len(sources)], models[s%len(models)], start, start+500, "user_exit",
				perSess, 1000+s, 100+s%97, 10, 0.01, fmt.Sprintf("Session number %d", s))
			require.NoError(b, err)
			_, err = tx.Exec(`INSERT INTO session_model_usage (session_id, model, billing_provider, billing_base_url, billing_mode, task, api_call_count, input_tokens, output_tokens, estimated_cost_usd, first_seen, last_seen)
				VALUES (?, ?, 'openrouter', '', '', '', 10, ?, ?, 0.01, ?, ?)`, id, models[s%len(models)], 1000+s, 100+s%97, start, start+500)
			require.NoError(b, err)
			for m := 0; m < perSess; m++ {
				role := "assistant"
				if m%2 == 0 {
					role = "user"
				}
				sb.WriteString("(?, ?, ?, ?, 1),")
				args = append(args, id, role, fmt.Sprintf("Message %d of session %d: how do I fix the deployment of service %d on the staging cluster today?", m, s, m*s%1000), start+float64(m))
				if len(args)/5 >= rowsPer {
					flushMsgs()
				}
			}
		}
		flushMsgs()
		require.NoError(b, tx.Commit())
		_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		require.NoError(b, err)
		require.NoError(b, db.Close())
	})
}

func openBench(b *testing.B) (*hs.Store, *sql.DB) {
	return openBenchN(b, benchSessions, benchMsgsPerSess)
}

func openBenchN(b *testing.B, nSess, perSess int) (*hs.Store, *sql.DB) {
	path := benchStorePathN(b, nSess, perSess)
	st, err := hs.Open(context.Background(), hs.Config{Path: path})
	require.NoError(b, err)
	b.Cleanup(func() { _ = st.Close() })
	return st, fixturetest.Raw(b, path)
}

// rawPreviewSQL is the baseline: the same page with a plain first-user-
// message preview and max-timestamp last_active, hand-written SQL.
const rawListSQL = `SELECT s.id, s.title, s.started_at,
	COALESCE((SELECT substr(m.content, 1, 63) FROM messages m WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1), '') AS preview,
	COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active
	FROM sessions s WHERE s.parent_session_id IS NULL AND s.archived = 0 AND s.hidden = 0
	ORDER BY s.started_at DESC LIMIT 20`

const rawActivitySQL = `SELECT s.id, s.title, s.started_at,
	COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active
	FROM sessions s WHERE s.parent_session_id IS NULL AND s.archived = 0 AND s.hidden = 0
	ORDER BY last_active DESC LIMIT 20`

func scanAll(b *testing.B, rows *sql.Rows) int {
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		require.NoError(b, rows.Scan(ptrs...))
		n++
	}
	require.NoError(b, rows.Err())
	require.NoError(b, rows.Close())
	return n
}

// BenchmarkListRich: list 20 with preview on 1M messages / 10k sessions.
func BenchmarkListRich(b *testing.B) {
	st, db := openBench(b)
	benchListRich(b, st, db)
}

// BenchmarkListRich200k: the same on 200k messages / 2k sessions, the size
// at which Hermes' listing by last activity took 243 ms.
func BenchmarkListRich200k(b *testing.B) {
	st, db := openBenchN(b, 2000, 100)
	benchListRich(b, st, db)
}

// cpuMS returns the user+system CPU time of the process so far (ms); per
// op it is steadier than wall time on a shared machine.
func cpuMS() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

func benchListRich(b *testing.B, st *hs.Store, db *sql.DB) {
	ctx := context.Background()
	run := func(name string, f func()) {
		b.Run(name, func(b *testing.B) {
			f() // warm the page cache and the connection
			b.ResetTimer()
			c0 := cpuMS()
			for i := 0; i < b.N; i++ {
				f()
			}
			b.ReportMetric((cpuMS()-c0)/float64(b.N), "cpu-ms/op")
		})
	}
	run("hermesstate/started", func() {
		rows, err := st.Listing().Rich(ctx, repo.RichOptions{Limit: 20})
		require.NoError(b, err)
		require.Len(b, rows, 20)
		require.NotEmpty(b, rows[0].Preview)
	})
	run("raw-sql/started", func() {
		rows, err := db.Query(rawListSQL)
		require.NoError(b, err)
		require.Equal(b, 20, scanAll(b, rows))
	})
	run("hermesstate/last-active", func() {
		rows, err := st.Listing().Rich(ctx, repo.RichOptions{Limit: 20, OrderByLastActive: true})
		require.NoError(b, err)
		require.Len(b, rows, 20)
		require.NotEmpty(b, rows[0].Preview)
	})
	run("raw-sql/last-active", func() {
		rows, err := db.Query(rawActivitySQL)
		require.NoError(b, err)
		require.Equal(b, 20, scanAll(b, rows))
	})
}

func BenchmarkStats(b *testing.B) {
	st, db := openBench(b)
	ctx := context.Background()
	b.Run("hermesstate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			bs, err := st.Usage().BySource(ctx, repo.StatsFilter{})
			require.NoError(b, err)
			require.Len(b, bs, 5)
			bm, err := st.Usage().ByModel(ctx, repo.StatsFilter{})
			require.NoError(b, err)
			require.Len(b, bm, 3)
			top, err := st.Usage().TopSessions(ctx, 10, repo.StatsFilter{})
			require.NoError(b, err)
			require.Len(b, top, 10)
		}
	})
	b.Run("raw-sql", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, q := range []string{
				"SELECT source, COUNT(*), SUM(message_count), SUM(input_tokens), SUM(output_tokens) FROM sessions GROUP BY source",
				"SELECT model, COUNT(DISTINCT session_id), SUM(input_tokens), SUM(output_tokens) FROM session_model_usage GROUP BY model",
				"SELECT id, input_tokens + output_tokens AS t FROM sessions ORDER BY t DESC LIMIT 10",
			} {
				rows, err := db.Query(q)
				require.NoError(b, err)
				scanAll(b, rows)
			}
		}
	})
}

func maxRSSMB() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // Linux: KiB
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkExportAll streams every message; peak RSS is the process
// maximum so far (run it alone: -bench ExportAll).
func BenchmarkExportAll(b *testing.B) {
	st, db := openBench(b)
	ctx := context.Background()
	b.Run("hermesstate", func(b *testing.B) {
		var w countingWriter
		for i := 0; i < b.N; i++ {
			n, err := st.Portability().WriteJSONL(ctx, &w, repo.ExportFilter{}, nil, nil)
			require.NoError(b, err)
			require.EqualValues(b, benchSessions, n)
		}
		b.ReportMetric(float64(w.n)/float64(b.N)/1e6, "MB/op-out")
		b.ReportMetric(maxRSSMB(), "peakRSS-MB")
	})
	b.Run("raw-sql", func(b *testing.B) {
		var w countingWriter
		enc := json.NewEncoder(io.Writer(&w))
		for i := 0; i < b.N; i++ {
			rows, err := db.Query("SELECT * FROM messages WHERE active = 1 ORDER BY session_id, id")
			require.NoError(b, err)
			cols, _ := rows.Columns()
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for j := range vals {
				ptrs[j] = &vals[j]
			}
			row := make(map[string]any, len(cols))
			n := 0
			for rows.Next() {
				require.NoError(b, rows.Scan(ptrs...))
				for j, c := range cols {
					row[c] = vals[j]
				}
				require.NoError(b, enc.Encode(row))
				n++
			}
			require.NoError(b, rows.Close())
			require.Equal(b, benchSessions*benchMsgsPerSess, n)
		}
		b.ReportMetric(float64(w.n)/float64(b.N)/1e6, "MB/op-out")
		b.ReportMetric(maxRSSMB(), "peakRSS-MB")
	})
}

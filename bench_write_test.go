package hermesstate_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// Write benchmarks (README: go test -run '^$' -bench 'Append|FileSize' -benchmem -benchtime 3s .).
// The raw baselines write, with plain database/sql on the same driver, to a
// file created by hermesstate.Open, so schema, indexes and every trigger
// (display, FTS word + trigram) are the same as the store's.

const benchContent = "Why does the deployment on kubernetes keep failing? The api pod restarts every few minutes with CrashLoopBackOff and the logs show a connection refused to postgres on port 5432."

// benchFile creates a store file with one session and returns its path and
// the session id, the store closed.
func benchFile(b *testing.B) (string, string) {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(b, err)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", Model: "m"})
	require.NoError(b, err)
	require.NoError(b, st.Close())
	return path, s.ID
}

// benchRaw opens path with the store writer's settings: one connection,
// BEGIN IMMEDIATE, busy 1 s, synchronous NORMAL, foreign keys on.
func benchRaw(b *testing.B, path string) *sql.DB {
	b.Helper()
	db, err := sqlitex.OpenEnvConfig(sqlitex.ConnConfig{Path: path, BusyTimeout: time.Second, Synchronous: sqlitex.SyncNormal, ForeignKeys: true, Immediate: true})
	require.NoError(b, err)
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	return db
}

// cpuTime returns the user+system CPU time of this process so far. On a
// shared machine wall time swings with other load; CPU time per message is
// the steadier figure.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type benchClock struct {
	wall time.Time
	cpu  time.Duration
}

func startClock() benchClock { return benchClock{time.Now(), cpuTime()} }

// report adds msgs/s (wall) and cpu-µs/msg for n messages.
func (c benchClock) report(b *testing.B, n int) {
	wall, cpu := time.Since(c.wall), cpuTime()-c.cpu
	b.ReportMetric(float64(n)/wall.Seconds(), "msgs/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/msg")
}

// BenchmarkAppendStore: one message per transaction through Messages().Append.
func BenchmarkAppendStore(b *testing.B) { benchAppendStore(b, hs.Config{}) }

// BenchmarkAppendStoreNoCheckpoint: the same without the store's PASSIVE
// checkpoint every 50 writes (SQLite's auto-checkpoint only, as the raw
// baseline), to show what the checkpoint costs.
func BenchmarkAppendStoreNoCheckpoint(b *testing.B) {
	benchAppendStore(b, hs.Config{CheckpointEvery: -1})
}

func benchAppendStore(b *testing.B, cfg hs.Config) {
	ctx := context.Background()
	path, sid := benchFile(b)
	cfg.Path = path
	st, err := hs.Open(ctx, cfg)
	require.NoError(b, err)
	defer st.Close()
	ms := st.Messages()
	b.ReportAllocs()
	b.ResetTimer()
	clk := startClock()
	for i := 0; i < b.N; i++ {
		if _, err := ms.Append(ctx, sid, repo.MessageInput{Role: "user", Content: models.Text(benchContent)}); err != nil {
			b.Fatal(err)
		}
	}
	clk.report(b, b.N)
}

// BenchmarkAppendRaw: what Hermes' append_message does, in plain SQL: one
// BEGIN IMMEDIATE transaction with the INSERT and the counter UPDATE.
func BenchmarkAppendRaw(b *testing.B) {
	path, sid := benchFile(b)
	db := benchRaw(b, path)
	b.ReportAllocs()
	b.ResetTimer()
	clk := startClock()
	for i := 0; i < b.N; i++ {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, ?, ?, ?)`,
			sid, "user", benchContent, float64(time.Now().UnixNano())/1e9); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(`UPDATE sessions SET message_count = message_count + 1 WHERE id = ?`, sid); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	clk.report(b, b.N)
}

const benchBatch = 1000

func benchTurn(i int) repo.MessageInput {
	roles := []string{"user", "assistant", "tool", "assistant"}
	m := repo.MessageInput{Role: roles[i%4], Content: models.Text(fmt.Sprintf("%s (%d)", benchContent, i))}
	if m.Role == "tool" {
		m.ToolName, m.ToolCallID = "terminal", fmt.Sprintf("call_%d", i)
	}
	return m
}

// BenchmarkAppendBatchStore: bulk import, 1,000 messages per AppendBatch
// (one transaction).
func BenchmarkAppendBatchStore(b *testing.B) {
	ctx := context.Background()
	path, sid := benchFile(b)
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(b, err)
	defer st.Close()
	batch := make([]repo.MessageInput, benchBatch)
	for i := range batch {
		batch[i] = benchTurn(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	clk := startClock()
	for i := 0; i < b.N; i++ {
		if _, err := st.Messages().AppendBatch(ctx, sid, batch); err != nil {
			b.Fatal(err)
		}
	}
	clk.report(b, b.N*benchBatch)
}

// BenchmarkAppendBatchRaw: the same 1,000 messages as multi-row INSERTs of
// 500 rows in one transaction, plus one counter UPDATE.
func BenchmarkAppendBatchRaw(b *testing.B) {
	path, sid := benchFile(b)
	db := benchRaw(b, path)
	type row struct {
		role, content, toolName, toolCallID any
	}
	rows := make([]row, benchBatch)
	for i := range rows {
		m := benchTurn(i)
		rows[i] = row{m.Role, *m.Content, nil, nil}
		if m.ToolName != "" {
			rows[i].toolName, rows[i].toolCallID = m.ToolName, m.ToolCallID
		}
	}
	const chunk = 500
	stmt := `INSERT INTO messages (session_id, role, content, tool_name, tool_call_id, timestamp) VALUES ` +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", chunk), ", ")
	args := make([]any, 0, chunk*6)
	b.ReportAllocs()
	b.ResetTimer()
	clk := startClock()
	for i := 0; i < b.N; i++ {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		ts := float64(time.Now().UnixNano()) / 1e9
		for c := 0; c < benchBatch; c += chunk {
			args = args[:0]
			for _, r := range rows[c : c+chunk] {
				args = append(args, sid, r.role, r.content, r.toolName, r.toolCallID, ts)
			}
			if _, err := tx.Exec(stmt, args...); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := tx.Exec(`UPDATE sessions SET message_count = message_count + ? WHERE id = ?`, benchBatch, sid); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	clk.report(b, b.N*benchBatch)
}

// BenchmarkFileSize200k writes a synthetic corpus of 200,000 messages
// (2,000 sessions x 100: 25% user prompts of ~40 words, 35% assistant
// answers of ~120 words, 15% assistant tool calls with JSON arguments and
// no content, 25% tool results of ~250 words, from a 6,000-word
// vocabulary), checkpoints, and reports the size of state.db, and the
// average stored text per message. Only the first iteration does the work.
func BenchmarkFileSize200k(b *testing.B) {
	if b.N > 1 {
		b.Skip("one iteration is the measurement")
	}
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(b, err)
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 6000)
	letters := "etaoinshrdlucmfwypvbgkjqxz"
	for i := range vocab {
		n := 2 + r.IntN(9)
		var w strings.Builder
		for j := 0; j < n; j++ {
			w.WriteByte(letters[min(r.IntN(26), r.IntN(26))])
		}
		vocab[i] = w.String()
	}
	words := func(n int) string {
		var s strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				s.WriteByte(' ')
			}
			// Zipf-like: small indexes are much more frequent.
			s.WriteString(vocab[int(float64(len(vocab))*r.Float64()*r.Float64()*r.Float64())])
		}
		return s.String()
	}
	var textBytes int64
	b.ResetTimer()
	clk := startClock()
	for s := 0; s < 2000; s++ {
		sess, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", Model: "anthropic/claude-sonnet-4"})
		require.NoError(b, err)
		batch := make([]repo.MessageInput, 0, 100)
		for i := 0; i < 100; i++ {
			var m repo.MessageInput
			switch p := r.IntN(100); {
			case p < 25:
				m = repo.MessageInput{Role: "user", Content: models.Text(words(20 + r.IntN(40)))}
			case p < 60:
				m = repo.MessageInput{Role: "assistant", Content: models.Text(words(40 + r.IntN(160)))}
			case p < 75:
				args := fmt.Sprintf(`{"command": %q}`, words(3+r.IntN(10)))
				m = repo.MessageInput{Role: "assistant", ToolCalls: models.MustJSON([]models.ToolCall{{ID: fmt.Sprintf("call_%d_%d", s, i),
					Type: "function", Function: models.ToolCallFunction{Name: "terminal", Arguments: args}}})}
				textBytes += int64(len(m.ToolCalls))
			default:
				m = repo.MessageInput{Role: "tool", ToolName: "terminal", ToolCallID: fmt.Sprintf("call_%d_%d", s, i), Content: models.Text(words(50 + r.IntN(400)))}
			}
			if m.Content != nil {
				textBytes += int64(len(*m.Content))
			}
			batch = append(batch, m)
		}
		_, err = st.Messages().AppendBatch(ctx, sess.ID, batch)
		require.NoError(b, err)
	}
	require.NoError(b, st.Close()) // TRUNCATE checkpoint: everything in the main file
	b.StopTimer()
	fi, err := os.Stat(path)
	require.NoError(b, err)
	b.ReportMetric(float64(fi.Size())/1e6, "MB")
	b.ReportMetric(float64(fi.Size())/200000, "file_B/msg")
	b.ReportMetric(float64(textBytes)/200000, "text_B/msg")
	clk.report(b, 200000)
}

// BenchmarkAppendConcurrent: G goroutines of one process (each its own
// session, as concurrent agent turns) call Messages().Append once per
// message; b.N messages in all. Concurrent calls are group-committed
// (repo/groupcommit.go). Reports msgs/s, CPU per message and the p50/p99
// latency of one Append call. Compare with BenchmarkAppendRaw (one message
// per transaction, one caller).
func BenchmarkAppendConcurrent(b *testing.B) {
	for _, g := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			ctx := context.Background()
			path, first := benchFile(b)
			st, err := hs.Open(ctx, hs.Config{Path: path})
			require.NoError(b, err)
			defer st.Close()
			sids := []string{first}
			for len(sids) < g {
				s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", Model: "m"})
				require.NoError(b, err)
				sids = append(sids, s.ID)
			}
			ms := st.Messages()
			var next atomic.Int64
			lat := make([][]time.Duration, g)
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			clk := startClock()
			for w := 0; w < g; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if _, err := ms.Append(ctx, sids[w], repo.MessageInput{Role: "user", Content: models.Text(benchContent)}); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			clk.report(b, b.N)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			slices.Sort(all)
			if len(all) > 0 {
				pct := func(p float64) float64 {
					return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
				}
				b.ReportMetric(pct(0.50), "p50-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
			}
		})
	}
}

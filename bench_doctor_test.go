package hermesstate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// Doctor/repair benchmark store: 1,000 sessions × 200 messages = 200k
// messages (every 10th an assistant turn with two tool calls), written with
// multi-row INSERTs after Open (FTS, display and CJK-queue triggers active)
// and cached as $TMPDIR/hermesstate-bench-doctor-200k.db (delete to rebuild).
func doctorBenchPath(b *testing.B) string {
	path := filepath.Join(os.TempDir(), "hermesstate-bench-doctor-200k.db")
	return cachedBenchFile(b, path, func(tmp string) {
		st, err := hs.Open(context.Background(), hs.Config{Path: tmp})
		require.NoError(b, err)
		require.NoError(b, st.Close())
		db := fixturetest.Raw(b, tmp)
		tx, err := db.Begin()
		require.NoError(b, err)
		base := 1760000000.0
		var sb strings.Builder
		var args []any
		flush := func() {
			if len(args) == 0 {
				return
			}
			_, err := tx.Exec("INSERT INTO messages (session_id, role, content, tool_calls, timestamp) VALUES "+strings.TrimSuffix(sb.String(), ","), args...)
			require.NoError(b, err)
			sb.Reset()
			args = args[:0]
		}
		calls := `[{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{\"cmd\": \"ls\"}"}}, {"id": "c2", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]`
		for s := 0; s < 1000; s++ {
			id := fmt.Sprintf("20260101_%06d_%06x", s, s)
			start := base + float64(s)*600
			_, err := tx.Exec(`INSERT INTO sessions (id, source, model, started_at, ended_at, end_reason, message_count, tool_call_count) VALUES (?, 'cli', 'm', ?, ?, 'user_exit', 200, 40)`,
				id, start, start+500)
			require.NoError(b, err)
			for m := 0; m < 200; m++ {
				var tc any
				role := "user"
				if m%2 == 1 {
					role = "assistant"
				}
				if m%10 == 1 {
					tc = calls
				}
				sb.WriteString("(?, ?, ?, ?, ?),")
				args = append(args, id, role, fmt.Sprintf("Message %d of session %d: deploy service %d on the staging cluster, 检查配置", m, s, m*s%1000), tc, start+float64(m))
				if len(args)/5 >= 400 {
					flush()
				}
			}
		}
		flush()
		require.NoError(b, tx.Commit())
		_, err = db.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
		require.NoError(b, err)
		require.NoError(b, db.Close())
		r, err := hs.Doctor(context.Background(), hs.Config{Path: tmp}, hs.DoctorOptions{})
		require.NoError(b, err)
		require.Empty(b, r.Problems(), "the benchmark store is healthy")
		require.EqualValues(b, 200000, r.Messages)
	})
}

// BenchmarkDoctor200k: doctor (quick_check, and --full: integrity_check +
// FTS content comparison + CJK index check) on 200k messages.
func BenchmarkDoctor200k(b *testing.B) {
	path := doctorBenchPath(b)
	for _, full := range []bool{false, true} {
		b.Run(map[bool]string{false: "quick", true: "full"}[full], func(b *testing.B) {
			for b.Loop() {
				r, err := hs.Doctor(context.Background(), hs.Config{Path: path}, hs.DoctorOptions{Full: full})
				require.NoError(b, err)
				require.True(b, r.OK(), "%+v", r.Problems())
			}
			b.ReportMetric(maxRSSMB(), "peakRSS-MB")
		})
	}
}

// BenchmarkRepair200k: repair of a healthy 200k store (doctor + nothing to
// do, after a first run optimised the FTS segments of the bulk load), and of a damaged copy (FTS insert trigger dropped, a message written
// without it, 500 sessions' counters desynchronised, messages_fts_data
// dropped): recreate trigger, chunked rebuild of both FTS tables over 200k
// rows, counters recomputed. The copy is made outside the timer.
func BenchmarkRepair200k(b *testing.B) {
	path := doctorBenchPath(b)
	b.Run("healthy", func(b *testing.B) {
		p := copyBench(b, path)
		// The first run merges the FTS segments the bulk load left
		// (optimize); the measured runs find nothing to do.
		first, err := hs.Repair(context.Background(), hs.Config{Path: p}, hs.RepairOptions{})
		require.NoError(b, err)
		b.Logf("first repair of the fresh copy: %d actions", len(first.Actions))
		for b.Loop() {
			rep, err := hs.Repair(context.Background(), hs.Config{Path: p}, hs.RepairOptions{})
			require.NoError(b, err)
			require.Empty(b, rep.Actions)
		}
		b.ReportMetric(maxRSSMB(), "peakRSS-MB")
	})
	b.Run("damaged", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			p := copyBench(b, path)
			db := fixturetest.Raw(b, p)
			for _, q := range []string{"DROP TRIGGER messages_fts_insert", "DROP TABLE messages_fts_data",
				"UPDATE sessions SET message_count = message_count + 1 WHERE rowid % 2 = 0"} {
				_, err := db.Exec(q)
				require.NoError(b, err, q)
			}
			require.NoError(b, db.Close())
			b.StartTimer()
			rep, err := hs.Repair(context.Background(), hs.Config{Path: p}, hs.RepairOptions{})
			require.NoError(b, err)
			require.True(b, rep.After.OK(), "%+v", rep.After.Problems())
		}
		b.ReportMetric(maxRSSMB(), "peakRSS-MB")
	})
}

func copyBench(b *testing.B, path string) string {
	data, err := os.ReadFile(path)
	require.NoError(b, err)
	p := filepath.Join(b.TempDir(), "state.db")
	require.NoError(b, os.WriteFile(p, data, 0o600))
	return p
}

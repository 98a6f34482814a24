package main

import (
	"encoding/json"
	"github.com/stretchr/testify/require"
	"os"
	"path/filepath"
	"testing"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// TestMain lets this test binary act as the hermes-state CLI when the
// stress command re-executes it as a worker (runMainEnv set).
func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestStress4Procs is the contention acceptance test: 4 OS processes x
// 2,000 appends, one transaction each, 100 ms busy timeout. Every
// acknowledged message must be in the file exactly once, message_count must
// equal the row count of every session, and no append may return an error.
func TestStress4Procs(t *testing.T) {
	if testing.Short() {
		t.Skip("4 x 2,000 appends across processes; skipped with -short (CI runs it)")
	}
	db := filepath.Join(t.TempDir(), "state.db")
	start := time.Now()
	out, err := run(t, "--db", db, "--json", "stress", "--procs", "4", "--appends", "2000", "--busy-timeout", "100ms")
	require.NoError(t, err, out)
	var rep StressReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	t.Logf("4x2000 in %s: %.0f appends/s, latency ms %+v, reads %d %+v", time.Since(start).Round(time.Millisecond), rep.ThroughputPerS, rep.LatencyMS, rep.Reads, rep.ReadLatencyMS)

	require.Empty(t, rep.WorkerFailures)
	require.Equal(t, 8000, rep.Acknowledged)
	require.Equal(t, 8000, rep.Found)
	require.Zero(t, rep.Lost)
	require.Zero(t, rep.Duplicates)
	require.Zero(t, rep.UnacknowledgedFound)
	require.Zero(t, rep.ErrorsTotal, "errors returned to callers: %v", rep.Errors)
	require.Empty(t, rep.ReadErrors)
	require.Zero(t, rep.SearchMisses, "read-your-writes search")
	require.True(t, rep.CountersConsistent, "%v", rep.CounterMismatches)
	require.Greater(t, rep.Reads, 0)
	require.Greater(t, rep.LatencyMS.Max, 0.0)

	// Independent check on the file, without the library.
	raw, err := sqlitex.OpenEnv(db)
	require.NoError(t, err)
	defer raw.Close()
	var total, distinct int
	require.NoError(t, raw.QueryRow(`SELECT count(*), count(DISTINCT content) FROM messages`).Scan(&total, &distinct))
	require.Equal(t, 8000, total)
	require.Equal(t, 8000, distinct, "every message exactly once")
	var bad int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM sessions s WHERE s.message_count != (SELECT count(*) FROM messages m WHERE m.session_id = s.id)`).Scan(&bad))
	require.Zero(t, bad)
	var sessions int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM sessions`).Scan(&sessions))
	require.Equal(t, 5, sessions, "one per worker and the shared one")
	var ok string
	require.NoError(t, raw.QueryRow(`PRAGMA integrity_check`).Scan(&ok))
	require.Equal(t, "ok", ok)
}

func TestStressRefusesBadFlags(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "stress", "--procs", "0")
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.Equal(t, 2, exitCode(err))
}

func TestStressSmallText(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	out, err := run(t, "--db", db, "stress", "--procs", "2", "--appends", "50", "--search-every", "10")
	require.NoError(t, err, out)
	require.Contains(t, out, "acknowledged 100, found 100, lost 0, duplicates 0")
	require.Contains(t, out, "counters consistent: true")
	require.Contains(t, out, "(0 misses)")
}

func TestPercentiles(t *testing.T) {
	require.Equal(t, Percentiles{}, percentiles(nil))
	ns := make([]int64, 100)
	for i := range ns {
		ns[99-i] = int64(i+1) * 1e6 // 1..100 ms, unsorted
	}
	p := percentiles(ns)
	require.Equal(t, Percentiles{P50: 50, P90: 90, P99: 99, Max: 100}, p)
	require.Equal(t, int64(1e6), ns[99], "the input is not reordered")
	require.Equal(t, Percentiles{P50: 7, P90: 7, P99: 7, Max: 7}, percentiles([]int64{7e6}))
}

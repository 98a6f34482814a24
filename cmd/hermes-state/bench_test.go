package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/pgtest"
)

// benchCompareKeys are the figures bench_compare.py reads from each side
// (hermesstate's key where it differs after "|"). Keep in step with
// ../shared/bench/bench_compare.py.
var benchCompareKeys = []string{
	"append.messages_per_s", "append.latency.median_ms", "append.latency.p95_ms", "append.latency.p99_ms", "append.latency.max_ms",
	"append.calls_over_20ms", "append.pragma_synchronous|append.synchronous", "append.journal_mode", "append.peak_rss_mib",
	"append.messages_per_s|append_sync_full.messages_per_s", "append.latency.p99_ms|append_sync_full.latency.p99_ms",
	"append_diag.api_sync_full.messages_per_s", "append_diag.api_sync_normal.messages_per_s",
	"append_diag.api_sync_normal_no_fts_triggers.messages_per_s",
	"build.seconds", "build.messages_per_s", "build.seconds_create_session", "build.seconds_replace_messages",
	"build.seconds_set_session_title", "build.file_bytes_after_close.state.db", "build.counts.fts_rows", "build.counts.trigram_rows",
	"build.peak_rss_mib", "search.open_sessiondb_ms|search.open_store_ms", "search.peak_rss_mib",
	"listing.list_sessions_rich_limit20.median_ms", "listing.list_sessions_rich_limit20.p95_ms",
	"listing.list_sessions_rich_limit20_order_by_last_active.median_ms", "listing.get_messages_as_conversation_200.median_ms",
	"listing.export_session_200.median_ms", "listing.export_session_200.p95_ms", "listing.peak_rss_mib",
	"conc.throughput_appends_per_s", "conc.latency.median_ms", "conc.latency.p95_ms", "conc.latency.p99_ms", "conc.latency.max_ms",
	"conc.acknowledged", "conc.found", "conc.lost", "conc.duplicates", "conc.errors", "conc.failed_but_present",
	"conc.message_count_mismatch_sessions", "conc.integrity_check", "conc.worker_peak_rss_mib",
}

var benchQueryKeys = []string{"query", "median_ms", "p95_ms", "path", "results_returned", "matching_rows"}

func lookup(v any, path string) (any, bool) {
	// keys may contain dots ("state.db"): try the longest key first.
	parts := strings.Split(path, ".")
	for i := len(parts); i > 0; i-- {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if x, ok := m[strings.Join(parts[:i], ".")]; ok {
			if i == len(parts) {
				return x, x != nil
			}
			if r, ok := lookup(x, strings.Join(parts[i:], ".")); ok {
				return r, true
			}
		}
	}
	return nil, false
}

// sharedBench is ../shared/bench beside the repository ("" when absent).
func sharedBench() string {
	if d := os.Getenv("HERMESSTATE_FIXTURES"); d != "" {
		if st, err := os.Stat(filepath.Join(filepath.Dir(d), "bench")); err == nil && st.IsDir() {
			return filepath.Join(filepath.Dir(d), "bench")
		}
	}
	for _, up := range []string{"../..", "../../..", "../../../.."} {
		d := filepath.Join(up, "shared", "bench")
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
	}
	return ""
}

// TestBenchSmoke runs `hermes-state bench` on a tiny built-in corpus with
// every phase in its own process (conc with 2 writer processes) and checks
// the JSON: bench_hermes.py's keys that bench_compare.py reads, and figures
// consistent with the corpus (no timing is asserted).
func TestBenchSmoke(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.json")
	stdout, err := run(t, "bench", "--workdir", t.TempDir(), "--sessions", "30", "--per-session", "10", "--long-n", "200",
		"--append-n", "40", "--append-sessions", "2", "--diag-n", "20", "--reps", "2", "--warmup", "1",
		"--procs", "2", "--proc-appends", "15", "--json", out)
	require.NoError(t, err, stdout)
	require.Contains(t, stdout, "list 20 by last activity")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	runs := doc["runs"].([]any)
	require.Len(t, runs, 1)
	r := runs[0]
	for _, k := range benchCompareKeys {
		_, gk, _ := strings.Cut(k, "|")
		if gk == "" {
			gk = k
		}
		_, ok := lookup(r, gk)
		require.True(t, ok, "hermesstate JSON lacks %s", gk)
	}
	qs, _ := lookup(r, "search.queries")
	require.Len(t, qs, 11)
	for name, q := range qs.(map[string]any) {
		for _, k := range benchQueryKeys {
			_, ok := lookup(q, k)
			require.True(t, ok, "query %s lacks %s", name, k)
		}
	}
	for _, k := range []string{"meta.tool", "meta.corpus.sha256", "meta.corpus.sessions", "meta.corpus.messages", "meta.sqlite_version"} {
		_, ok := lookup(doc, k)
		require.True(t, ok, k)
	}
	num := func(path string) float64 { v, ok := lookup(r, path); require.True(t, ok, path); return v.(float64) }
	require.EqualValues(t, 30, num("conc.acknowledged"))
	require.EqualValues(t, 30, num("conc.found"))
	require.Zero(t, num("conc.lost"))
	require.Zero(t, num("conc.duplicates"))
	require.Zero(t, num("conc.message_count_mismatch_sessions"))
	ic, _ := lookup(r, "conc.integrity_check")
	require.Equal(t, "ok", ic)
	require.EqualValues(t, 40, num("append.messages"))
	require.EqualValues(t, 40, num("append_sync_full.messages"))
	require.EqualValues(t, 2, num("append_sync_full.synchronous"))
	require.EqualValues(t, 30*10+200, num("build.counts.messages"))
	require.EqualValues(t, 200, num("listing.get_messages_as_conversation_200.messages"))
	require.EqualValues(t, 200, num("listing.export_session_200.messages"))
	require.EqualValues(t, 20, num("listing.list_sessions_rich_limit20.rows"))
	require.Positive(t, num("listing.peak_rss_mib"))

	// The recorded Hermes figures carry the same keys (the shape is
	// bench_hermes.py's), and bench_compare.py reads both files.
	dir := sharedBench()
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no ../shared/bench beside the repository: CI must run with it")
		}
		t.Log("no ../shared/bench beside the repository: the comparison with Hermes' recorded JSON is not checked")
		return
	}
	hb, err := os.ReadFile(filepath.Join(dir, "hermes-v30-wal-figures-2026-12-03.json"))
	require.NoError(t, err)
	var hdoc map[string]any
	require.NoError(t, json.Unmarshal(hb, &hdoc))
	hr := hdoc["runs"].([]any)[0]
	for _, k := range benchCompareKeys {
		hk, _, _ := strings.Cut(k, "|")
		_, ok := lookup(hr, hk)
		require.True(t, ok, "Hermes' JSON lacks %s: benchCompareKeys is out of step with bench_hermes.py", hk)
	}
	if py, err := exec.LookPath("python3"); err == nil {
		cmp, err := exec.Command(py, filepath.Join(dir, "bench_compare.py"), filepath.Join(dir, "hermes-v30-wal-figures-2026-12-03.json"), out).CombinedOutput()
		require.NoError(t, err, string(cmp))
		require.Contains(t, string(cmp), "| list_sessions_rich 20, by last activity: median ms |")
	} else {
		t.Log("python3 not found: bench_compare.py itself was not run")
	}
}

// TestBenchPostgres (issue 21, item 2): `hermes-state bench --db
// postgres://... --schema S` runs append, build, search, listing and conc
// (2 writer processes) against the server, in schemas it creates (S,
// S_append, S_conc) and drops at the end, and writes bench_hermes.py's
// JSON with the server's version and settings, which bench_compare.py
// reads. A schema that already holds tables is refused before anything
// runs, and left as it was.
func TestBenchPostgres(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	t.Cleanup(func() {
		for _, s := range []string{schema, schema + "_append", schema + "_conc"} {
			pgtest.Drop(t, dsn, s)
		}
	})
	out := filepath.Join(t.TempDir(), "bench.json")
	stdout, err := run(t, "--db", dsn, "--schema", schema, "bench", "--workdir", t.TempDir(), "--sessions", "30", "--per-session", "10",
		"--long-n", "200", "--append-n", "40", "--append-sessions", "2", "--reps", "2", "--warmup", "1",
		"--procs", "2", "--proc-appends", "15", "--json", out)
	require.NoError(t, err, stdout)
	require.Contains(t, stdout, "PostgreSQL 1")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))
	for _, k := range []string{"meta.backend", "meta.postgres_version", "meta.postgres_settings.shared_buffers", "meta.corpus.sha256"} {
		_, ok := lookup(doc, k)
		require.True(t, ok, k)
	}
	r := doc["runs"].([]any)[0]
	num := func(path string) float64 { v, ok := lookup(r, path); require.True(t, ok, path); return v.(float64) }
	require.EqualValues(t, 40, num("append.messages"))
	require.EqualValues(t, 30*10+200, num("build.counts.messages"))
	require.Positive(t, num("build.file_bytes_after_close.schema_total"))
	require.EqualValues(t, 20, num("listing.list_sessions_rich_limit20.rows"))
	require.EqualValues(t, 20, num("listing.list_sessions_rich_limit20_order_by_last_active.rows"))
	require.EqualValues(t, 200, num("listing.export_session_200.messages"))
	require.EqualValues(t, 30, num("conc.found"))
	require.Zero(t, num("conc.lost"))
	require.Zero(t, num("conc.message_count_mismatch_sessions"))
	qs, _ := lookup(r, "search.queries")
	require.Len(t, qs, 11)
	for _, s := range []string{schema, schema + "_append", schema + "_conc"} {
		require.Zero(t, pgtest.QueryInt(t, dsn, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '"+s+"'"), "schema %s left behind", s)
	}
	if dir := sharedBench(); dir != "" {
		if py, err := exec.LookPath("python3"); err == nil {
			cmp, err := exec.Command(py, filepath.Join(dir, "bench_compare.py"), filepath.Join(dir, "hermes-v30-wal-figures-2026-12-03.json"), out).CombinedOutput()
			require.NoError(t, err, string(cmp))
			require.Contains(t, string(cmp), "| list_sessions_rich 20, by last activity: median ms |")
		}
	}

	// A schema holding tables is never written to.
	pgtest.Exec(t, dsn, "CREATE SCHEMA "+schema+"_append", "CREATE TABLE "+schema+"_append.keep (x int)", "INSERT INTO "+schema+"_append.keep VALUES (7)")
	stdout, err = run(t, "--db", dsn, "--schema", schema, "bench", "--workdir", t.TempDir(), "--sessions", "5", "--per-session", "2",
		"--long-n", "20", "--append-n", "4", "--phases", "append")
	require.ErrorContains(t, err, "already holds tables", stdout)
	require.EqualValues(t, 7, pgtest.QueryInt(t, dsn, "SELECT x FROM "+schema+"_append.keep"))
	_, err = run(t, "--db", dsn, "--schema", schema, "bench", "--phases", "append_diag")
	require.ErrorContains(t, err, "SQLite only")
}

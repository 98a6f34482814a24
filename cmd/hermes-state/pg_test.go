package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
)

// TestCLIEveryCommandOnBothBackends runs the same command sequence on a
// SQLite file and on a PostgreSQL schema and expects the same shapes.
func TestCLIEveryCommandOnBothBackends(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	targets := map[string][]string{
		"sqlite":   {"--db", filepath.Join(t.TempDir(), "state.db")},
		"postgres": {"--db", dsn, "--schema", schema},
	}
	lists := map[string][]map[string]any{}
	for name, db := range targets {
		out, err := run(t, append(db, "demo")...)
		require.NoError(t, err, name)
		require.Contains(t, out, "added 3 demo sessions to", name)

		out, err = run(t, append(db, "--json", "migrate")...)
		require.NoError(t, err, name)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), name)
		require.EqualValues(t, 30, m["schema_version"], name)
		require.Empty(t, m["pending"], name)
		require.Equal(t, name, m["driver"])

		out, err = run(t, append(db, "--json", "sessions", "list")...)
		require.NoError(t, err, name)
		var sessions []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &sessions), name)
		require.Len(t, sessions, 3, name)
		lists[name] = sessions
		var id string
		for _, s := range sessions {
			if s["source"] == "cli" {
				id = s["id"].(string)
			}
		}
		out, err = run(t, append(db, "--json", "sessions", "show", id, "--conversation")...)
		require.NoError(t, err, name)
		var conv []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &conv), name)
		require.Len(t, conv, 4, name)
		require.Equal(t, "terminal", conv[2]["tool_name"], name)

		out, err = run(t, append(db, "messages", id)...)
		require.NoError(t, err, name)
		require.Contains(t, out, "CrashLoopBackOff", name)

		for _, c := range [][]string{{"search", "kubernetes"}, {"search", "桂林"}, {"fts", "check"}, {"fts", "rebuild"}, {"stats"}, {"export"},
			{"sessions", "title", id, "Renamed"}, {"sessions", "lineage", id}, {"prune", "--dry-run"}} {
			out, err := run(t, append(db, c...)...)
			require.NoError(t, err, "%s %v", name, c)
			require.NotEmpty(t, out, "%s %v", name, c)
		}
		out, err = run(t, append(db, "--json", "search", "kubernetes")...)
		require.NoError(t, err, name)
		require.Contains(t, out, ">>>kubernetes<<<", name)
		_, err = run(t, append(db, "sessions", "show", "nope")...)
		require.Error(t, err, name)
		require.Equal(t, 3, exitCode(err), name)
		_, err = run(t, append(db, "delete", id)...)
		require.NoError(t, err, name)
	}
	// The same sessions by source and counters on both.
	summary := func(ss []map[string]any) map[string][2]any {
		out := map[string][2]any{}
		for _, s := range ss {
			out[s["source"].(string)] = [2]any{s["message_count"], s["tool_call_count"]}
		}
		return out
	}
	require.Equal(t, summary(lists["sqlite"]), summary(lists["postgres"]))

	_, err := run(t, "--db", filepath.Join(t.TempDir(), "x.db"), "--schema", "s", "sessions", "list")
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err))
}

// TestCLICopyFixture copies a Hermes fixture (a temp copy) into PostgreSQL
// with `copy`; listings and messages then print the same on both.
func TestCLICopyFixture(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	fx := fixturetest.Path(t, "hermes-v30.db")
	src := filepath.Join(t.TempDir(), "state.db")
	copyFile(t, fx, src)
	out, err := run(t, "--json", "copy", "--from", src, "--to", dsn, "--to-schema", schema, "--batch", "5")
	require.NoError(t, err)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	rows := res["rows"].(map[string]any)
	require.EqualValues(t, 31, rows["messages"])
	require.EqualValues(t, 9, rows["sessions"])

	a, err := run(t, "--db", src, "--json", "sessions", "list")
	require.NoError(t, err)
	b, err := run(t, "--db", dsn, "--schema", schema, "--json", "sessions", "list")
	require.NoError(t, err)
	require.JSONEq(t, a, b)
	var ss []map[string]any
	require.NoError(t, json.Unmarshal([]byte(a), &ss))
	for _, s := range ss {
		id := s["id"].(string)
		a, err := run(t, "--db", src, "--json", "sessions", "show", id, "--conversation")
		require.NoError(t, err)
		b, err := run(t, "--db", dsn, "--schema", schema, "--json", "sessions", "show", id, "--conversation")
		require.NoError(t, err)
		require.JSONEq(t, a, b, id)
	}
	// Refused: the target is no longer empty.
	_, err = run(t, "copy", "--from", src, "--to", dsn, "--to-schema", schema)
	require.Error(t, err)
	require.Equal(t, 4, exitCode(err))
	_, err = run(t, "copy", "--from", src, "--to", src)
	require.Equal(t, 2, exitCode(err))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o600))
}

// TestCLICopyNamesTheSource (issue 23 §3): copy says it copied from the
// file the user named, not from its snapshot's temporary path.
func TestCLICopyNamesTheSource(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	src := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", src, "demo")
	require.NoError(t, err)
	out, err := run(t, "copy", "--from", src, "--to", dsn, "--to-schema", schema)
	require.NoError(t, err)
	require.Contains(t, out, "from "+src+" to ")
	require.NotContains(t, out, "snapshot")
	require.NotContains(t, out, os.TempDir()+"/hermesstate")
	dsn2, schema2 := pgtest.Schema(t)
	out, err = run(t, "--json", "copy", "--from", src, "--to", dsn2, "--to-schema", schema2)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	require.Equal(t, src, m["from"])
}

// TestCLIReadReplica (issue 21, item 3): --read-db gives the commands a
// hot standby to read from: a session written on the primary is listed
// through it once replayed, a replica that is down falls back to the
// primary with a warning, and --read-db without a PostgreSQL --db is
// refused (exit 2). That reads really go to a healthy replica is
// TestPostgresReadReplica's (hermesstate package) to show.
func TestCLIReadReplica(t *testing.T) {
	replica := pgtest.ReplicaDSN(t)
	dsn, schema := pgtest.Schema(t)
	db := []string{"--db", dsn, "--schema", schema}
	_, err := run(t, append(db, "demo")...)
	require.NoError(t, err)
	withReplica := append(append([]string{}, db...), "--read-db", replica)
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := run(t, append(withReplica, "--json", "sessions", "list", "--by-activity")...)
		require.NoError(t, err)
		var sessions []map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &sessions))
		if len(sessions) == 3 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the replica never showed the 3 demo sessions: %s", out)
		time.Sleep(100 * time.Millisecond)
	}
	// A replica that is down costs only the fallback, and says so: the
	// same answer from the primary, exit 0, a warning naming the replica
	// (which also shows --read-db reaches the store).
	down := "postgres://postgres@127.0.0.1:1/test?sslmode=disable&connect_timeout=2"
	out, stderr, code := runCLI(t, append(append([]string{}, db...), "--read-db", down, "--json", "sessions", "list", "--by-activity")...)
	require.Equal(t, 0, code, stderr)
	var sessions []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &sessions))
	require.Len(t, sessions, 3)
	require.Contains(t, stderr, "read replica not used; reads go to the primary")
	require.Contains(t, stderr, "127.0.0.1:1/test")

	_, err = run(t, "--db", filepath.Join(t.TempDir(), "state.db"), "--read-db", replica, "sessions", "list")
	require.Error(t, err)
	require.Equal(t, 2, exitCode(err), errText(err))
}

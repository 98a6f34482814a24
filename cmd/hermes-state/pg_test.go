package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

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
		require.Contains(t, out, "demo store written to", name)

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

		_, err = run(t, append(db, "sessions", "show", "nope")...)
		require.Error(t, err, name)
		require.Equal(t, 3, exitCode(err), name)
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

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCLISearchAndFTS(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)

	out, err := run(t, "--db", db, "--json", "search", "terminal", "--limit", "5")
	require.NoError(t, err)
	var hits []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &hits))
	require.NotEmpty(t, hits)
	for _, k := range []string{"id", "session_id", "role", "snippet", "timestamp", "tool_name", "source", "model", "session_started", "context"} {
		require.Contains(t, hits[0], k)
	}

	out, err = run(t, "--db", db, "--json", "search", "terminal", "--source", "nosuch")
	require.NoError(t, err)
	require.JSONEq(t, "[]", out)

	out, err = run(t, "--db", db, "--json", "search", "terminal", "--role", "tool", "--exclude-source", "telegram")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &hits))
	for _, h := range hits {
		require.Equal(t, "tool", h["role"])
	}

	out, err = run(t, "--db", db, "search", "terminal")
	require.NoError(t, err)
	require.Contains(t, out, "terminal")

	out, err = run(t, "--db", db, "fts", "rebuild", "--chunk", "2")
	require.NoError(t, err)
	require.Contains(t, out, "complete")

	out, err = run(t, "--db", db, "--json", "fts", "check")
	require.NoError(t, err)
	var checks []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &checks))
	require.Len(t, checks, 3)
	for _, c := range checks {
		require.Equal(t, true, c["ok"], c)
	}
}

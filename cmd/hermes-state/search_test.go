package main

import (
	"encoding/json"
	"os"
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

// TestCLISearchNeverAnswersUnsearched (issue 28, item 6): `search` finds
// the messages holding a dotted term, a flag or a path (Hermes' sanitized
// query fails in FTS5 and Hermes answers []), and a query with nothing to
// search exits 2 saying why, never "no messages match".
func TestCLISearchNeverAnswersUnsearched(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"id": "s", "source": "cli", "messages": [`+
		`{"role": "user", "content": "use kubernetes e.g. with helm", "timestamp": 1767600001},`+
		`{"role": "user", "content": "node.js is fine", "timestamp": 1767600002},`+
		`{"role": "user", "content": "pass --flag=value now", "timestamp": 1767600003}]}`+"\n"), 0o600))
	_, stderr, code := runCLI(t, "--db", db, "import", in)
	require.Equal(t, exitOK, code, stderr)
	for q, want := range map[string]string{"kubernetes e.g.": "helm", "node.js.": "fine", "--flag=value": "now"} {
		out, stderr, code := runCLI(t, "--db", db, "search", "--", q)
		require.Equal(t, exitOK, code, "%q: %s", q, stderr)
		require.Contains(t, out, want, q)
		require.NotContains(t, out, "no messages match", q)
	}
	for _, q := range []string{`"*"`, "-", "🚀"} {
		out, stderr, code := runCLI(t, "--db", db, "search", "--", q)
		require.Equal(t, exitUsage, code, "%q: %s%s", q, out, stderr)
		require.Contains(t, stderr, "cannot be searched", q)
		require.NotContains(t, out, "no messages match", q)
	}
}

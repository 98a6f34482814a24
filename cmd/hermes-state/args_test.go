package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An empty --db (--db "") is a command line error, not the default store (issue 20 §5).
func TestCLIEmptyDBRefused(t *testing.T) {
	t.Setenv("HERMES_HOME", t.TempDir())
	for _, args := range [][]string{
		{"--db", "", "sessions", "list"},
		{"--db=", "demo"},
		{"--db", "  ", "stats"},
	} {
		_, stderr, code := runCLI(t, args...)
		require.Equal(t, 2, code, "%v: %s", args, stderr)
		require.Contains(t, stderr, "--db", "%v", args)
	}
}

// `sessions show` takes a unique id prefix like every other command
// (issue 20 §5: it wanted the whole id).
func TestCLISessionsShowPrefix(t *testing.T) {
	db, _ := opsStore(t)
	out, err := run(t, "--db", db, "--json", "sessions", "show", "20260102")
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Equal(t, "20260102_plain", s["id"])
	out, err = run(t, "--db", db, "--json", "sessions", "show", "20260102_p", "--conversation")
	require.NoError(t, err)
	require.Contains(t, out, "ask 3")
	_, err = run(t, "--db", db, "sessions", "show", "20260101")
	require.Error(t, err)
	require.Equal(t, 4, exitCode(err), errText(err)) // ambiguous: root and tip
}

// `export --session PREFIX` takes a unique prefix as the README says
// (issue 20 §5: it was refused).
func TestCLIExportSessionPrefix(t *testing.T) {
	db, _ := opsStore(t)
	out, err := run(t, "--db", db, "export", "--session", "20260102")
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(out, "\n"))
	require.Contains(t, out, `"id":"20260102_plain"`)
	out, err = run(t, "--db", db, "export", "--format", "md", "--session", "20260101_t", "--session", "20260102_pl")
	require.NoError(t, err)
	require.Contains(t, out, "second ask")
	require.Contains(t, out, "reply 3")
	_, err = run(t, "--db", db, "export", "--session", "20260101")
	require.Error(t, err)
	require.Equal(t, 4, exitCode(err), errText(err))
	_, err = run(t, "--db", db, "export", "--session", "nope")
	require.Error(t, err)
	require.Equal(t, 3, exitCode(err), errText(err))
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// run executes the CLI in-process with args and returns stdout.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	a := &app{out: &out, errOut: &errOut}
	root := newRoot(a)
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	a.close()
	return out.String(), err
}

// errText is what the CLI prints for err after "hermes-state: ".
func errText(err error) string { return (&app{}).errorText(err) }

// runCLI runs the command line as main does and returns stdout, stderr and
// the exit status.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = execute(context.Background(), &app{out: &out, errOut: &errOut}, args)
	return out.String(), errOut.String(), code
}

func TestCLIDemoListShowMessages(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	out, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	require.Contains(t, out, "added 3 demo sessions to")

	out, err = run(t, "--db", db, "--json", "sessions", "list")
	require.NoError(t, err)
	var sessions []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &sessions))
	require.Len(t, sessions, 3)
	var cli map[string]any
	for _, s := range sessions {
		for _, k := range []string{"id", "source", "started_at", "message_count", "tool_call_count", "model_config", "title"} {
			require.Contains(t, s, k, "Hermes get_session key")
		}
		if s["source"] == "cli" {
			cli = s
		}
	}
	require.NotNil(t, cli)
	require.EqualValues(t, 4, cli["message_count"])
	id := cli["id"].(string)

	out, err = run(t, "--db", db, "--json", "sessions", "show", id, "--conversation")
	require.NoError(t, err)
	var conv []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &conv))
	require.Len(t, conv, 4)
	require.Equal(t, true, conv[0]["_db_persisted"])
	require.Equal(t, "terminal", conv[2]["tool_name"])

	out, err = run(t, "--db", db, "messages", id)
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(out, "\n"))
	require.Contains(t, out, "(terminal)")

	out, err = run(t, "--db", db, "--json", "migrate")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &m))
	require.EqualValues(t, 30, m["schema_version"])

	_, err = run(t, "--db", db, "sessions", "show", "no-such-id")
	require.Error(t, err)
	require.Equal(t, 3, exitCode(err))
	require.NotContains(t, errText(err), "\n")
}

package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// hostileText is stored content that acts on a terminal printed raw: a
// window-title change (OSC 0 ... BEL), colours, a C1 CSI, a backspace, a
// right-to-left override and an isolate.
const hostileText = "quokka \x1b]0;pwned\x07 \x1b[31mred\x1b[0m \u009b2J back\bspace \u202Eevil\u202C \u2066iso\u2069 end"

// terminalBytes are what must never reach a terminal from stored text.
var terminalBytes = []string{"\x1b", "\x07", "\x08", "\u009b", "\u202e", "\u202c", "\u2066", "\u2069"}

func requireNeutral(t *testing.T, what, out string) {
	t.Helper()
	for _, b := range terminalBytes {
		require.NotContains(t, out, b, "%s printed %q raw", what, b)
	}
	require.Contains(t, out, "\uFFFD", "%s: the neutralised characters stay visible", what)
}

// TestCLINeutralisesStoredControls (issue 28, item 7): every text output
// of stored content (messages, search, sessions show, sessions show
// --conversation, sessions list, export --format md to stdout and to a
// file, and an error naming a stored value) replaces terminal control
// characters and bidi controls with U+FFFD, newlines and tabs kept; --json
// and JSONL keep the stored bytes. Before, the escape sequences and the
// U+202E reached the terminal raw.
func TestCLINeutralisesStoredControls(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	content, err := json.Marshal(hostileText + "\nsecond\tline")
	require.NoError(t, err)
	line := []byte(`{"id": "s1", "source": "cli", "started_at": 1767600000, "messages": [{"role": "user", "content": ` + string(content) + `, "timestamp": 1767600001}]}`)
	in := filepath.Join(dir, "in.jsonl")
	require.NoError(t, os.WriteFile(in, append(line, '\n'), 0o600))
	_, stderr, code := runCLI(t, "--db", db, "import", in)
	require.Equal(t, exitOK, code, stderr)
	// A title another program wrote (the API strips bidi controls from
	// titles, Hermes' old versions did not).
	fixturetest.Exec(t, db, "UPDATE sessions SET title = 'ti\u202Etle \x1b[7m' WHERE id = 's1'")

	for _, args := range [][]string{
		{"messages", "s1"}, {"search", "quokka"}, {"sessions", "show", "s1"}, {"sessions", "show", "s1", "--conversation"},
		{"sessions", "list"}, {"export", "--format", "md"},
	} {
		out, stderr, code := runCLI(t, append([]string{"--db", db}, args...)...)
		require.Equal(t, exitOK, code, "%v: %s", args, stderr)
		requireNeutral(t, strings.Join(args, " "), out)
	}
	out, _, code := runCLI(t, "--db", db, "export", "--format", "md")
	require.Equal(t, exitOK, code)
	require.Contains(t, out, "end\nsecond\tline", "tabs and newlines are kept")

	md := filepath.Join(dir, "out.md")
	_, stderr, code = runCLI(t, "--db", db, "export", "--format", "md", "-o", md)
	require.Equal(t, exitOK, code, stderr)
	b, err := os.ReadFile(md)
	require.NoError(t, err)
	requireNeutral(t, "export --format md -o", string(b))

	// A stored value in an error message.
	_, stderr, code = runCLI(t, "--db", db, "sessions", "show", "ti\u202Etle")
	require.NotEqual(t, exitOK, code)
	require.NotContains(t, stderr, "\u202e")

	// JSON and JSONL keep the bytes.
	out, _, code = runCLI(t, "--db", db, "--json", "messages", "s1")
	require.Equal(t, exitOK, code)
	var ms []struct{ Content string }
	require.NoError(t, json.Unmarshal([]byte(out), &ms))
	require.Equal(t, hostileText+"\nsecond\tline", ms[0].Content)
	out, _, code = runCLI(t, "--db", db, "export")
	require.Equal(t, exitOK, code)
	sc := bufio.NewScanner(strings.NewReader(out))
	require.True(t, sc.Scan())
	var ex struct {
		Title    string
		Messages []struct{ Content string }
	}
	require.NoError(t, json.Unmarshal(sc.Bytes(), &ex))
	require.Equal(t, hostileText+"\nsecond\tline", ex.Messages[0].Content)
	require.Equal(t, "ti\u202Etle \x1b[7m", ex.Title)
}

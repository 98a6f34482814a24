package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCLIImportMergesAnExportWithTheSameTitles (issue 28, item 4): an
// export of another store whose sessions carry titles this store already
// holds (same titles, new ids) is imported whole: each session whose title
// is held gets Hermes' numbered form of it ("Deploy" → "Deploy #2"), or no
// title when that form would be too long, each change is printed with its
// line and session id, and the summary counts imported, skipped and
// changed sessions; exit 0. Before, the first collision stopped the import
// with "the write conflicts with existing data", exit 4, no line, no id,
// and every later line was skipped.
func TestCLIImportMergesAnExportWithTheSameTitles(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	long := strings.Repeat("t", 99)
	var first strings.Builder
	for i, title := range []string{"Deploy", "Notes", long} {
		first.WriteString(`{"id": "a` + string(rune('0'+i)) + `", "source": "cli", "started_at": 1767600000, "title": "` + title +
			`", "messages": [{"role": "user", "content": "hello", "timestamp": 1767600001.5}]}` + "\n")
	}
	in1 := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(in1, []byte(first.String()), 0o600))
	_, stderr, code := runCLI(t, "--db", db, "import", in1)
	require.Equal(t, exitOK, code, stderr)

	// The same store's export, with new ids, plus a session that exists.
	exp, stderr, code := runCLI(t, "--db", db, "export")
	require.Equal(t, exitOK, code, stderr)
	merged := strings.NewReplacer(`"id":"a`, `"id":"b`, `"session_id":"a`, `"session_id":"b`).Replace(exp)
	merged += `{"id": "a0", "source": "cli", "messages": []}` + "\n"
	in2 := filepath.Join(dir, "b.jsonl")
	require.NoError(t, os.WriteFile(in2, []byte(merged), 0o600))
	out, stderr, code := runCLI(t, "--db", db, "import", in2)
	require.Equal(t, exitOK, code, "stdout: %s\nstderr: %s", out, stderr)
	require.Contains(t, out, `(session b0): changed: title "Deploy" is held by session a0: imported as "Deploy #2"`)
	require.Contains(t, out, `(session b1): changed: title "Notes" is held by session a1: imported as "Notes #2"`)
	require.Contains(t, out, `(session b2): changed: title "`+long+`" is held by session a2, and numbered it would be too long: imported without a title`)
	require.Contains(t, out, "imported 3 sessions (3 messages), skipped 1 existing, changed 3 sessions (3 changes above)")

	list, _, code := runCLI(t, "--db", db, "--json", "sessions", "list", "--limit", "100")
	require.Equal(t, exitOK, code)
	var ss []struct {
		ID    string
		Title *string
	}
	require.NoError(t, json.Unmarshal([]byte(list), &ss))
	titles := map[string]string{}
	for _, s := range ss {
		if s.Title != nil {
			titles[s.ID] = *s.Title
		}
	}
	require.Equal(t, map[string]string{"a0": "Deploy", "a1": "Notes", "a2": long, "b0": "Deploy #2", "b1": "Notes #2"}, titles)

	// Once more, new ids again: the next numbers.
	again := strings.NewReplacer(`"id":"a`, `"id":"c`, `"session_id":"a`, `"session_id":"c`).Replace(exp)
	in3 := filepath.Join(dir, "c.jsonl")
	require.NoError(t, os.WriteFile(in3, []byte(again), 0o600))
	jout, stderr, code := runCLI(t, "--db", db, "--json", "import", in3)
	require.Equal(t, exitOK, code, stderr)
	var res struct {
		Sessions int64
		Changes  []struct {
			Line    int64
			Session string
			Change  string
		}
	}
	require.NoError(t, json.Unmarshal([]byte(jout), &res), jout)
	require.EqualValues(t, 3, res.Sessions)
	require.Len(t, res.Changes, 3)
	require.Contains(t, res.Changes[0].Change+res.Changes[1].Change+res.Changes[2].Change, `imported as "Deploy #3"`)
}

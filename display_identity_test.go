package hermesstate_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// identityMessages are messages of every shape: the example,
// quotes and backslashes, control characters, multimodal parts, tool
// calls and results, NULL and empty content, standalone compaction
// summaries. A Hermes compaction handoff carrying a live turn (after the
// summary's end marker, or merged into a preserved message) and a character Unicode 15.0 added (which Python 3.11 and 3.12
// write differently in repr()) get no identity: Hermes fills those.
func identityMessages() (with, without []repo.MessageInput) {
	calls := models.JSON(`[{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{\"cmd\": \"ls -l 'a b'\"}"}}]`)
	with = []repo.MessageInput{
		{Role: "user", Content: strp("héllo 世界 🚀"), Timestamp: 1767000000.0},
		{Role: "user", Content: strp(`it's "quoted" \ back\slash`), Timestamp: 1767000001.25},
		{Role: "user", Content: strp("tab\tnew\nline\r\x01\x7f\u00a0\u200b\u2028 end"), Timestamp: 1767000002.5},
		{Role: "user", Parts: []any{map[string]any{"type": "text", "text": "what is in ~/é?"}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}}}, Timestamp: 1767000003.125},
		{Role: "assistant", ToolCalls: calls, Timestamp: 1767000004.0},
		{Role: "tool", Content: strp("total 0"), ToolCallID: "call_1", ToolName: "terminal", Timestamp: 1767000005.0000001},
		{Role: "assistant", Content: strp(""), Timestamp: 1767000006.0},
		{Role: "system", Content: strp("You are Hermes."), Timestamp: 1767000007.0},
		// Standalone compaction summaries (issue 30 item 5: the row
		// archive_and_compact inserts): Hermes hashes their stored content.
		{Role: "user", Content: strp(standaloneSummary), CompressedSummary: true, Timestamp: 1767000010.0},
		{Role: "user", Content: strp("[CONTEXT SUMMARY]: the legacy prefix"), CompressedSummary: true, Timestamp: 1767000011.0},
		{Role: "assistant", Content: strp(standaloneSummary), CompressedSummary: true, Timestamp: 1767000012.0},
		{Role: "user", Content: strp("a summary without a prefix"), CompressedSummary: true, Timestamp: 1767000013.0},
	}
	without = []repo.MessageInput{
		{Role: "user", Content: strp("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted ... --- END OF CONTEXT SUMMARY — respond to the message below ---\nand now?"), Timestamp: 1767000008.0},
		{Role: "user", Content: strp("a light blue heart \U0001fa75"), Timestamp: 1767000009.0},
		{Role: "user", Content: strp("[PRIOR CONTEXT — for reference only; not a new message]\nearlier ask\n\n[END OF PRIOR CONTEXT — COMPACTION SUMMARY BELOW]\n\n" + standaloneSummary), CompressedSummary: true, Timestamp: 1767000014.0},
	}
	return with, without
}

// standaloneSummary is a summary row as Hermes' compressor writes it: the
// prefix, the body and the end marker, nothing after.
const standaloneSummary = "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary below.\n## Historical Task Snapshot\nUser asked: 'x'\n\n--- END OF CONTEXT SUMMARY — respond to the message below, not the summary above ---"

// hermesIdentities computes, with python3, Hermes v30's display identity
// (sha256 of repr((role, content, timestamp, tool_call_id, tool_calls,
// tool_name)) of each row as SQLite returns it: the algorithm of
// hermes_state_messages.py, run independently of the Go code) and returns
// it with the stored one, hex, by message id.
func hermesIdentities(t *testing.T, path string) map[int64][2]string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing: the display identity is checked against Python's repr()")
		}
		t.Skip("python3 is missing: install it to compare display_identity with Hermes' algorithm")
	}
	out, err := exec.Command(py, "-c", `
import sqlite3, hashlib, json, sys
c = sqlite3.connect(sys.argv[1])
res = {}
for (i, role, content, ts, call_id, calls, tool, ident) in c.execute(
        "SELECT id, role, content, timestamp, tool_call_id, tool_calls, tool_name, display_identity FROM messages"):
    key = (role, content, ts, call_id, calls, tool)
    res[i] = [hashlib.sha256(repr(key).encode("utf-8", "surrogatepass")).hexdigest(), ident.hex() if ident is not None else None]
json.dump(res, sys.stdout)
`, path).Output()
	require.NoError(t, err)
	var raw map[string][2]*string
	require.NoError(t, json.Unmarshal(out, &raw))
	got := map[int64][2]string{}
	for k, v := range raw {
		var id int64
		require.NoError(t, json.Unmarshal([]byte(k), &id))
		stored := ""
		if v[1] != nil {
			stored = *v[1]
		}
		got[id] = [2]string{*v[0], stored}
	}
	return got
}

// requireIdentities checks the rows ids: those of want hold Hermes'
// identity, those of none hold NULL.
func requireIdentities(t *testing.T, path, what string, want, none []int64) {
	t.Helper()
	got := hermesIdentities(t, path)
	for _, id := range want {
		require.Equal(t, got[id][0], got[id][1], "%s: message %d holds the identity Hermes writes", what, id)
	}
	for _, id := range none {
		require.Empty(t, got[id][1], "%s: message %d is left to Hermes", what, id)
	}
}

// TestDisplayIdentityOnEveryWritePath (issue 20 §4): every row hermesstate
// writes holds the display_identity Hermes v30 writes for it: append (one
// message, a batch, concurrent appends grouped in one commit), replace,
// compact (the compacted rows and the clones of the rows after the
// watermark) and import; the expected bytes come from python3 running
// Hermes' algorithm on the stored rows, and for the example from
// the value Hermes stored (f924c2ed...ff3).
func TestDisplayIdentityOnEveryWritePath(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	with, without := identityMessages()
	newSession := func() string {
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		return s.ID
	}
	type writePath struct {
		name       string
		want, none []int64
	}
	var paths []writePath

	// Append, one at a time (the lone-append path).
	sid := newSession()
	var p writePath
	p.name = "append"
	for _, m := range with {
		id, err := st.Messages().Append(ctx, sid, m)
		require.NoError(t, err)
		p.want = append(p.want, id)
	}
	for _, m := range without {
		id, err := st.Messages().Append(ctx, sid, m)
		require.NoError(t, err)
		p.none = append(p.none, id)
	}
	paths = append(paths, p)

	// AppendBatch.
	ids, err := st.Messages().AppendBatch(ctx, newSession(), append(append([]repo.MessageInput{}, with...), without...))
	require.NoError(t, err)
	paths = append(paths, writePath{"append batch", ids[:len(with)], ids[len(with):]})

	// Concurrent appends (group commit).
	sid = newSession()
	idc := make(chan int64, len(with))
	errc := make(chan error, len(with))
	for _, m := range with {
		go func(m repo.MessageInput) {
			id, err := st.Messages().Append(ctx, sid, m)
			idc <- id
			errc <- err
		}(m)
	}
	p = writePath{name: "concurrent appends"}
	for range with {
		require.NoError(t, <-errc)
		p.want = append(p.want, <-idc)
	}
	paths = append(paths, p)

	// Replace.
	sid = newSession()
	_, err = st.Transcript().Replace(ctx, sid, append(append([]repo.MessageInput{}, with...), without...), repo.ReplaceOptions{})
	require.NoError(t, err)
	paths = append(paths, rowsOf(t, path, sid, "replace", len(with)))

	// Compact: compacted rows, and the rows after the watermark cloned.
	sid = newSession()
	_, err = st.Messages().AppendBatch(ctx, sid, with[:2])
	require.NoError(t, err)
	wm, err := st.Compaction().Watermark(ctx, sid)
	require.NoError(t, err)
	late, err := st.Messages().Append(ctx, sid, with[5])
	require.NoError(t, err)
	_, err = st.Compaction().ArchiveAndCompact(ctx, sid, append(append([]repo.MessageInput{}, with...), without...), repo.CompactOptions{Watermark: &wm})
	require.NoError(t, err)
	c := rowsOf(t, path, sid, "compact", -1)
	c.want, c.none = filterActive(t, path, sid, late)
	paths = append(paths, c)

	// Import.
	var line strings.Builder
	line.WriteString(`{"id": "imported-1", "source": "cli", "started_at": 1767000000.0, "messages": [`)
	for i, m := range append(append([]repo.MessageInput{}, with...), without...) {
		if i > 0 {
			line.WriteString(", ")
		}
		msg := map[string]any{"role": m.Role, "timestamp": float64(m.Timestamp)}
		switch {
		case m.Parts != nil:
			msg["content"] = m.Parts
		case m.Content != nil:
			msg["content"] = *m.Content
		}
		if m.ToolCalls != nil {
			msg["tool_calls"] = json.RawMessage(m.ToolCalls)
		}
		if m.ToolCallID != "" {
			msg["tool_call_id"] = m.ToolCallID
		}
		if m.ToolName != "" {
			msg["tool_name"] = m.ToolName
		}
		b, err := json.Marshal(msg)
		require.NoError(t, err)
		line.Write(b)
	}
	line.WriteString("]}\n")
	_, err = st.Portability().Import(ctx, strings.NewReader(line.String()), nil)
	require.NoError(t, err)
	paths = append(paths, rowsOf(t, path, "imported-1", "import", len(with)))
	require.NoError(t, st.Close())

	for _, p := range paths {
		require.NotEmpty(t, p.want, p.name)
		requireIdentities(t, path, p.name, p.want, p.none)
	}

	// The example: what Hermes stored for append_message(id,
	// "user", "héllo 世界 🚀", timestamp=1767000000.0).
	db := fixturetest.Raw(t, path)
	defer db.Close()
	var ident []byte
	require.NoError(t, db.QueryRow("SELECT display_identity FROM messages WHERE id = ?", paths[0].want[0]).Scan(&ident))
	require.Equal(t, "f924c2ed94972850a6e9fcc17b86898e9a8b446d8927ffa24a401b1917b98ff3", hex.EncodeToString(ident))
	// Every row of the display holds an order (Hermes' trigger).
	var unordered int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM messages WHERE display_order IS NULL AND (active = 1 OR compacted = 1)").Scan(&unordered))
	require.Zero(t, unordered)
}

// rowsOf returns the rows of session sid in id order as a path: the first
// nWith are expected to hold an identity, the rest NULL (nWith < 0: all
// listed in want, for the caller to sort).
func rowsOf(t *testing.T, path, sid, name string, nWith int) struct {
	name       string
	want, none []int64
} {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	rows, err := db.Query("SELECT id FROM messages WHERE session_id = ? ORDER BY id", sid)
	require.NoError(t, err)
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	out := struct {
		name       string
		want, none []int64
	}{name: name}
	if nWith < 0 || nWith > len(ids) {
		out.want = ids
		return out
	}
	out.want, out.none = ids[:nWith], ids[nWith:]
	return out
}

// filterActive splits the rows of a compacted session: every row holds
// Hermes' identity except the compacted copies of the three messages that
// get none (the two carriers of a live turn and the Unicode 15.0
// character), found by content.
func filterActive(t *testing.T, path, sid string, _ int64) (want, none []int64) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	rows, err := db.Query("SELECT id, COALESCE(content, '') FROM messages WHERE session_id = ? ORDER BY id", sid)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id int64
		var c string
		require.NoError(t, rows.Scan(&id, &c))
		if strings.Contains(c, "and now?") || strings.Contains(c, "[PRIOR CONTEXT") || strings.Contains(c, "\U0001fa75") {
			none = append(none, id)
		} else {
			want = append(want, id)
		}
	}
	require.NoError(t, rows.Err())
	require.Len(t, none, 3)
	return want, none
}

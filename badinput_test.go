package hermesstate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stretchr/testify/require"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// concOpen opens a fresh store in t.TempDir().
func concOpen(t testing.TB, cfg hs.Config) *hs.Store {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path = filepath.Join(t.TempDir(), "state.db")
	}
	st, err := hs.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// concRaw opens an independent database/sql handle on path.
func concRaw(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sqlitex.OpenEnv(path + "?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// sqlLeakWords are fragments of SQLite/driver error text and SQL that must
// never reach err.Error() (the cause stays reachable through errors.As).
var sqlLeakWords = []string{"sqlite", "syntax error", "insert into", "select ", "update ", "constraint failed", "near \"", "no such", "raise("}

// requireClean asserts err.Error() carries no SQL error text. Echoed user
// input (a quoted id) is removed first: it is data, not a leak.
func requireClean(t testing.TB, err error, echoed ...string) {
	t.Helper()
	msg := err.Error()
	for _, e := range echoed {
		msg = strings.ReplaceAll(msg, fmt.Sprintf("%q", e), `"<input>"`)
	}
	msg = strings.ToLower(msg)
	for _, w := range sqlLeakWords {
		require.NotContains(t, msg, w, "SQL text leaked into %q", err.Error())
	}
}

// requireInvalid asserts err is ErrInvalid with a message naming want.
func requireInvalid(t testing.TB, err error, want string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, hs.ErrInvalid, "%v", err)
	require.Contains(t, err.Error(), want)
	requireClean(t, err)
}

// requireCounters checks that message_count equals the number of message
// rows of every session and tool_call_count the tool calls of its non-tool
// rows, straight from the file.
func requireCounters(t testing.TB, path string) {
	t.Helper()
	db := concRaw(t, path)
	rows, err := db.Query(`SELECT s.id, s.message_count, (SELECT count(*) FROM messages m WHERE m.session_id = s.id) FROM sessions s`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id string
		var mc, n int64
		require.NoError(t, rows.Scan(&id, &mc, &n))
		require.Equal(t, n, mc, "message_count of %s", id)
	}
	require.NoError(t, rows.Err())
}

func TestBadInputMessages(t *testing.T) {
	ctx := context.Background()
	st := concOpen(t, hs.Config{})
	ms := st.Messages()
	sess, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)

	appendBack := func(t *testing.T, m repo.MessageInput) models.Message {
		t.Helper()
		id, err := ms.Append(ctx, sess.ID, m)
		require.NoError(t, err)
		list, err := ms.List(ctx, sess.ID)
		require.NoError(t, err)
		for _, row := range list {
			if row.ID == id {
				return row
			}
		}
		t.Fatalf("message %d not read back", id)
		return models.Message{}
	}
	count := func() int64 {
		n, err := ms.Count(ctx, sess.ID)
		require.NoError(t, err)
		return n
	}

	t.Run("invalid UTF-8 is refused", func(t *testing.T) {
		before := count()
		for field, m := range map[string]repo.MessageInput{
			"content":      {Role: "user", Content: models.Text("ok \xff\xfe bytes")},
			"tool_name":    {Role: "tool", ToolName: "ter\xc3minal", Content: models.Text("x")},
			"reasoning":    {Role: "assistant", Reasoning: models.Text("\xed\xa0\x80 (a CESU-8 surrogate)")},
			"tool_calls":   {Role: "assistant", ToolCalls: models.JSON("[{\"x\": \"\xff\"}]")},
			"role":         {Role: "us\xffer", Content: models.Text("x")},
			"tool_call_id": {Role: "tool", ToolCallID: "call\x80", Content: models.Text("x")},
		} {
			_, err := ms.Append(ctx, sess.ID, m)
			requireInvalid(t, err, field)
		}
		require.Equal(t, before, count(), "nothing written")
	})

	t.Run("NUL bytes are stored faithfully", func(t *testing.T) {
		for _, c := range []string{"a\x00b", "\x00", "trailing\x00", strings.Repeat("\x00", 100)} {
			row := appendBack(t, repo.MessageInput{Role: "user", Content: models.Text(c)})
			require.NotNil(t, row.Content)
			require.Equal(t, c, *row.Content)
		}
		row := appendBack(t, repo.MessageInput{Role: "tool", ToolName: "nul\x00tool", ToolCallID: "c1", Content: models.Text("r")})
		require.Equal(t, "nul\x00tool", *row.ToolName)
	})

	t.Run("lone surrogate escapes in JSON are refused", func(t *testing.T) {
		before := count()
		for _, j := range []string{`[{"x":"\ud800"}]`, `[{"x":"\udfff tail"}]`, `[{"x":"\ud83d"}]`, `[{"x":"\ud83d\u0041"}]`, `[{"\ud800":1}]`} {
			_, err := ms.Append(ctx, sess.ID, repo.MessageInput{Role: "assistant", ToolCalls: models.JSON(j)})
			requireInvalid(t, err, "surrogate")
		}
		_, err := ms.Append(ctx, sess.ID, repo.MessageInput{Role: "assistant", Content: models.Text("x"), DisplayMetadata: models.JSON(`{"k":"\udc00"}`)})
		requireInvalid(t, err, "display_metadata")
		_, err = ms.Append(ctx, sess.ID, repo.MessageInput{Role: "assistant", Content: models.Text("x"), ReasoningDetails: models.JSONText(`[{"t":"\ud800"}]`)})
		requireInvalid(t, err, "reasoning_details")
		require.Equal(t, before, count())

		// Escaped backslashes are not escapes; pairs are fine.
		for _, j := range []string{`[{"x":"\\ud800"}]`, `[{"x":"\ud83d\ude00 ok"}]`, `[{"x":"\\\ud83d\ude00"}]`} {
			row := appendBack(t, repo.MessageInput{Role: "assistant", ToolCalls: models.JSON(j)})
			var want, got any
			require.NoError(t, json.Unmarshal([]byte(j), &want))
			require.NoError(t, json.Unmarshal(row.ToolCalls, &got))
			require.Equal(t, want, got, j)
		}
	})

	t.Run("10 MB content", func(t *testing.T) {
		big := strings.Repeat("0123456789abcdé\n", 10<<20/17)
		row := appendBack(t, repo.MessageInput{Role: "tool", ToolName: "read_file", ToolCallID: "c9", Content: &big})
		require.Equal(t, len(big), len(*row.Content))
		require.True(t, big == *row.Content)
	})

	t.Run("oversize content is refused", func(t *testing.T) {
		huge := strings.Repeat("x", repo.MaxContentBytes+1)
		_, err := ms.Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: &huge})
		requireInvalid(t, err, "limit")
	})

	t.Run("10,000 tool calls", func(t *testing.T) {
		calls := make([]models.ToolCall, 10000)
		for i := range calls {
			calls[i] = models.ToolCall{ID: fmt.Sprintf("call_%d", i), Type: "function",
				Function: models.ToolCallFunction{Name: "terminal", Arguments: fmt.Sprintf(`{"n": %d}`, i)}}
		}
		before, err := st.Sessions().Get(ctx, sess.ID)
		require.NoError(t, err)
		row := appendBack(t, repo.MessageInput{Role: "assistant", ToolCalls: models.MustJSON(calls)})
		var got []models.ToolCall
		require.NoError(t, json.Unmarshal(row.ToolCalls, &got))
		require.Equal(t, calls, got)
		after, err := st.Sessions().Get(ctx, sess.ID)
		require.NoError(t, err)
		require.Equal(t, before.ToolCallCount+10000, after.ToolCallCount)
	})

	t.Run("SQL fragments are data", func(t *testing.T) {
		frags := []string{`'; DROP TABLE messages; --`, `" OR 1=1 --`, `x'); DELETE FROM sessions WHERE ('1'='1`,
			`%' UNION SELECT * FROM sessions --`, `\'; PRAGMA writable_schema=1; --`, "`id`", `NULL`, `?`, `$1`}
		for _, f := range frags {
			row := appendBack(t, repo.MessageInput{Role: "user", Content: models.Text(f), ToolName: f, PlatformMessageID: f})
			require.Equal(t, f, *row.Content)
			require.Equal(t, f, *row.ToolName)
			require.Equal(t, f, *row.PlatformMessageID)
			// As a session id and source.
			s, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "sql " + f, Source: f, Model: f, DisplayName: f, Cwd: f})
			require.NoError(t, err)
			require.Equal(t, "sql "+f, s.ID)
			got, err := st.Sessions().Get(ctx, "sql "+f)
			require.NoError(t, err)
			require.Equal(t, f, got.Source)
			require.Equal(t, f, *got.Model)
			require.Equal(t, f, *got.DisplayName)
			// An id that is a fragment finds nothing.
			_, err = st.Sessions().Get(ctx, f)
			require.ErrorIs(t, err, hs.ErrNotFound)
			requireClean(t, err, f)
			_, err = ms.List(ctx, f)
			require.ErrorIs(t, err, hs.ErrNotFound)
			requireClean(t, err, f)
		}
		n, err := st.Sessions().Count(ctx, "")
		require.NoError(t, err)
		require.EqualValues(t, 1+len(frags), n, "no session was deleted or duplicated")
	})

	t.Run("bad ids and names", func(t *testing.T) {
		for _, id := range []string{"", "a\x00b", "line\nbreak", strings.Repeat("x", repo.MaxIDBytes+1), "bad\xff"} {
			_, err := ms.Append(ctx, id, repo.MessageInput{Role: "user", Content: models.Text("x")})
			requireInvalid(t, err, "session id")
			_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
			if id == "" {
				require.NoError(t, err, "an empty id mints one")
			} else {
				requireInvalid(t, err, "session id")
			}
		}
		_, err := ms.Append(ctx, sess.ID, repo.MessageInput{Role: "", Content: models.Text("x")})
		requireInvalid(t, err, "role")
		_, err = ms.Append(ctx, sess.ID, repo.MessageInput{Role: "user", DisplayMetadata: models.JSON(`[1]`)})
		requireInvalid(t, err, "display_metadata")
		_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", ModelConfig: models.JSON(`{"t": "\ud800"}`)})
		requireInvalid(t, err, "model_config")
		_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", ModelConfig: models.JSON(`{not json`)})
		requireInvalid(t, err, "model_config")
		_, err = ms.Append(ctx, "no-such-session", repo.MessageInput{Role: "user", Content: models.Text("x")})
		require.ErrorIs(t, err, hs.ErrNotFound)
		requireClean(t, err)
	})

	t.Run("odd but valid values", func(t *testing.T) {
		// Not-JSON tool_calls: Hermes parses the string and keeps an empty
		// list, stored as NULL.
		row := appendBack(t, repo.MessageInput{Role: "assistant", Content: models.Text("x"), ToolCalls: models.JSON(`not json`)})
		require.True(t, row.ToolCalls.IsNull())
		// Nonsense timestamps become now.
		for _, ts := range []float64{-1, 1e300} {
			row := appendBack(t, repo.MessageInput{Role: "user", Content: models.Text("t"), Timestamp: models.Epoch(ts)})
			require.InDelta(t, float64(time.Now().Unix()), float64(row.Timestamp), 60)
		}
		// Emoji, RTL, combining marks, BOM.
		for _, c := range []string{"😀👩‍👩‍👧", "مرحبا", "e\u0301", "\ufeffbom", "\u2028\u2029"} {
			row := appendBack(t, repo.MessageInput{Role: "user", Content: models.Text(c)})
			require.Equal(t, c, *row.Content)
		}
	})

	requireCounters(t, st.Path())
}

// TestBadInputNoPartialBatch: a batch that fails anywhere (validation of
// its last message, or the database refusing a row in the third INSERT
// chunk) leaves no row and no counter change behind.
func TestBadInputNoPartialBatch(t *testing.T) {
	ctx := context.Background()
	st := concOpen(t, hs.Config{})
	ms := st.Messages()
	sess, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)

	batch := make([]repo.MessageInput, 1200)
	for i := range batch {
		batch[i] = repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("m%d", i)),
			ToolCalls: models.MustJSON([]models.ToolCall{{ID: "c", Type: "function"}})}
	}
	bad := append([]repo.MessageInput(nil), batch...)
	bad[1199].Content = models.Text("\xff")
	_, err = ms.AppendBatch(ctx, sess.ID, bad)
	requireInvalid(t, err, "content")

	// A trigger (added behind the store's back, as a hostile or newer
	// writer could) refuses row 1100, inside the third 500-row INSERT.
	raw := concRaw(t, st.Path())
	_, err = raw.Exec(`CREATE TRIGGER test_refuse BEFORE INSERT ON messages WHEN NEW.content = 'm1100' BEGIN SELECT RAISE(ABORT, 'refused by test trigger'); END`)
	require.NoError(t, err)
	_, err = ms.AppendBatch(ctx, sess.ID, batch)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "refused by test trigger")
	requireClean(t, err)

	n, err := ms.Count(ctx, sess.ID)
	require.NoError(t, err)
	require.Zero(t, n, "no partial batch")
	got, err := st.Sessions().Get(ctx, sess.ID)
	require.NoError(t, err)
	require.Zero(t, got.MessageCount)
	require.Zero(t, got.ToolCallCount)

	_, err = raw.Exec(`DROP TRIGGER test_refuse`)
	require.NoError(t, err)
	ids, err := ms.AppendBatch(ctx, sess.ID, batch)
	require.NoError(t, err)
	require.Len(t, ids, 1200)
	for i := 1; i < len(ids); i++ {
		require.Greater(t, ids[i], ids[i-1])
	}
	got, err = st.Sessions().Get(ctx, sess.ID)
	require.NoError(t, err)
	require.EqualValues(t, 1200, got.MessageCount)
	require.EqualValues(t, 1200, got.ToolCallCount)
	requireCounters(t, st.Path())

	var me *hs.Error
	require.True(t, errors.As(err, &me) || err == nil)
}

// FuzzAppend feeds free-form content, role and tool_calls to Append. Each
// input is either refused with ErrInvalid (and nothing is written) or
// stored and read back identically, with the session's counters moved by
// exactly this message. Run: go test -run '^$' -fuzz FuzzAppend -fuzztime 1m .
func FuzzAppend(f *testing.F) {
	f.Add("hello", "user", "", false)
	f.Add("a\x00b", "assistant", `[{"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]`, false)
	f.Add("\xff\xfe", "user", "", false)
	f.Add("x", "assistant", `[{"x":"\ud800"}]`, false)
	f.Add("x", "tool", `[1, 2, 3]`, false)
	f.Add("'; DROP TABLE messages; --", "user' OR 1=1 --", `{"a": 1.50, "b": [true, null]}`, false)
	f.Add("", "assistant", `not json`, true)
	f.Add("😀 \u2028", " ", `[]`, false)
	f.Add("x", "user", `"\ud83d\ude00"`, false)
	f.Add("x", "a\nb", `[{"k": 1e400}]`, false)

	st, err := hs.Open(context.Background(), hs.Config{Path: filepath.Join(f.TempDir(), "fuzz.db"), CheckpointEvery: 200})
	require.NoError(f, err)
	f.Cleanup(func() { st.Close() })
	ctx := context.Background()

	f.Fuzz(func(t *testing.T, content, role, toolCalls string, nullContent bool) {
		sess, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "fuzz"})
		require.NoError(t, err)
		m := repo.MessageInput{Role: role, Content: &content}
		if nullContent {
			m.Content = nil
		}
		if toolCalls != "" {
			m.ToolCalls = models.JSON(toolCalls)
		}
		_, err = st.Messages().Append(ctx, sess.ID, m)
		list, lerr := st.Messages().List(ctx, sess.ID)
		require.NoError(t, lerr)
		after, gerr := st.Sessions().Get(ctx, sess.ID)
		require.NoError(t, gerr)
		if err != nil {
			require.ErrorIs(t, err, hs.ErrInvalid, "%v", err)
			requireClean(t, err, role, content)
			require.Empty(t, list, "nothing written on error")
			require.Zero(t, after.MessageCount)
			require.Zero(t, after.ToolCallCount)
			return
		}
		require.Len(t, list, 1)
		got := list[0]
		require.Equal(t, role, got.Role)
		if nullContent {
			require.Nil(t, got.Content)
		} else {
			require.NotNil(t, got.Content)
			require.Equal(t, content, *got.Content)
		}
		if got.ToolCalls.IsNull() {
			// Only not-JSON or empty/falsy JSON is stored as NULL.
			require.True(t, !json.Valid([]byte(toolCalls)) || models.JSON(toolCalls).IsNull(), "tool_calls %q lost", toolCalls)
		} else {
			require.Equal(t, decodeNumbers(t, []byte(toolCalls)), decodeNumbers(t, got.ToolCalls))
		}
		require.EqualValues(t, 1, after.MessageCount)
		want := models.ToolCallCount(got.ToolCalls)
		if role == "tool" {
			want = 0
		}
		require.Equal(t, want, after.ToolCallCount)
	})
}

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	return v
}

// TestBadInputTitlesAndSearch: SQL fragments, LIKE wildcards, FTS5 syntax
// and odd bytes in titles and search strings are data: stored and found
// faithfully (titles after Hermes' sanitizing) or refused with ErrInvalid,
// never an SQL error, never a panic, never another session's row.
func TestBadInputTitlesAndSearch(t *testing.T) {
	ctx := context.Background()
	st := concOpen(t, hs.Config{})
	frags := []string{`'; DROP TABLE sessions; --`, `x" OR "1"="1`, `100% off_sale`, `a\b`, `NEAR(a b)`, `"unterminated`,
		`col:value`, `a AND OR NOT b`, `*`, `^start`, `(((`, `'); DELETE FROM messages; --`}
	var ids []string
	for i, f := range frags {
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		ids = append(ids, s.ID)
		title := fmt.Sprintf("%s %d", f, i)
		_, err = st.Titles().Set(ctx, s.ID, title)
		require.NoError(t, err, title)
		got, err := st.Titles().Get(ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, title, got, "the title is stored as given")
		by, err := st.Titles().ByTitle(ctx, title)
		require.NoError(t, err)
		require.Equal(t, s.ID, by.ID)
		_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("needle " + f)})
		require.NoError(t, err)
	}
	// A title that is a LIKE pattern matches only itself.
	_, err := st.Titles().ByTitle(ctx, "%")
	require.ErrorIs(t, err, hs.ErrNotFound)
	_, err = st.Titles().Resolve(ctx, "100_ off%")
	require.ErrorIs(t, err, hs.ErrNotFound)
	_, err = st.Titles().Set(ctx, ids[0], "bad \xff title")
	if err != nil {
		requireInvalid(t, err, "title")
	}
	_, err = st.Titles().Set(ctx, ids[0], strings.Repeat("long ", 1000))
	requireInvalid(t, err, "title")

	for _, q := range append(frags, "", " ", "\x00", "\xff\xfe", `"`, `""`, strings.Repeat("(", 500), strings.Repeat("a ", 5000)) {
		hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{Limit: 50})
		if err != nil {
			require.ErrorIs(t, err, hs.ErrInvalid, "query %q: %v", q, err)
			requireClean(t, err, q)
			continue
		}
		for _, h := range hits {
			require.Contains(t, ids, h.SessionID)
		}
	}
	// Every session and message is still there.
	n, err := st.Sessions().Count(ctx, "")
	require.NoError(t, err)
	require.EqualValues(t, len(frags), n)
	m, err := st.Messages().Count(ctx, "")
	require.NoError(t, err)
	require.EqualValues(t, len(frags), m)
	hits, err := st.Search().Messages(ctx, "needle", repo.SearchOptions{Limit: 50})
	require.NoError(t, err)
	require.Len(t, hits, len(frags))
	requireCounters(t, st.Path())
}

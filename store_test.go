package hermesstate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// buildHermesShapedFile creates a file the way Hermes v30 does, from the
// DDL Hermes wrote into the v30 fixture (FTS tables and triggers included),
// and fills it with rows written by plain SQL, as another program would.
func buildHermesShapedFile(t *testing.T) string {
	t.Helper()
	var v30 *fixturetest.Fixture
	for _, f := range fixturetest.LoadFixtures(t) {
		if f.Version == 30 {
			v30 = f
		}
	}
	require.NotNil(t, v30)
	var master []struct {
		Type string  `json:"type"`
		Name string  `json:"name"`
		SQL  *string `json:"sql"`
	}
	v30.Get(t, "sqlite_master", &master)
	path := filepath.Join(t.TempDir(), "state.db")
	db := fixturetest.Raw(t, path)
	_, err := db.Exec("PRAGMA journal_mode=WAL")
	require.NoError(t, err)
	order := map[string]int{"table": 0, "view": 1, "index": 2, "trigger": 3}
	for pass := 0; pass < 4; pass++ {
		for _, o := range master {
			if o.SQL == nil || order[o.Type] != pass || o.Name == "sqlite_sequence" {
				continue
			}
			if strings.HasPrefix(o.Name, "messages_fts_") && o.Type == "table" && !strings.HasSuffix(o.Name, "_trigram") {
				continue // FTS5 shadow tables are created by their virtual table
			}
			if strings.HasPrefix(o.Name, "messages_fts_trigram_") && o.Type == "table" {
				continue
			}
			_, err := db.Exec(*o.SQL)
			require.NoError(t, err, o.Name)
		}
	}
	for _, q := range []string{
		`INSERT INTO schema_version (version) VALUES (30)`,
		`INSERT INTO system_prompts (hash, prompt) VALUES ('` + repo.PromptHash("You are Hermes.") + `', 'You are Hermes.')`,
		`INSERT INTO sessions (id, source, model, model_config, system_prompt_hash, started_at, message_count, tool_call_count, title)
		 VALUES ('s1', 'cli', 'anthropic/claude', '{"temperature": 0.2, "note": "caf\u00e9"}', '` + repo.PromptHash("You are Hermes.") + `', 1767604501.5, 4, 1, 'Deploy fix')`,
		`INSERT INTO sessions (id, source, user_id, started_at, ended_at, end_reason, message_count) VALUES ('s2', 'telegram', '42', 1767604600.25, 1767604700.75, 'idle', 1)`,
		`INSERT INTO messages (session_id, role, content, timestamp, active) VALUES ('s1', 'user', 'How do I fix the docker deployment?', 1767604502.125, 1)`,
		`INSERT INTO messages (session_id, role, content, tool_calls, timestamp, finish_reason, reasoning, active)
		 VALUES ('s1', 'assistant', NULL, '[{"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": "{\"command\": \"ls\"}"}}]', 1767604503.5, 'tool_calls', 'look first', 1)`,
		`INSERT INTO messages (session_id, role, content, tool_call_id, tool_name, timestamp, active) VALUES ('s1', 'tool', 'a.txt', 'call_1', 'terminal', 1767604504.0, 1)`,
		`INSERT INTO messages (session_id, role, content, timestamp, active) VALUES ('s1', 'assistant', '', 1767604505.0, 1)`,
		`INSERT INTO messages (session_id, role, content, timestamp, active) VALUES ('s2', 'user', '广西桂林', 1767604601.0, 1)`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	require.NoError(t, db.Close())
	return path
}

func TestHermesShapedFileAdoptedAndReadBack(t *testing.T) {
	ctx := context.Background()
	path := buildHermesShapedFile(t)
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()

	s1, err := st.Sessions().Get(ctx, "s1")
	require.NoError(t, err)
	require.Equal(t, "cli", s1.Source)
	require.Equal(t, "You are Hermes.", *s1.SystemPrompt)
	require.Equal(t, `{"temperature": 0.2, "note": "caf\u00e9"}`, string(s1.ModelConfig))
	require.Equal(t, models.Epoch(1767604501.5), s1.StartedAt)
	require.EqualValues(t, 4, s1.MessageCount)

	ms, err := st.Messages().List(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, ms, 4)
	require.Nil(t, ms[1].Content)
	require.Equal(t, "", *ms[3].Content)
	require.EqualValues(t, 1, models.ToolCallCount(ms[1].ToolCalls))

	conv, err := st.Messages().Conversation(ctx, "s1", repo.ConversationOptions{})
	require.NoError(t, err)
	got := fixturetest.ToAny(conv)
	want := fixturetest.ToAny([]map[string]any{
		{"role": "user", "content": "How do I fix the docker deployment?", "_db_persisted": true, "timestamp": 1767604502.125},
		{"role": "assistant", "content": nil, "_db_persisted": true, "timestamp": 1767604503.5, "finish_reason": "tool_calls", "reasoning": "look first",
			"tool_calls": []any{map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "terminal", "arguments": `{"command": "ls"}`}}}},
		{"role": "tool", "content": "a.txt", "_db_persisted": true, "timestamp": 1767604504.0, "tool_call_id": "call_1", "tool_name": "terminal"},
		{"role": "assistant", "content": "", "_db_persisted": true, "timestamp": 1767604505.0},
	})
	require.Empty(t, fixturetest.JSONDiff("conversation", want, got, false))

	// The file keeps working for Hermes: its FTS triggers still index our rows.
	id, err := st.Messages().Append(ctx, "s2", repo.MessageInput{Role: "assistant", Content: models.Text("zebra-unique-token reply")})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	db := fixturetest.Raw(t, path)
	var hit int64
	require.NoError(t, db.QueryRow(`SELECT rowid FROM messages_fts WHERE messages_fts MATCH '"zebra"'`).Scan(&hit))
	require.Equal(t, id, hit)
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM messages`).Scan(&n))
	require.Equal(t, 6, n)
	var mc int
	require.NoError(t, db.QueryRow(`SELECT message_count FROM sessions WHERE id = 's2'`).Scan(&mc))
	require.Equal(t, 2, mc)
}

// TestAppendToFixtureAndReopen appends to every Hermes-made file after
// adoption, closes, reopens and checks rows and counters.
func TestAppendToFixtureAndReopen(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			path := f.CopyDB(t)
			st, err := hs.Open(ctx, hs.Config{Path: path})
			require.NoError(t, err)
			list, err := st.Sessions().List(ctx, repo.ListOptions{Limit: 100})
			require.NoError(t, err)
			require.NotEmpty(t, list)
			var target *models.Session
			for i := range list {
				if list[i].EndReason == nil || *list[i].EndReason != "compression" {
					target = &list[i]
					break
				}
			}
			require.NotNil(t, target)
			before, err := st.Messages().List(ctx, target.ID)
			require.NoError(t, err)
			totalBefore, err := st.Messages().Count(ctx, "")
			require.NoError(t, err)
			calls := models.MustJSON([]models.ToolCall{{ID: "c9", Type: "function", Function: models.ToolCallFunction{Name: "read_file", Arguments: `{"path": "a"}`}}, {ID: "c10", Type: "function", Function: models.ToolCallFunction{Name: "terminal", Arguments: "{}"}}})
			ids, err := st.Messages().AppendBatch(ctx, target.ID, []repo.MessageInput{
				{Role: "user", Content: models.Text("appended after adoption")},
				{Role: "assistant", ToolCalls: calls},
			})
			require.NoError(t, err)
			require.Len(t, ids, 2)
			require.NoError(t, st.Close())

			st, err = hs.Open(ctx, hs.Config{Path: path})
			require.NoError(t, err)
			defer st.Close()
			after, err := st.Messages().List(ctx, target.ID)
			require.NoError(t, err)
			require.Len(t, after, len(before)+2)
			require.Empty(t, fixturetest.JSONDiff("original rows", fixturetest.ToAny(before), fixturetest.ToAny(after[:len(before)]), false))
			require.Equal(t, "appended after adoption", *after[len(before)].Content)
			s, err := st.Sessions().Get(ctx, target.ID)
			require.NoError(t, err)
			require.Equal(t, target.MessageCount+2, s.MessageCount)
			require.Equal(t, target.ToolCallCount+2, s.ToolCallCount)
			totalAfter, err := st.Messages().Count(ctx, "")
			require.NoError(t, err)
			require.Equal(t, totalBefore+2, totalAfter)
			pending, err := st.MigrationsPending(ctx)
			require.NoError(t, err)
			require.Empty(t, pending)
			require.NoError(t, st.Close())
			// Hermes' v11–v21 trigram indexes already fail integrity-check under
			// SQLite 3.53 in the pristine files (tokenizer changes since the
			// 3.40.1 that wrote them); only damage we could have caused counts.
			fixturetest.FTSIntegrity(t, path, fixturetest.FTSBrokenBefore(t, f))
		})
	}
}

func TestConcurrentOpensMigrateOnce(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"fresh", "hermes-v14"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if name != "fresh" {
				for _, f := range fixturetest.LoadFixtures(t) {
					if f.Name == name {
						path = f.CopyDB(t)
					}
				}
			}
			const n = 6
			var wg sync.WaitGroup
			errs := make([]error, n)
			stores := make([]*hs.Store, n)
			for i := 0; i < n; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					stores[i], errs[i] = hs.Open(ctx, hs.Config{Path: path})
				}(i)
			}
			wg.Wait()
			for i := 0; i < n; i++ {
				require.NoError(t, errs[i], "opener %d", i)
				require.NoError(t, stores[i].Close())
			}
			db := fixturetest.Raw(t, path)
			var ids, distinct, versions int
			require.NoError(t, db.QueryRow(`SELECT count(*), count(DISTINCT id) FROM `+migrations.TableName).Scan(&ids, &distinct))
			require.Equal(t, len(migrations.List()), ids)
			require.Equal(t, ids, distinct)
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM schema_version`).Scan(&versions))
			require.Equal(t, 1, versions)
			if name != "fresh" {
				// Step 20 seeded usage once: one row per (session, model, route, task).
				var dup int
				require.NoError(t, db.QueryRow(`SELECT count(*) - count(DISTINCT session_id || '|' || model || '|' || task) FROM session_model_usage`).Scan(&dup))
				require.Equal(t, 0, dup)
			}
		})
	}
}

func TestFileModes(t *testing.T) {
	ctx := context.Background()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	st, path := hermesstatetest.FreshPath(t)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("hi")})
	require.NoError(t, err)
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		require.NoError(t, err, p)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), p)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("HERMES_HOME", "/tmp/hh")
	require.Equal(t, "/tmp/hh/state.db", hs.DefaultPath())
	t.Setenv("HERMES_HOME", "")
	home, _ := os.UserHomeDir()
	require.Equal(t, filepath.Join(home, ".hermes", "state.db"), hs.DefaultPath())
}

func TestBadInputOnAppend(t *testing.T) {
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)

	_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("bad \xff\xfe utf8")})
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.Contains(t, err.Error(), "UTF-8")
	_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "", Content: models.Text("x")})
	require.ErrorIs(t, err, hs.ErrInvalid)
	_, err = st.Messages().Append(ctx, "no-such-session", repo.MessageInput{Role: "user", Content: models.Text("x")})
	require.ErrorIs(t, err, hs.ErrNotFound)
	_, err = st.Messages().AppendBatch(ctx, s.ID, []repo.MessageInput{{Role: "user", Content: models.Text("ok")}, {Role: "user", Content: models.Text("\xc3")}})
	require.ErrorIs(t, err, hs.ErrInvalid)

	nul := "before\x00after"
	big := strings.Repeat("0123456789abcdef", 5<<20/16)
	id1, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: &nul})
	require.NoError(t, err)
	id2, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "tool", Content: &big, ToolName: "terminal"})
	require.NoError(t, err)

	ms, err := st.Messages().List(ctx, s.ID)
	require.NoError(t, err)
	require.Len(t, ms, 2, "refused writes left no partial row")
	require.Equal(t, id1, ms[0].ID)
	require.Equal(t, nul, *ms[0].Content)
	require.Equal(t, id2, ms[1].ID)
	require.Equal(t, big, *ms[1].Content)
	got, err := st.Sessions().Get(ctx, s.ID)
	require.NoError(t, err)
	require.EqualValues(t, 2, got.MessageCount)

	// A session ended by compression refuses appends.
	_, err = st.Sessions().End(ctx, s.ID, "compression")
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("late")})
	require.ErrorIs(t, err, hs.ErrConflict)
	_ = path
}

func TestErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	st, _ := hermesstatetest.FreshPath(t)
	_, err := st.Sessions().Get(ctx, "missing")
	require.ErrorIs(t, err, hs.ErrNotFound)
	var he *hs.Error
	require.True(t, errors.As(err, &he))
	require.Equal(t, "sessions.get", he.Op)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", ParentSessionID: "nope"})
	require.ErrorIs(t, err, hs.ErrNotFound)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: ""})
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.NoError(t, st.Close())
	_, err = st.Sessions().Get(ctx, "x")
	require.ErrorIs(t, err, hs.ErrClosed)
	_, err = st.Messages().Append(ctx, "x", repo.MessageInput{Role: "user"})
	require.ErrorIs(t, err, hs.ErrClosed)
}

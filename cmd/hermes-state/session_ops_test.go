package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// opsStore writes a store with a compressed conversation (root -> tip) and
// a plain one with three user turns, and returns its path and the plain
// session's message ids.
func opsStore(t *testing.T) (string, []int64) {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: db})
	require.NoError(t, err)
	defer st.Close()
	text := func(s string) *string { return &s }
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "20260101_root", Source: "cli", StartedAt: 1767225600})
	require.NoError(t, err)
	_, err = st.Messages().AppendBatch(ctx, "20260101_root", []repo.MessageInput{{Role: "user", Content: text("first ask")}, {Role: "assistant", Content: text("first answer")}})
	require.NoError(t, err)
	_, err = st.Sessions().End(ctx, "20260101_root", "compression")
	require.NoError(t, err)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "20260101_tip", Source: "cli", ParentSessionID: "20260101_root", StartedAt: 1767225700})
	require.NoError(t, err)
	_, err = st.Messages().AppendBatch(ctx, "20260101_tip", []repo.MessageInput{{Role: "user", Content: text("[CONTEXT SUMMARY]: first ask")}, {Role: "user", Content: text("second ask")}})
	require.NoError(t, err)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "20260102_plain", Source: "telegram", StartedAt: 1767312000})
	require.NoError(t, err)
	var ms []repo.MessageInput
	for i := 1; i <= 3; i++ {
		ms = append(ms, repo.MessageInput{Role: "user", Content: text(fmt.Sprintf("ask %d", i))}, repo.MessageInput{Role: "assistant", Content: text(fmt.Sprintf("reply %d", i))})
	}
	ids, err := st.Messages().AppendBatch(ctx, "20260102_plain", ms)
	require.NoError(t, err)
	return db, ids
}

func TestCLIMessagesPagingAndWindow(t *testing.T) {
	db, ids := opsStore(t)
	out, err := run(t, "--db", db, "messages", "20260102")
	require.NoError(t, err)
	require.Equal(t, 6, strings.Count(out, "\n"))
	out, err = run(t, "--db", db, "--json", "messages", "20260102_plain", "--after", fmt.Sprint(ids[1]), "--limit", "2")
	require.NoError(t, err)
	var page []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page, 2)
	require.EqualValues(t, ids[2], page[0]["id"])
	out, err = run(t, "--db", db, "--json", "messages", "20260102_plain", "--latest", "--limit", "1")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Len(t, page, 1)
	require.Equal(t, "reply 3", page[0]["content"])

	out, err = run(t, "--db", db, "--json", "messages", "20260102_plain", "--around", fmt.Sprint(ids[2]), "--window", "1")
	require.NoError(t, err)
	var win map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &win))
	require.Len(t, win["window"], 3)
	require.EqualValues(t, 1, win["messages_before"])
	out, err = run(t, "--db", db, "messages", "20260102_plain", "--around", fmt.Sprint(ids[0]), "--window", "2")
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(out, "\n"))
	require.Contains(t, out, "ask 1")

	_, err = run(t, "--db", db, "messages", "20260102_plain", "--around", "999999")
	require.ErrorIs(t, err, hs.ErrNotFound)
	_, err = run(t, "--db", db, "messages", "20260102_plain", "--around", "1", "--latest")
	require.ErrorIs(t, err, hs.ErrInvalid)
	_, err = run(t, "--db", db, "messages", "20260102_plain", "--after", "1", "--latest")
	require.ErrorIs(t, err, hs.ErrInvalid)
}

func TestCLIArchiveReadRewindResume(t *testing.T) {
	db, ids := opsStore(t)

	// archive / unarchive one lineage; bulk archive.
	out, err := run(t, "--db", db, "sessions", "archive", "20260101_tip")
	require.NoError(t, err)
	require.Equal(t, "archived 20260101_tip\n", out)
	out, err = run(t, "--db", db, "--json", "sessions", "list")
	require.NoError(t, err)
	require.NotContains(t, out, "20260101_", "the whole lineage is archived")
	_, err = run(t, "--db", db, "sessions", "archive", "20260101_root", "--undo")
	require.NoError(t, err)
	out, err = run(t, "--db", db, "--json", "sessions", "list")
	require.NoError(t, err)
	require.Contains(t, out, "20260101_tip")
	_, err = run(t, "--db", db, "sessions", "archive")
	require.ErrorIs(t, err, hs.ErrInvalid)
	_, err = run(t, "--db", db, "sessions", "archive", "20260102_plain", "--older-than", "1h")
	require.ErrorIs(t, err, hs.ErrInvalid)
	out, err = run(t, "--db", db, "--json", "sessions", "archive", "--older-than", "1h", "--source", "cron")
	require.NoError(t, err)
	require.JSONEq(t, `{"archived": 0}`, out)

	// read / unread.
	out, err = run(t, "--db", db, "sessions", "read", "20260102_plain", "--unread")
	require.NoError(t, err)
	require.Equal(t, "20260102_plain marked unread\n", out)
	out, err = run(t, "--db", db, "--json", "sessions", "show", "20260102_plain")
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.EqualValues(t, 0, s["last_read_at"])
	_, err = run(t, "--db", db, "sessions", "read", "20260102_plain")
	require.NoError(t, err)
	out, err = run(t, "--db", db, "--json", "sessions", "show", "20260102_plain")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Greater(t, s["last_read_at"].(float64), 1.7e9)

	// rewind by turn, then to a message.
	out, err = run(t, "--db", db, "sessions", "rewind", "20260102_plain", "--turn", "-1")
	require.NoError(t, err)
	require.Equal(t, "rewound 2 messages of 20260102_plain; the prompt was: ask 3\n", out)
	out, err = run(t, "--db", db, "--json", "sessions", "rewind", "20260102_plain", "--to", fmt.Sprint(ids[2]))
	require.NoError(t, err)
	var rw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rw))
	require.EqualValues(t, 2, rw["rewound_count"])
	require.EqualValues(t, ids[1], rw["new_head_id"])
	out, err = run(t, "--db", db, "messages", "20260102_plain")
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(out, "\n"))
	out, err = run(t, "--db", db, "messages", "20260102_plain", "--all")
	require.NoError(t, err)
	require.Equal(t, 4, strings.Count(out, "(inactive)"), "rewound rows are kept")
	require.Equal(t, 6, strings.Count(out, "\n"))
	_, err = run(t, "--db", db, "sessions", "rewind", "20260102_plain", "--to", fmt.Sprint(ids[1]))
	require.ErrorIs(t, err, hs.ErrInvalid, "an assistant row is not a rewind target")
	_, err = run(t, "--db", db, "sessions", "rewind", "20260102_plain")
	require.ErrorIs(t, err, hs.ErrInvalid)
	_, err = run(t, "--db", db, "sessions", "rewind", "20260101_root", "--turn", "0")
	require.ErrorIs(t, err, hs.ErrConflict, "a session ended by compression")

	// resume follows the compression chain and shows the lineage.
	out, err = run(t, "--db", db, "sessions", "resume", "20260101_ro")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(out, "resume 20260101_tip: 4 messages shown, 2 sent to the model\n"), out)
	require.Contains(t, out, "[user] first ask")
	out, err = run(t, "--db", db, "--json", "sessions", "resume", "20260101_root")
	require.NoError(t, err)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Equal(t, "20260101_tip", res["id"])
	require.Len(t, res["model"], 2)
	_, err = run(t, "--db", db, "sessions", "resume", "nope")
	require.ErrorIs(t, err, hs.ErrNotFound)
}

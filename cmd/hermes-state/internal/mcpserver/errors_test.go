package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/internal/errtext"
)

// badCall is a tool call with arguments a client may send by mistake.
type badCall struct {
	tool string
	args any
	// want is a substring of the tool error's message.
	want string
}

var badCalls = []badCall{
	{mcpserver.ToolSearchSessions, map[string]any{}, "query"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": 5}, "query"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "   "}, "query is empty"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": strings.Repeat("deploy ", 1000)}, "query"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "limit": 1000000}, "limit"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "limit": -1}, "limit"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "limit": 1e300}, "limit"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "limit": 2.5}, "limit"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "offset": -1}, "offset"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "sort": "sideways"}, "sort"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "roles": []string{"robot"}}, "robot"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "sources": "cli"}, "sources"},
	{mcpserver.ToolSearchSessions, map[string]any{"query": "x", "no_such_argument": true}, "no_such_argument"},
	{mcpserver.ToolSearchSessions, []any{"docker"}, ""},
	{mcpserver.ToolListSessions, map[string]any{"limit": 10000}, "limit"},
	{mcpserver.ToolListSessions, map[string]any{"limit": 0}, "limit"},
	{mcpserver.ToolListSessions, map[string]any{"offset": -3}, "offset"},
	{mcpserver.ToolListSessions, map[string]any{"limit": "ten"}, "limit"},
	{mcpserver.ToolListSessions, map[string]any{"source": 7}, "source"},
	{mcpserver.ToolGetConversation, map[string]any{}, "session_id"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": 123}, "session_id"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": "no-such-session"}, `"no-such-session"`},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": "s-"}, "s-"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": "bad\x00id"}, "control characters"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": strings.Repeat("x", 1000)}, "session_id"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": sBig, "offset": -1}, "offset"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": sBig, "offset": 1.5}, "offset"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": sBig, "limit": 0}, "limit"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": sBig, "limit": 100000}, "limit"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": sBig, "max_bytes": 10}, "max_bytes"},
	{mcpserver.ToolGetConversation, map[string]any{"session_id": sBig, "max_bytes": 1e12}, "max_bytes"},
	{mcpserver.ToolGetSession, map[string]any{"session_id": ""}, "session_id"},
	{mcpserver.ToolGetSession, map[string]any{"session_id": "nope"}, `no session id starts with "nope"`},
	{mcpserver.ToolGetSession, map[string]any{"session_id": []string{"a"}}, "session_id"},
}

// checkBadCalls sends every bad call and checks each gets a tool error
// (never a protocol error, never a crash), then that the server still
// answers.
func checkBadCalls(t *testing.T, cs *mcp.ClientSession) {
	for _, c := range badCalls {
		b, _ := json.Marshal(c.args)
		name := c.tool + string(b)
		if len(name) > 120 {
			name = name[:120]
		}
		msg := toolErr(t, cs, c.tool, c.args)
		t.Logf("%s -> %s", name, msg)
		require.Contains(t, msg, c.want, name)
		require.NotContains(t, strings.ToLower(msg), "select ", "%s: no SQL in messages", name)
		require.NotContains(t, msg, "panic", name)
		require.NotContains(t, msg, "\n", "%s: one line", name)
	}
	l := call[listOut](t, cs, mcpserver.ToolListSessions, nil)
	require.NotEmpty(t, l.Sessions, "the server still answers")
}

func TestBadArguments(t *testing.T) {
	st := openSQLite(t, t.TempDir()+"/state.db")
	seed(t, st)
	cs := connect(t, st, mcpserver.Options{AllowWrite: true})
	checkBadCalls(t, cs)

	// The messages are the CLI's: the store's error in the user's terms, first line.
	ctx := context.Background()
	_, err := st.Lineage().ResolveID(ctx, "no-such-session")
	require.ErrorIs(t, err, hs.ErrNotFound)
	require.Equal(t, errtext.FirstLine(err), toolErr(t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": "no-such-session"}))
	_, err = st.Lineage().ResolveID(ctx, "s-")
	require.ErrorIs(t, err, hs.ErrConflict)
	require.Equal(t, errtext.FirstLine(err), toolErr(t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": "s-"}))

	// Unknown tools are refused by the protocol, not run.
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "drop_everything", Arguments: map[string]any{}})
	require.Error(t, err)
}

// TestWriteTools: set_title and append_note exist only with AllowWrite,
// write what they say, and report the store's errors as tool errors.
func TestWriteTools(t *testing.T) {
	st := openSQLite(t, t.TempDir()+"/state.db")
	seed(t, st)
	checkWriteTools(t, st)
}

func checkWriteTools(t *testing.T, st *hs.Store) {
	ctx := context.Background()
	ro := connect(t, st, mcpserver.Options{})
	tools := toolNames(t, ro)
	for _, w := range mcpserver.WriteTools {
		require.NotContains(t, tools, w, "read-only server")
		res, err := ro.CallTool(ctx, &mcp.CallToolParams{Name: w, Arguments: map[string]any{"session_id": sTG, "title": "x", "text": "x"}})
		require.True(t, err != nil || res.IsError, "%s must not run on a read-only server", w)
	}
	title, err := st.Titles().Get(ctx, sTG)
	require.NoError(t, err)
	require.Empty(t, title, "nothing written")
	n, err := st.Messages().Count(ctx, sTG)
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "nothing written")

	cs := connect(t, st, mcpserver.Options{AllowWrite: true})
	type titleOut struct {
		SessionID string `json:"session_id"`
		Title     string `json:"title"`
	}
	got := call[titleOut](t, cs, mcpserver.ToolSetTitle, map[string]any{"session_id": "s-t", "title": "  Quokka   trip "})
	require.Equal(t, titleOut{SessionID: sTG, Title: "Quokka trip"}, got)
	require.Equal(t, "Quokka trip", call[titleOut](t, cs, mcpserver.ToolSetTitle, map[string]any{"session_id": sTG, "title": "Quokka trip"}).Title, "idempotent")
	g := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": sTG})
	require.Equal(t, "Quokka trip", g.Session.Title)
	// A title held by another session: the store's conflict, as the CLI says it.
	msg := toolErr(t, cs, mcpserver.ToolSetTitle, map[string]any{"session_id": sBig, "title": "Quokka trip"})
	_, err = st.Titles().Set(ctx, sBig, "Quokka trip")
	require.ErrorIs(t, err, hs.ErrConflict)
	require.Equal(t, `title "Quokka trip" is already in use by session `+sTG, msg)
	require.Equal(t, errtext.FirstLine(err), msg)
	require.Contains(t, toolErr(t, cs, mcpserver.ToolSetTitle, map[string]any{"session_id": sTG, "title": strings.Repeat("t", 300)}), "100")
	require.Contains(t, toolErr(t, cs, mcpserver.ToolSetTitle, map[string]any{"session_id": "nope", "title": "x"}), `no session id starts with "nope"`)
	require.Contains(t, toolErr(t, cs, mcpserver.ToolSetTitle, map[string]any{"session_id": sTG}), "title")
	// Clearing.
	require.Empty(t, call[titleOut](t, cs, mcpserver.ToolSetTitle, map[string]any{"session_id": sTG, "title": ""}).Title)
	title, err = st.Titles().Get(ctx, sTG)
	require.NoError(t, err)
	require.Empty(t, title)

	type noteOut struct {
		SessionID string `json:"session_id"`
		MessageID int64  `json:"message_id"`
	}
	note := call[noteOut](t, cs, mcpserver.ToolAppendNote, map[string]any{"session_id": sTG, "text": "Remember the wombat photo."})
	require.Equal(t, sTG, note.SessionID)
	require.Positive(t, note.MessageID)
	p := call[page](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": sTG})
	require.Equal(t, 4, p.Total)
	last := p.Messages[3]
	require.Equal(t, "user", last["role"])
	require.Equal(t, "Remember the wombat photo.", last["content"])
	require.Equal(t, mcpserver.NoteDisplayKind, last["display_kind"])
	s := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "wombat"})
	require.Len(t, s.Hits, 1)
	require.Equal(t, note.MessageID, s.Hits[0].MessageID)
	g = call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": sTG})
	require.EqualValues(t, 4, g.Session.MessageCount)
	require.Contains(t, toolErr(t, cs, mcpserver.ToolAppendNote, map[string]any{"session_id": sTG, "text": "  "}), "text")
	require.Contains(t, toolErr(t, cs, mcpserver.ToolAppendNote, map[string]any{"session_id": sTG, "text": strings.Repeat("n", mcpserver.MaxNoteLength+1)}), "text")
	require.Contains(t, toolErr(t, cs, mcpserver.ToolAppendNote, map[string]any{"session_id": "nope", "text": "x"}), `no session id starts with "nope"`)
	n, err = st.Messages().Count(ctx, sTG)
	require.NoError(t, err)
	require.EqualValues(t, 4, n, "failed notes wrote nothing")

	// A session ended by compression refuses notes, with the store's reason.
	_, err = st.Sessions().End(ctx, sChild, "compression")
	require.NoError(t, err)
	msg = toolErr(t, cs, mcpserver.ToolAppendNote, map[string]any{"session_id": sChild, "text": "late"})
	require.Contains(t, msg, "was ended by compression; append to its continuation")
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// scenario is what seed wrote: the contents of s-big by index and the id
// of the message holding the word "zebrafinch".
type scenario struct {
	big      []string
	hugeAt   int
	zebraID  int64
	bigCount int
}

const (
	sBig   = "s-big"
	sTG    = "s-tg"
	sChild = "s-child"
	base   = 1767000000.0
)

// seed writes a fresh store's scenario through the library: a CLI session
// of 150 messages (one of 300 KiB, some of 3 KiB, tool calls, the word
// "zebrafinch" once), a later Telegram session, and a child of the first.
func seed(t testing.TB, st *hs.Store) scenario {
	t.Helper()
	ctx := context.Background()
	var sc scenario
	for _, s := range []repo.SessionInput{
		{ID: sBig, Source: "cli", Model: "test/model-a", StartedAt: base, SystemPrompt: "You are a test."},
		{ID: sTG, Source: "telegram", StartedAt: base + 5000},
		{ID: sChild, Source: "cli", ParentSessionID: sBig, StartedAt: base + 100},
	} {
		_, err := st.Sessions().Create(ctx, s)
		require.NoError(t, err)
	}
	sc.bigCount, sc.hugeAt = 150, 90
	var batch []repo.MessageInput
	for i := 0; i < sc.bigCount; i++ {
		role := []string{"user", "assistant"}[i%2]
		text := fmt.Sprintf("message %d of the big session.", i)
		switch {
		case i == sc.hugeAt:
			text = strings.Repeat("x", 300<<10) + " end of huge"
		case i%17 == 5:
			text += " " + strings.TrimSpace(strings.Repeat("lorem ipsum ", 256))
		case i == 77:
			text += " A zebrafinch sang."
		}
		m := repo.MessageInput{Role: role, Content: &text, Timestamp: models.Epoch(base + float64(i))}
		if i == 40 {
			m.Role = "assistant"
			m.ToolCalls = models.MustJSON([]map[string]any{{"id": "call_1", "type": "function",
				"function": map[string]any{"name": "terminal", "arguments": `{"command":"ls"}`}}})
		}
		if i == 41 {
			m.Role, m.ToolName, m.ToolCallID = "tool", "terminal", "call_1"
		}
		sc.big = append(sc.big, text)
		batch = append(batch, m)
	}
	ids, err := st.Messages().AppendBatch(ctx, sBig, batch)
	require.NoError(t, err)
	sc.zebraID = ids[77]
	for i, text := range []string{"Planning a trip to see a quokka.", "Rottnest Island is the place.", "Thanks!"} {
		text := text
		_, err := st.Messages().Append(ctx, sTG, repo.MessageInput{Role: []string{"user", "assistant"}[i%2], Content: &text,
			Timestamp: models.Epoch(base + 6000 + float64(i))})
		require.NoError(t, err)
	}
	child := "child work"
	_, err = st.Messages().Append(ctx, sChild, repo.MessageInput{Role: "user", Content: &child, Timestamp: models.Epoch(base + 101)})
	require.NoError(t, err)
	cost := 0.25
	require.NoError(t, st.Sessions().UpdateTokenCounts(ctx, sBig, repo.TokenUpdate{InputTokens: 1000, OutputTokens: 200,
		APICallCount: 3, Model: "test/model-a", BillingProvider: "test", EstimatedCostUSD: &cost}))
	_, err = st.Titles().Set(ctx, sBig, "The big one")
	require.NoError(t, err)
	return sc
}

// checkFreshTools calls every read tool on a seeded store.
func checkFreshTools(t *testing.T, st *hs.Store, sc scenario) {
	ctx := context.Background()
	cs := connect(t, st, mcpserver.Options{})

	// Paging returns every message exactly once, in order, whatever the bounds.
	for _, bounds := range [][2]int{{7, 0}, {1, 0}, {500, 0}, {500, 4096}, {50, 1024}, {13, 200 << 10}} {
		got, pages := readAll(t, cs, sBig, bounds[0], bounds[1])
		require.Len(t, got, sc.bigCount, "bounds %v", bounds)
		if bounds[1] == 0 {
			require.GreaterOrEqual(t, pages, (sc.bigCount+bounds[0]-1)/bounds[0], "bounds %v", bounds)
		}
		for i, m := range got {
			want := sc.big[i]
			if m["truncated"] == true {
				require.Greater(t, len(want)+200, bounds[1], "message %d cut at %v", i, bounds)
				c := m["content"].(string)
				require.True(t, strings.HasSuffix(c, " …"), "a cut message says so")
				require.True(t, strings.HasPrefix(want, strings.TrimSuffix(c, " …")), "a cut message keeps its head")
				require.Greater(t, m["original_bytes"], float64(len(want)))
				continue
			}
			require.True(t, want == m["content"], "message %d at %v: want %.80q, got %.80q", i, bounds, want, m["content"])
		}
		if bounds[1] == 4096 || bounds[1] == 1024 {
			require.Equal(t, true, got[sc.hugeAt]["truncated"], "the 300 KiB message is cut at %v", bounds)
		}
		require.Equal(t, "terminal", got[41]["tool_name"])
		require.Equal(t, "call_1", got[41]["tool_call_id"])
		require.NotEmpty(t, got[40]["tool_calls"])
	}
	// The default page: 50 messages or 64 KiB, whichever comes first.
	p := call[page](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": sBig})
	require.Equal(t, sc.bigCount, p.Total)
	require.NotEmpty(t, p.Messages)
	require.LessOrEqual(t, len(p.Messages), mcpserver.DefaultConversationLimit)
	require.NotNil(t, p.NextOffset)
	b, _ := json.Marshal(p.Messages)
	require.LessOrEqual(t, len(b), mcpserver.DefaultConversationBytes+len(p.Messages))

	// Search: the word in its message, with the session's title; filters.
	s := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "zebrafinch"})
	require.Len(t, s.Hits, 1)
	require.Equal(t, sBig, s.Hits[0].SessionID)
	require.Equal(t, sc.zebraID, s.Hits[0].MessageID)
	require.Equal(t, "The big one", s.Hits[0].Title)
	require.Equal(t, "cli", s.Hits[0].Source)
	require.Contains(t, *s.Hits[0].Snippet, ">>>zebrafinch<<<")
	require.Equal(t, base+77, s.Hits[0].Timestamp)
	require.Equal(t, "2025-12-29T09:21:17Z", s.Hits[0].Time)
	require.Empty(t, call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "quokka", "sources": []string{"cli"}}).Hits)
	q := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "quokka", "sources": []string{"telegram"}})
	require.Len(t, q.Hits, 1)
	require.Equal(t, sTG, q.Hits[0].SessionID)
	require.Empty(t, q.Hits[0].Title)
	require.Empty(t, call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "quokka", "exclude_sources": []string{"telegram"}}).Hits)
	require.Empty(t, call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "quokka", "roles": []string{"assistant"}}).Hits)
	newest := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "message", "sort": "newest", "limit": 3})
	require.Len(t, newest.Hits, 3)
	require.Greater(t, newest.Hits[0].Timestamp, newest.Hits[2].Timestamp)
	require.NotNil(t, newest.NextOffset)

	// list_sessions: by last activity; the child only when asked for.
	l := call[listOut](t, cs, mcpserver.ToolListSessions, nil)
	require.Len(t, l.Sessions, 2)
	require.Equal(t, sTG, l.Sessions[0].ID, "latest activity first")
	require.Equal(t, sBig, l.Sessions[1].ID)
	require.Equal(t, "The big one", l.Sessions[1].Title)
	require.Equal(t, "Planning a trip to see a quokka.", l.Sessions[0].Preview)
	require.EqualValues(t, sc.bigCount, l.Sessions[1].MessageCount)
	require.Nil(t, l.NextOffset)
	all := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"include_children": true})
	require.Len(t, all.Sessions, 3)

	// get_session: metadata, lineage, usage.
	g := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": sBig})
	require.Equal(t, "The big one", g.Session.Title)
	require.Equal(t, "test/model-a", g.Session.Model)
	require.Equal(t, []string{sChild}, g.Lineage.Descendants)
	require.Equal(t, 1, g.Lineage.DescendantsTotal)
	require.Equal(t, []string{}, g.Lineage.Ancestors)
	require.Equal(t, sBig, g.Lineage.CompressionTip)
	require.EqualValues(t, 1000, g.Usage.InputTokens)
	require.EqualValues(t, 200, g.Usage.OutputTokens)
	require.Len(t, g.Usage.ByModel, 1)
	require.Equal(t, "test/model-a", g.Usage.ByModel[0].Model)
	require.Nil(t, g.Session.EndedAt)
	require.Equal(t, len("You are a test."), g.Session.SystemPromptChars)
	c := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": "s-ch"})
	require.Equal(t, sChild, c.Session.ID, "a unique prefix")
	require.Equal(t, []string{sBig}, c.Lineage.Ancestors)

	// The resource of a session too large for it is cut and says where to go on.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.SessionURI(sBig)})
	require.NoError(t, err)
	md := rr.Contents[0].Text
	require.LessOrEqual(t, len(md), mcpserver.MaxResourceBytes+300)
	require.Contains(t, md, "# The big one\n")
	require.Contains(t, md, "message 0 of the big session.")
	require.Contains(t, md, "- tool call `terminal`: `{\"command\":\"ls\"}`")
	require.Contains(t, md, fmt.Sprintf("call get_conversation with session_id %q and offset %d", sBig, sc.hugeAt))
	require.NotContains(t, md, "end of huge")
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.SessionURI(sTG)})
	require.NoError(t, err)
	require.Contains(t, rr.Contents[0].Text, "Rottnest Island is the place.")
	require.NotContains(t, rr.Contents[0].Text, "more messages")
}

func TestToolsOnFreshStore(t *testing.T) {
	st := openSQLite(t, t.TempDir()+"/state.db")
	checkFreshTools(t, st, seed(t, st))
}

// TestToolsOnEmptyStore: a store without sessions answers every read tool
// with empty results, not errors.
func TestToolsOnEmptyStore(t *testing.T) {
	cs := connect(t, openSQLite(t, t.TempDir()+"/state.db"), mcpserver.Options{})
	require.Empty(t, call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "anything"}).Hits)
	l := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{})
	require.Empty(t, l.Sessions)
	require.NotNil(t, l.Sessions, "an empty list, not null")
	require.Contains(t, toolErr(t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": "x"}), `no session id starts with "x"`)
}

// serverInfo.version is the version `hermes-state version` prints.
func TestServerInfoVersion(t *testing.T) {
	st := openSQLite(t, filepath.Join(t.TempDir(), "state.db"))
	cs := connect(t, st, mcpserver.Options{})
	b, err := hs.BuildInfo(context.Background())
	require.NoError(t, err)
	info := cs.InitializeResult().ServerInfo
	require.Equal(t, b.Version, info.Version)
	require.Equal(t, mcpserver.Name, info.Name)
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/repo"
)

// navPage is get_conversation's result with the navigation fields.
type navPage struct {
	page
	AnchorIndex *int `json:"anchor_index"`
}

// TestNavigationSQLite and TestNavigationPostgres (issue 23 §4): what an
// agent needs to find its way, through the SDK client, on the Hermes v30
// fixture and on a fresh store with a 300 KiB message.
func TestNavigationSQLite(t *testing.T) {
	path, _ := fixtureCopy(t, "hermes-v30")
	checkNavFixture(t, openSQLite(t, path))
	st := openSQLite(t, filepath.Join(t.TempDir(), "state.db"))
	checkNavFresh(t, st, seed(t, st))
}

func TestNavigationPostgres(t *testing.T) {
	path, _ := fixtureCopy(t, "hermes-v30")
	st := openPG(t)
	_, err := hs.Copy(context.Background(), openSQLite(t, path), st, hs.CopyOptions{})
	require.NoError(t, err)
	checkNavFixture(t, st)
	fresh := openPG(t)
	checkNavFresh(t, fresh, seed(t, fresh))
}

func checkNavFixture(t *testing.T, st *hs.Store) {
	ctx := context.Background()
	cs := connect(t, st, mcpserver.Options{})

	// 1. From a search hit to its place: around its message id.
	res := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "kubectl", "sources": []string{"cli"}, "sort": "oldest"})
	require.NotEmpty(t, res.Hits)
	h := res.Hits[0]
	require.Equal(t, fxCLI, h.SessionID)
	require.Equal(t, "Docker deployment fix", h.Title, "titles in search results")
	all, err := st.Messages().List(ctx, fxCLI)
	require.NoError(t, err)
	at := -1
	for i, m := range all {
		if m.ID == h.MessageID {
			at = i
		}
	}
	require.GreaterOrEqual(t, at, 1)
	p := call[navPage](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxCLI, "around": h.MessageID, "window": 1})
	require.NotNil(t, p.AnchorIndex)
	require.Equal(t, at, *p.AnchorIndex)
	require.Equal(t, at-1, p.Offset)
	require.Len(t, p.Messages, 3)
	require.EqualValues(t, at, p.Messages[1]["index"])
	require.Equal(t, all[at].Role, p.Messages[1]["role"])
	require.Equal(t, float64(all[at].Timestamp), p.Messages[1]["timestamp"])
	b, _ := json.Marshal(p.Messages[1])
	require.Contains(t, string(b), "kubectl", "the hit's message (its tool call here)")
	p = call[navPage](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxCLI, "around": all[0].ID, "window": 100})
	require.Equal(t, 0, *p.AnchorIndex)
	require.Equal(t, len(all), len(p.Messages), "the window stops at both ends")
	msg := toolErr(t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxTelegram, "around": h.MessageID})
	require.Contains(t, msg, "not an active message of session "+fxTelegram)
	require.Contains(t, toolErr(t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxCLI, "around": h.MessageID, "window": 1000}), "window")

	// 2. Time filters.
	res = call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "kubectl", "since": "2026-01-06"})
	require.Empty(t, res.Hits, "every kubectl message is of 2026-01-05")
	all3 := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "kubectl"})
	res = call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "kubectl", "until": "2026-01-06T00:00:00Z"})
	require.Equal(t, len(all3.Hits), len(res.Hits))
	res = call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "kubectl", "since": "2026-01-05T10:00:00Z"})
	require.NotEmpty(t, res.Hits)
	require.Less(t, len(res.Hits), len(all3.Hits))
	for _, x := range res.Hits {
		require.GreaterOrEqual(t, x.Timestamp, 1767607200.0)
	}
	require.Contains(t, toolErr(t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "x", "since": "yesterday"}), "since")
	require.Contains(t, toolErr(t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "x", "since": "2026-02-01", "until": "2026-01-01"}), "until")
	ls := call[struct {
		Sessions []struct {
			ID        string  `json:"id"`
			StartedAt float64 `json:"started_at"`
		} `json:"sessions"`
	}](t, cs, mcpserver.ToolListSessions, map[string]any{"since": "2026-01-08"})
	require.NotEmpty(t, ls.Sessions)
	for _, s := range ls.Sessions {
		require.GreaterOrEqual(t, s.StartedAt, 1767830400.0, s.ID)
	}
	l := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"since": "2026-01-05", "until": "2026-01-06"})
	ids := []string{}
	for _, s := range l.Sessions {
		ids = append(ids, s.ID)
	}
	require.ElementsMatch(t, []string{fxCLI, fxCLI2}, ids)

	// 3. A session by its title.
	l = call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"title": "borrow checker"})
	require.Len(t, l.Sessions, 1)
	require.Equal(t, fxDiscord, l.Sessions[0].ID)
	l = call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"title": "桂林"})
	require.Len(t, l.Sessions, 1)
	require.Equal(t, fxTelegram, l.Sessions[0].ID)
	l = call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"title": "no such title anywhere"})
	require.Empty(t, l.Sessions)

	// 4. Compact: no reasoning copies, no _db_persisted, tool output folded.
	full := call[navPage](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxCLI})
	compact := call[navPage](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxCLI, "compact": true, "tool_output_chars": 20})
	require.Equal(t, len(full.Messages), len(compact.Messages))
	fb, _ := json.Marshal(full.Messages)
	cb, _ := json.Marshal(compact.Messages)
	require.Contains(t, string(fb), `"_db_persisted"`)
	require.Contains(t, string(fb), `"reasoning"`)
	require.NotContains(t, string(cb), `"_db_persisted"`)
	require.NotContains(t, string(cb), `"reasoning`)
	require.Less(t, len(cb), len(fb))
	folded := 0
	for i, m := range compact.Messages {
		if m["role"] != "tool" {
			require.Equal(t, full.Messages[i]["content"], m["content"], "only tool output is folded")
			continue
		}
		c := []rune(m["content"].(string))
		orig := []rune(full.Messages[i]["content"].(string))
		if len(orig) > 20 {
			folded++
			require.Equal(t, string(orig[:20])+" …", string(c))
			require.EqualValues(t, len(orig)-20, m["tool_output_omitted_chars"])
		}
	}
	require.Positive(t, folded)

	// 6. Usage statistics, as `stats --json` gives them.
	type statsOut struct {
		BySource []struct {
			Source   string `json:"source"`
			Sessions int64  `json:"sessions"`
		} `json:"by_source"`
		ByModel     []map[string]any `json:"by_model"`
		TopSessions []map[string]any `json:"top_sessions"`
	}
	stats := call[statsOut](t, cs, mcpserver.ToolUsageStats, map[string]any{"top": 3})
	want, err := st.Usage().BySource(ctx, repo.StatsFilter{})
	require.NoError(t, err)
	require.Len(t, stats.BySource, len(want))
	bySource := map[string]int64{}
	for _, x := range stats.BySource {
		bySource[x.Source] = x.Sessions
	}
	require.Positive(t, bySource["cli"])
	require.Positive(t, bySource["telegram"])
	require.NotEmpty(t, stats.ByModel)
	require.LessOrEqual(t, len(stats.TopSessions), 3)
	require.Contains(t, toolErr(t, cs, mcpserver.ToolUsageStats, map[string]any{"since": "soon"}), "since")

	// 7. resources/list names recent sessions; completion of the id.
	var uris []string
	names := map[string]string{}
	for r, err := range cs.Resources(ctx, nil) {
		require.NoError(t, err)
		uris = append(uris, r.URI)
		names[r.URI] = r.Name
	}
	require.Contains(t, uris, mcpserver.SessionURI(fxCLI))
	require.Equal(t, "Docker deployment fix", names[mcpserver.SessionURI(fxCLI)])
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris[0]})
	require.NoError(t, err)
	require.NotEmpty(t, rr.Contents)
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "hermes-session://{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "20260105"}})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{fxCLI, fxChild, fxCLI2}, comp.Completion.Values)
	comp, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "hermes-session://{id}"},
		Argument: mcp.CompleteParamsArgument{Name: "id", Value: "zzz"}})
	require.NoError(t, err)
	require.Empty(t, comp.Completion.Values)
}

// checkNavFresh: 5. the rest of a message cut to fit a page, read with
// get_message from content_next_offset on, is the message whole.
func checkNavFresh(t *testing.T, st *hs.Store, sc scenario) {
	cs := connect(t, st, mcpserver.Options{})
	p := call[navPage](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": sBig, "offset": sc.hugeAt, "limit": 1})
	require.Len(t, p.Messages, 1)
	m := p.Messages[0]
	require.Equal(t, true, m["truncated"])
	next, ok := m["content_next_offset"].(float64)
	require.True(t, ok, "a cut message says where it goes on: %v", keys(m))
	text := strings.TrimSuffix(m["content"].(string), " …")
	require.Equal(t, int(next), len(text))
	off := int(next)
	for calls := 0; ; calls++ {
		require.Less(t, calls, 100)
		part := call[partOut](t, cs, mcpserver.ToolGetMessage, map[string]any{"session_id": sBig, "index": sc.hugeAt, "offset": off, "max_bytes": 100000})
		require.Equal(t, off, part.Offset)
		require.Equal(t, len(sc.big[sc.hugeAt]), part.TotalBytes)
		text += part.Text
		if part.NextOffset == nil {
			break
		}
		off = *part.NextOffset
	}
	require.Equal(t, sc.big[sc.hugeAt], text, "the pieces make the message")
	require.Contains(t, toolErr(t, cs, mcpserver.ToolGetMessage, map[string]any{"session_id": sBig, "index": 100000}), "no index 100000")
	require.Contains(t, toolErr(t, cs, mcpserver.ToolGetMessage, map[string]any{"session_id": sBig, "index": 0, "offset": 1 << 30}), "past the end")
}

type partOut struct {
	Index      int    `json:"index"`
	TotalBytes int    `json:"total_bytes"`
	Offset     int    `json:"offset"`
	Text       string `json:"text"`
	NextOffset *int   `json:"next_offset"`
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

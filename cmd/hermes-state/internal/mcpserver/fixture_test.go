package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/repo"
)

// Session ids of the Hermes fixtures' scenario (../shared/fixtures/README.md).
const (
	fxCLI      = "20260105_091500_a1b2c3"
	fxChild    = "20260105_091800_sub777"
	fxCLI2     = "20260105_103000_d4e5f6"
	fxTelegram = "20260106_080000_tg0001"
	fxDiscord  = "20260106_120000_dc0002"
	fxCmpRoot  = "20260108_140000_cmp001"
	fxCmpTip   = "20260108_153000_cmp002"
	fxEmpty    = "20260109_070000_empty9"
)

type searchCase struct {
	Kind    string          `json:"kind"`
	Query   string          `json:"query"`
	Kwargs  map[string]any  `json:"kwargs"`
	Results json.RawMessage `json:"results"`
}

type hit struct {
	SessionID string                `json:"session_id"`
	Title     string                `json:"title"`
	Source    string                `json:"source"`
	MessageID int64                 `json:"message_id"`
	ID        int64                 `json:"id"` // Hermes' key for message_id
	Role      string                `json:"role"`
	Snippet   *string               `json:"snippet"`
	Timestamp float64               `json:"timestamp"`
	Time      string                `json:"time"`
	Context   []repo.ContextMessage `json:"context"`
}

type searchOut struct {
	Hits       []hit `json:"hits"`
	NextOffset *int  `json:"next_offset"`
}

type sessionRow struct {
	ID             string  `json:"id"`
	Title          string  `json:"title"`
	Source         string  `json:"source"`
	Preview        string  `json:"preview"`
	MessageCount   int64   `json:"message_count"`
	LastActive     float64 `json:"last_active"`
	LastActiveTime string  `json:"last_active_time"`
	LineageRootID  string  `json:"lineage_root_id"`
	Ended          bool    `json:"ended"`
}

type listOut struct {
	Sessions   []sessionRow `json:"sessions"`
	NextOffset *int         `json:"next_offset"`
}

type sessionOut struct {
	Session struct {
		ID                string   `json:"id"`
		Source            string   `json:"source"`
		Title             string   `json:"title"`
		Model             string   `json:"model"`
		EndReason         string   `json:"end_reason"`
		EndedAt           *float64 `json:"ended_at"`
		MessageCount      int64    `json:"message_count"`
		ParentSessionID   string   `json:"parent_session_id"`
		SystemPromptChars int      `json:"system_prompt_chars"`
		SystemPrompt      string   `json:"system_prompt"`
	} `json:"session"`
	Lineage struct {
		Ancestors        []string `json:"ancestors"`
		Descendants      []string `json:"descendants"`
		DescendantsTotal int      `json:"descendants_total"`
		CompressionChain []string `json:"compression_chain"`
		CompressionTip   string   `json:"compression_tip"`
	} `json:"lineage"`
	Usage struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
		ByModel      []struct {
			Model       string `json:"model"`
			InputTokens int64  `json:"input_tokens"`
		} `json:"by_model"`
	} `json:"usage"`
}

func decode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal(raw, v))
}

// searchArgs turns a fixture case's Hermes kwargs into search_sessions
// arguments; ok is false for cases the tool cannot express (an empty
// source list, which in Hermes matches nothing).
func searchArgs(c searchCase) (map[string]any, repo.SearchOptions, bool) {
	args := map[string]any{"query": c.Query, "limit": 20}
	opt := repo.SearchOptions{Limit: 20}
	strs := func(v any) []string {
		var out []string
		for _, x := range v.([]any) {
			out = append(out, fmt.Sprint(x))
		}
		return out
	}
	for k, v := range c.Kwargs {
		switch k {
		case "source_filter":
			if v == nil {
				continue
			}
			if len(v.([]any)) == 0 {
				return nil, opt, false
			}
			args["sources"], opt.Sources = strs(v), strs(v)
		case "exclude_sources":
			if v != nil {
				args["exclude_sources"], opt.ExcludeSources = strs(v), strs(v)
			}
		case "role_filter":
			if v != nil {
				args["roles"], opt.Roles = strs(v), strs(v)
			}
		case "limit":
			args["limit"], opt.Limit = int(v.(float64)), int(v.(float64))
		case "offset":
			args["offset"], opt.Offset = int(v.(float64)), int(v.(float64))
		case "sort":
			args["sort"], opt.Sort = v, v.(string)
		default:
			return nil, opt, false
		}
	}
	return args, opt, true
}

// checkFixtureTools calls every read tool on a store holding a Hermes
// fixture's scenario and checks the answers against the library and, for
// the current schema, against what Hermes itself returned (hermesSearch:
// search hits too, which SQLite's FTS5 ranks as Hermes does).
func checkFixtureTools(t *testing.T, st *hs.Store, exp map[string]json.RawMessage, current, hermesSearch bool) {
	ctx := context.Background()
	cs := connect(t, st, mcpserver.Options{})

	// Every search case of the fixture: the tool returns the library's hits.
	var cases []searchCase
	decode(t, exp["search"], &cases)
	require.NotEmpty(t, cases)
	for i, c := range cases {
		args, opt, ok := searchArgs(c)
		if !ok {
			continue
		}
		name := fmt.Sprintf("case %d %s %q", i, c.Kind, c.Query)
		if strings.TrimSpace(c.Query) == "" || len([]rune(strings.TrimSpace(c.Query))) > mcpserver.MaxQueryLength {
			require.Contains(t, toolErr(t, cs, mcpserver.ToolSearchSessions, args), "query", name)
			continue
		}
		want, err := st.Search().Messages(ctx, strings.TrimSpace(c.Query), opt)
		if errors.Is(err, hs.ErrUnsearchableQuery) {
			// Nothing to search (issue 28, item 6): a tool error saying
			// so, where Hermes answered [].
			require.Contains(t, toolErr(t, cs, mcpserver.ToolSearchSessions, args), "cannot be searched", name)
			var hermes []hit
			if hermesSearch && json.Unmarshal(c.Results, &hermes) == nil {
				require.Empty(t, hermes, "%s: Hermes found messages", name)
			}
			continue
		}
		require.NoError(t, err, name)
		got := call[searchOut](t, cs, mcpserver.ToolSearchSessions, args)
		require.Len(t, got.Hits, len(want), name)
		for j, h := range got.Hits {
			w := want[j]
			require.Equal(t, w.SessionID, h.SessionID, name)
			require.Equal(t, w.ID, h.MessageID, name)
			require.Equal(t, w.Role, h.Role, name)
			require.Equal(t, w.Timestamp, h.Timestamp, name)
			if w.Snippet != nil {
				require.Equal(t, *w.Snippet, *h.Snippet, name)
			}
			title, err := st.Titles().Get(ctx, h.SessionID)
			require.NoError(t, err)
			require.Equal(t, title, h.Title, name)
			require.Nil(t, h.Context, "context only with include_context")
		}
		if hermesSearch {
			// Hermes' own answer: same messages in the same order.
			var hermes []hit
			if json.Unmarshal(c.Results, &hermes) == nil {
				require.Len(t, got.Hits, len(hermes), "%s vs Hermes", name)
				for j := range hermes {
					require.Equal(t, hermes[j].SessionID, got.Hits[j].SessionID, name)
					require.Equal(t, hermes[j].ID, got.Hits[j].MessageID, name)
				}
			}
		}
	}

	// A known word in the right session, with title and snippet.
	docker := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "docker", "include_context": true})
	require.NotEmpty(t, docker.Hits)
	for _, h := range docker.Hits {
		require.Contains(t, []string{fxCLI, fxCLI2}, h.SessionID)
		require.Equal(t, "cli", h.Source)
		require.Contains(t, strings.ToLower(*h.Snippet), "docker")
		require.NotEmpty(t, h.Time)
		require.NotEmpty(t, h.Context, "include_context")
		if h.SessionID == fxCLI && current {
			require.Equal(t, "Docker deployment fix", h.Title)
		}
	}
	cjk := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "桂林"})
	require.NotEmpty(t, cjk.Hits)
	for _, h := range cjk.Hits {
		require.Equal(t, fxTelegram, h.SessionID)
		require.Equal(t, "telegram", h.Source)
	}
	none := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "docker", "sources": []string{"telegram", "cron"}})
	require.Empty(t, none.Hits)
	users := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "docker", "roles": []string{"user"}})
	require.NotEmpty(t, users.Hits)
	for _, h := range users.Hits {
		require.Equal(t, "user", h.Role)
	}
	// Paging the hits: next_offset walks them all, once each.
	all := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "deploy*", "limit": 100})
	require.Nil(t, all.NextOffset)
	var paged []int64
	for off := 0; ; {
		p := call[searchOut](t, cs, mcpserver.ToolSearchSessions, map[string]any{"query": "deploy*", "limit": 2, "offset": off})
		for _, h := range p.Hits {
			paged = append(paged, h.MessageID)
		}
		if p.NextOffset == nil {
			break
		}
		off = *p.NextOffset
	}
	var want []int64
	for _, h := range all.Hits {
		want = append(want, h.MessageID)
	}
	require.Equal(t, want, paged)

	// list_sessions: the library's listing by last activity.
	rich, err := st.Listing().Rich(ctx, repo.RichOptions{OrderByLastActive: true, Limit: 200})
	require.NoError(t, err)
	list := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"limit": 200})
	require.Len(t, list.Sessions, len(rich))
	require.Nil(t, list.NextOffset)
	ids := []string{}
	for i, s := range list.Sessions {
		require.Equal(t, rich[i].ID, s.ID)
		require.Equal(t, rich[i].Preview, s.Preview)
		require.Equal(t, rich[i].MessageCount, s.MessageCount)
		if i > 0 {
			require.GreaterOrEqual(t, list.Sessions[i-1].LastActive, s.LastActive, "newest activity first")
		}
		ids = append(ids, s.ID)
	}
	require.Contains(t, ids, fxCLI)
	require.Contains(t, ids, fxEmpty)
	require.NotContains(t, ids, fxChild, "delegate runs are left out")
	require.NotContains(t, ids, fxCmpRoot, "a compressed conversation shows as its live tip")
	for _, s := range list.Sessions {
		if s.ID == fxCLI {
			require.Equal(t, "How do I fix the docker deployment on kubernetes? The chat-s...", s.Preview)
			require.True(t, s.Ended)
		}
	}
	tg := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"source": "telegram"})
	require.NotEmpty(t, tg.Sessions)
	for _, s := range tg.Sessions {
		require.Equal(t, "telegram", s.Source)
	}
	two := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"limit": 2})
	require.Len(t, two.Sessions, 2)
	require.NotNil(t, two.NextOffset)
	next := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"limit": 2, "offset": *two.NextOffset})
	require.Equal(t, list.Sessions[2].ID, next.Sessions[0].ID)
	children := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"limit": 200, "include_children": true})
	require.Greater(t, len(children.Sessions), len(list.Sessions))

	// get_conversation: every session, paged small, equals the replay.
	var sessions map[string]json.RawMessage
	decode(t, exp["sessions"], &sessions)
	var hermesConv map[string][]json.RawMessage
	decode(t, exp["conversations"], &hermesConv)
	for id := range sessions {
		conv, err := st.Messages().Conversation(ctx, id, repo.ConversationOptions{})
		require.NoError(t, err)
		for _, bounds := range [][2]int{{1, 0}, {500, 1024}} {
			got, _ := readAll(t, cs, id, bounds[0], bounds[1])
			require.Len(t, got, len(conv), "%s %v", id, bounds)
			for i := range conv {
				want, _ := json.Marshal(conv[i])
				if _, cut := got[i]["truncated"]; cut {
					require.Greater(t, len(want), 1024, "only a message over max_bytes is cut")
					continue
				}
				gb, _ := json.Marshal(withoutIndex(got[i]))
				require.JSONEq(t, string(want), string(gb), "%s message %d", id, i)
				if current && bounds[1] == 0 {
					require.JSONEq(t, string(hermesConv[id][i]), string(gb), "%s message %d vs Hermes", id, i)
				}
			}
		}
	}
	// A unique prefix is enough; the page says which session it is.
	p := call[page](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": "20260106_080000_tg"})
	require.Equal(t, fxTelegram, p.SessionID)
	past := call[page](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxCLI, "offset": 1000})
	require.Empty(t, past.Messages)
	require.Nil(t, past.NextOffset)
	empty := call[page](t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": fxEmpty})
	require.Zero(t, empty.Total)
	require.Empty(t, empty.Messages)

	// get_session: metadata, lineage, usage.
	var cli map[string]any
	decode(t, sessions[fxCLI], &cli)
	g := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": fxCLI})
	require.Equal(t, fxCLI, g.Session.ID)
	require.Equal(t, "cli", g.Session.Source)
	require.Equal(t, cli["end_reason"], g.Session.EndReason)
	require.NotNil(t, g.Session.EndedAt)
	require.EqualValues(t, cli["input_tokens"], g.Usage.InputTokens)
	require.EqualValues(t, cli["output_tokens"], g.Usage.OutputTokens)
	require.EqualValues(t, cli["message_count"], g.Session.MessageCount)
	require.Contains(t, g.Lineage.Descendants, fxChild)
	require.Empty(t, g.Lineage.Ancestors)
	require.Equal(t, fxCLI, g.Lineage.CompressionTip)
	require.Empty(t, g.Session.SystemPrompt, "system prompt only when asked for")
	if prompt, _ := cli["system_prompt"].(string); prompt != "" {
		require.Equal(t, len([]rune(prompt)), g.Session.SystemPromptChars)
		gp := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": fxCLI, "include_system_prompt": true})
		require.Equal(t, prompt, gp.Session.SystemPrompt)
	}
	rows, err := st.Usage().Rows(ctx, fxCLI)
	require.NoError(t, err)
	require.Len(t, g.Usage.ByModel, len(rows))
	child := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": fxChild})
	require.Equal(t, []string{fxCLI}, child.Lineage.Ancestors)
	require.Equal(t, fxCLI, child.Session.ParentSessionID)
	root := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": fxCmpRoot})
	require.Equal(t, "compression", root.Session.EndReason)
	if current {
		require.Equal(t, []string{fxCmpRoot, fxCmpTip}, root.Lineage.CompressionChain)
		require.Equal(t, fxCmpTip, root.Lineage.CompressionTip)
	}
	require.Contains(t, root.Lineage.Descendants, fxCmpTip)

	// The session resource: Markdown with the title and the conversation.
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.SessionURI(fxCLI)})
	require.NoError(t, err)
	require.Len(t, rr.Contents, 1)
	md := rr.Contents[0].Text
	require.Equal(t, "text/markdown", rr.Contents[0].MIMEType)
	require.Contains(t, md, "- id: `"+fxCLI+"`")
	require.Contains(t, md, "How do I fix the docker deployment on kubernetes?")
	require.Contains(t, md, "## tool (terminal)")
	if current {
		require.Contains(t, md, "# Docker deployment fix\n")
	}
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.SessionURI("no-such-session")})
	require.Error(t, err)
	require.Contains(t, err.Error(), "not found")
	var templates []string
	for rt, err := range cs.ResourceTemplates(ctx, nil) {
		require.NoError(t, err)
		templates = append(templates, rt.URITemplate)
	}
	require.Equal(t, []string{"hermes-session://{id}"}, templates)
}

// TestToolsOnFixtures runs every read tool on a copy of every Hermes-made
// fixture (v1..v30).
func TestToolsOnFixtures(t *testing.T) {
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			path, exp := fixtureCopy(t, name)
			var version int
			decode(t, exp["hermes_schema_version"], &version)
			checkFixtureTools(t, openSQLite(t, path), exp, version >= 30, version >= 30)
		})
	}
}

// TestToolList checks what a client sees of the tools: the read tools
// only, each with a description, read-only annotations and an input schema
// whose every property is described for a model.
func TestToolList(t *testing.T) {
	st := openSQLite(t, t.TempDir()+"/state.db")
	for _, write := range []bool{false, true} {
		cs := connect(t, st, mcpserver.Options{AllowWrite: write})
		tools := toolNames(t, cs)
		want := slices.Clone(mcpserver.ReadTools)
		if write {
			want = append(want, mcpserver.WriteTools...)
		}
		got := []string{}
		for name := range tools {
			got = append(got, name)
		}
		require.ElementsMatch(t, want, got, "write=%v", write)
		for name, tool := range tools {
			require.NotEmpty(t, tool.Description, name)
			require.NotNil(t, tool.Annotations, name)
			require.Equal(t, !slices.Contains(mcpserver.WriteTools, name), tool.Annotations.ReadOnlyHint, name)
			schema := tool.InputSchema.(map[string]any)
			require.Equal(t, "object", schema["type"], name)
			props := schema["properties"].(map[string]any)
			require.NotEmpty(t, props, name)
			for p, v := range props {
				require.NotEmpty(t, v.(map[string]any)["description"], "%s.%s has no description", name, p)
			}
			require.NotNil(t, tool.OutputSchema, name)
		}
		limit := tools[mcpserver.ToolSearchSessions].InputSchema.(map[string]any)["properties"].(map[string]any)["limit"].(map[string]any)
		require.EqualValues(t, mcpserver.MaxSearchLimit, limit["maximum"])
		require.EqualValues(t, 1, limit["minimum"])
		require.Contains(t, tools[mcpserver.ToolGetConversation].InputSchema.(map[string]any)["required"], "session_id")
	}
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// toolSchemas lists the tools as a client sees them: each input schema
// decoded from the wire.
func toolSchemas(t *testing.T, cs *mcp.ClientSession) map[string]struct {
	Properties map[string]struct {
		Default json.RawMessage `json:"default"`
	} `json:"properties"`
	Required []string `json:"required"`
} {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	out := map[string]struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
		Required []string `json:"required"`
	}{}
	for _, tool := range res.Tools {
		b, err := json.Marshal(tool.InputSchema)
		require.NoError(t, err)
		v := out[tool.Name]
		require.NoError(t, json.Unmarshal(b, &v), tool.Name)
		out[tool.Name] = v
	}
	return out
}

// withDefaults is what a client that fills in defaults sends: args plus
// every property the schema gives a default and args leave out.
func withDefaults(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	schema, ok := toolSchemas(t, cs)[tool]
	require.True(t, ok, tool)
	out := map[string]any{}
	for k, v := range args {
		out[k] = v
	}
	for name, p := range schema.Properties {
		if _, given := out[name]; given || len(p.Default) == 0 {
			continue
		}
		var v any
		require.NoError(t, json.Unmarshal(p.Default, &v))
		out[name] = v
	}
	return out
}

// TestSchemaDefaultsMeanWhatAbsenceMeans (issue 28, item 11): no required
// property advertises a default, and a client that fills in every
// advertised default gets from each read tool the answer it gets without
// them: get_conversation's around has no default (absent: no anchor), and
// get_message's index, required, has none. Before, around advertised
// "default": 1, so such a client's get_conversation asked for the window
// around message 1 and failed with "message 1 is not an active message",
// and index had a default though required.
func TestSchemaDefaultsMeanWhatAbsenceMeans(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t, filepath.Join(t.TempDir(), "state.db"))
	// Message ids start past 1: the session's first message is not id 1.
	other, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, other.ID, repo.MessageInput{Role: "user", Content: models.Text("elsewhere")})
	require.NoError(t, err)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", Model: "m"})
	require.NoError(t, err)
	for _, text := range []string{"docker compose fails", "check the logs", "fixed"} {
		_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text(text)})
		require.NoError(t, err)
	}
	cs := connect(t, st, mcpserver.Options{})

	for name, schema := range toolSchemas(t, cs) {
		for _, req := range schema.Required {
			require.Empty(t, schema.Properties[req].Default, "%s: required property %s advertises a default", name, req)
		}
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{mcpserver.ToolGetConversation, map[string]any{"session_id": s.ID}},
		{mcpserver.ToolGetMessage, map[string]any{"session_id": s.ID, "index": 1}},
		{mcpserver.ToolSearchSessions, map[string]any{"query": "docker"}},
		{mcpserver.ToolListSessions, map[string]any{}},
		{mcpserver.ToolGetSession, map[string]any{"session_id": s.ID}},
		{mcpserver.ToolUsageStats, map[string]any{}},
	} {
		plain := callRaw(t, cs, c.tool, c.args)
		require.False(t, plain.IsError, "%s(%v): %s", c.tool, c.args, text(plain))
		filled := withDefaults(t, cs, c.tool, c.args)
		got := callRaw(t, cs, c.tool, filled)
		require.False(t, got.IsError, "%s with the schema's defaults filled in (%v): %s", c.tool, filled, text(got))
		require.JSONEq(t, text(plain), text(got), "%s: the defaults mean what their absence means", c.tool)
	}
	conv := call[struct {
		Messages []map[string]any `json:"messages"`
	}](t, cs, mcpserver.ToolGetConversation, withDefaults(t, cs, mcpserver.ToolGetConversation, map[string]any{"session_id": s.ID}))
	require.Len(t, conv.Messages, 3)
	require.Equal(t, "docker compose fails", conv.Messages[0]["content"])
}

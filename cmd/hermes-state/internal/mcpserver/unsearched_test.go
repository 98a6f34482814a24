package mcpserver_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestSearchSessionsNeverAnswersUnsearched (issue 28, item 6): over MCP a
// dotted term, a flag and a path find the messages that hold them, and a
// query with nothing to search is a tool error saying why, never
// {"hits": []} (an agent would conclude the topic never came up).
func TestSearchSessionsNeverAnswersUnsearched(t *testing.T) {
	ctx := context.Background()
	st := openSQLite(t, filepath.Join(t.TempDir(), "state.db"))
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	for _, text := range []string{"node.js is the runtime", "pass --flag=value to it", "see $HOME/.config please"} {
		_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text(text)})
		require.NoError(t, err)
	}
	cs := connect(t, st, mcpserver.Options{})
	for _, q := range []string{"node.js.", "--flag=value", "$HOME/.config"} {
		out := call[mcpserver.SearchOutput](t, cs, "search_sessions", map[string]any{"query": q})
		require.Len(t, out.Hits, 1, q)
	}
	for _, q := range []string{`"*"`, "-", "🚀"} {
		msg := toolErr(t, cs, "search_sessions", map[string]any{"query": q})
		require.Contains(t, msg, "cannot be searched", q)
	}
}

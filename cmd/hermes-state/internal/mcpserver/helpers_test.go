package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// fixturesDir is ../shared/fixtures beside the repository (or
// $HERMESSTATE_FIXTURES); this package is two levels down, a git worktree
// fixturesDir is the repository's copy of the Hermes fixtures.
func fixturesDir() string { return fixturetest.Dir() }

// fixtureCopy copies the Hermes-made NAME.db to a temp dir and returns the
// copy's path and the decoded NAME.expected.json. Without the fixtures it
// skips, except in CI.
func fixtureCopy(t *testing.T, name string) (string, map[string]json.RawMessage) {
	t.Helper()
	dir := fixturesDir()
	src := filepath.Join(dir, name+".db")
	b, err := os.ReadFile(src)
	require.NoError(t, err, "Hermes fixture %s", src)
	dst := filepath.Join(t.TempDir(), "state.db")
	require.NoError(t, os.WriteFile(dst, b, 0o600))
	raw, err := os.ReadFile(filepath.Join(dir, name+".expected.json"))
	require.NoError(t, err)
	var exp map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &exp))
	return dst, exp
}

// fixtureNames lists the NAME of every NAME.db with its expected JSON.
func fixtureNames(t *testing.T) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(fixturesDir(), "*.expected.json"))
	if len(m) == 0 {
		t.Fatalf("no Hermes fixtures in %s", fixturesDir())
	}
	var out []string
	for _, p := range m {
		out = append(out, strings.TrimSuffix(filepath.Base(p), ".expected.json"))
	}
	return out
}

func openSQLite(t testing.TB, path string) *hs.Store {
	t.Helper()
	st, err := hs.Open(context.Background(), hs.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// connect serves st with opt to an in-process client of the same SDK over
// in-memory transports.
func connect(t testing.TB, st *hs.Store, opt mcpserver.Options) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	srv := mcpserver.New(st, opt)
	ct, sst := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, sst, nil)
	require.NoError(t, err)
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}

// callRaw calls a tool and fails on a protocol error.
func callRaw(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s: protocol error", name)
	return res
}

// call calls a tool that must succeed and decodes its structured result
// into T; the text content must carry the same JSON (for clients that read
// only text).
func call[T any](t *testing.T, cs *mcp.ClientSession, name string, args any) T {
	t.Helper()
	res := callRaw(t, cs, name, args)
	require.False(t, res.IsError, "%s(%v) failed: %s", name, args, text(res))
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	require.JSONEq(t, string(b), text(res), "%s: text content is the structured JSON", name)
	var out T
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// toolErr calls a tool that must fail with a tool error (IsError, not a
// protocol error) and returns its message.
func toolErr(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res := callRaw(t, cs, name, args)
	require.True(t, res.IsError, "%s(%v) should fail, got %s", name, args, text(res))
	msg := text(res)
	require.NotEmpty(t, msg)
	return msg
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func toolNames(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range cs.Tools(context.Background(), nil) {
		require.NoError(t, err)
		out[tool.Name] = tool
	}
	return out
}

// page is get_conversation's result as a client sees it.
type page struct {
	SessionID  string           `json:"session_id"`
	Total      int              `json:"total"`
	Offset     int              `json:"offset"`
	Messages   []map[string]any `json:"messages"`
	NextOffset *int             `json:"next_offset"`
}

// readAll pages through a session's conversation with the given page
// bounds and returns every message in order, checking that the pages are
// contiguous, that each ends where the next begins, and that a page stays
// within max_bytes unless it holds one (cut) message.
func readAll(t *testing.T, cs *mcp.ClientSession, id string, limit, maxBytes int) ([]map[string]any, int) {
	t.Helper()
	var all []map[string]any
	offset, pages := 0, 0
	for {
		args := map[string]any{"session_id": id, "offset": offset, "limit": limit}
		if maxBytes > 0 {
			args["max_bytes"] = maxBytes
		}
		p := call[page](t, cs, mcpserver.ToolGetConversation, args)
		pages++
		require.Equal(t, offset, p.Offset)
		require.LessOrEqual(t, len(p.Messages), limit)
		size := 0
		for i, m := range p.Messages {
			require.EqualValues(t, offset+i, m["index"], "index of message %d of the page at %d", i, offset)
			b, _ := json.Marshal(m)
			size += len(b)
		}
		if maxBytes > 0 && len(p.Messages) > 1 {
			require.LessOrEqual(t, size, maxBytes, "page at %d", offset)
		}
		all = append(all, p.Messages...)
		if p.NextOffset == nil {
			require.Equal(t, p.Total, len(all), "the last page ends the conversation")
			return all, pages
		}
		require.NotEmpty(t, p.Messages, "a page with a next_offset moves forward")
		require.Equal(t, offset+len(p.Messages), *p.NextOffset)
		offset = *p.NextOffset
		require.Less(t, pages, 100000, "paging does not end")
	}
}

// withoutIndex returns m without the keys the page adds.
func withoutIndex(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != "index" {
			out[k] = v
		}
	}
	return out
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
)

// FuzzToolArguments sends arbitrary JSON as the arguments of every tool of
// a writable server on a seeded store: each call must end in a result or a
// tool error, never a protocol error, a hang or a crash, and the server
// must go on answering.
func FuzzToolArguments(f *testing.F) {
	for _, c := range badCalls {
		b, _ := json.Marshal(c.args)
		f.Add(b)
	}
	for _, s := range []string{`{"query":"zebrafinch"}`, `{"session_id":"s-big","offset":140,"limit":3,"max_bytes":1024}`,
		`{"session_id":"s-","title":"t","text":"n"}`, `null`, `{}`, `"x"`, `{"limit":9007199254740993}`,
		`{"query":"\u0000","sources":[null]}`, `{"session_id":"s-tg","text":"\ud800"}`,
		`{"session_id":"s-big","around":3,"window":2,"compact":true,"tool_output_chars":5}`, `{"session_id":"s-big","index":90,"offset":307000}`,
		`{"query":"message","since":"2025-12-25","until":"1767000100"}`, `{"title":"x","since":"2026-01-01T00:00:00Z"}`, `{"top":3,"since":"1e9"}`} {
		f.Add([]byte(s))
	}
	st := openSQLite(f, f.TempDir()+"/state.db")
	seed(f, st)
	tools := append(append([]string{}, mcpserver.ReadTools...), mcpserver.WriteTools...)
	cs := connect(f, st, mcpserver.Options{AllowWrite: true})
	f.Fuzz(func(t *testing.T, args []byte) {
		if !json.Valid(args) {
			return // a client cannot send it
		}
		for _, name := range tools {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(args)})
			if err != nil {
				t.Fatalf("%s(%s): protocol error %v", name, args, err)
			}
			if res.IsError && text(res) == "" {
				t.Fatalf("%s(%s): a tool error without a message", name, args)
			}
		}
	})
}

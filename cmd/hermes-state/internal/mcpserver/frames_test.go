package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
)

// stdioPeer serves a server with ServeIO over pipes and speaks raw lines.
type stdioPeer struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan map[string]any
	done  chan error
}

func newStdioPeer(t *testing.T, srv *mcp.Server) *stdioPeer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, lines: make(chan map[string]any, 64), done: make(chan error, 1)}
	go func() {
		p.done <- mcpserver.ServeIO(ctx, srv, inR, outW)
		_ = outW.Close()
	}()
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 32<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"not-json": sc.Text()}
			}
			p.lines <- m
		}
	}()
	t.Cleanup(func() { _ = inW.Close(); cancel() })
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.in, line+"\n")
	require.NoError(p.t, err)
}

func (p *stdioPeer) next() map[string]any {
	p.t.Helper()
	select {
	case m, ok := <-p.lines:
		require.True(p.t, ok, "the server closed its output")
		return m
	case err := <-p.done:
		p.t.Fatalf("the server stopped: %v", err)
	case <-time.After(20 * time.Second):
		p.t.Fatal("no answer within 20 s")
	}
	return nil
}

// TestStdioSurvivesMalformedFrames (issue 20 §5): one malformed frame got
// the stdio server to exit ("invalid character 'o'", "empty batch",
// "invalid message version tag"). Each is answered with JSON-RPC's parse
// error (-32700) or invalid request (-32600), with the request's id when
// it has a usable one, and the server goes on serving.
func TestStdioSurvivesMalformedFrames(t *testing.T) {
	st := openSQLite(t, filepath.Join(t.TempDir(), "state.db"))
	p := newStdioPeer(t, mcpserver.New(st, mcpserver.Options{}))
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	require.EqualValues(t, 1, p.next()["id"])
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, c := range []struct {
		frame string
		code  float64
		id    any
	}{
		{`not json`, jsonrpc.CodeParseError, nil},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"`, jsonrpc.CodeParseError, nil},
		{`{"jsonrpc":"2.0","id":3,"method":"ping"} {"jsonrpc":"2.0","id":4,"method":"ping"}`, jsonrpc.CodeParseError, nil},
		{`[]`, jsonrpc.CodeInvalidRequest, nil},
		{`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, jsonrpc.CodeInvalidRequest, nil},
		{`{}`, jsonrpc.CodeInvalidRequest, nil},
		{`"ping"`, jsonrpc.CodeInvalidRequest, nil},
		{`42`, jsonrpc.CodeInvalidRequest, nil},
		{`null`, jsonrpc.CodeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":5}`, jsonrpc.CodeInvalidRequest, 5.0},
		{`{"jsonrpc":"1.0","id":6,"method":"ping"}`, jsonrpc.CodeInvalidRequest, 6.0},
		{`{"id":"s7","method":"ping"}`, jsonrpc.CodeInvalidRequest, "s7"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, jsonrpc.CodeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, jsonrpc.CodeInvalidRequest, nil},
		{`{"jsonrpc":"2.0","id":8,"method":5}`, jsonrpc.CodeInvalidRequest, 8.0},
		{`{"jsonrpc":"2.0","id":9,"method":"ping","params":5}`, jsonrpc.CodeInvalidRequest, 9.0},
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, jsonrpc.CodeInvalidRequest, nil},
	} {
		p.send(c.frame)
		m := p.next()
		require.Equal(t, "2.0", m["jsonrpc"], c.frame)
		e, ok := m["error"].(map[string]any)
		require.True(t, ok, "%s: an error response, got %v", c.frame, m)
		require.Equal(t, c.code, e["code"], c.frame)
		require.NotEmpty(t, e["message"], c.frame)
		require.Contains(t, m, "id", c.frame)
		require.Equal(t, c.id, m["id"], c.frame)
		// Still serving.
		id := 100 + i
		p.send(`{"jsonrpc":"2.0","id":` + strings.TrimSpace(jsonNum(id)) + `,"method":"ping"}`)
		pong := p.next()
		require.EqualValues(t, id, pong["id"], "%s: the server still answers", c.frame)
		require.Contains(t, pong, "result")
	}
	p.send("   ") // a blank line is nothing
	p.send(`{"jsonrpc":"2.0","id":500,"method":"tools/list"}`)
	require.EqualValues(t, 500, p.next()["id"])
	require.NoError(t, p.in.Close())
	select {
	case err := <-p.done:
		require.NoError(t, err, "a client that hangs up ends the server cleanly")
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop when its input closed")
	}
}

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestResourceErrorsHaveACode (issue 20 §5): a resource read that fails
// for another reason than a missing session is a JSON-RPC error with a
// code (-32603, internal error), not code 0.
func TestResourceErrorsHaveACode(t *testing.T) {
	st := openSQLite(t, filepath.Join(t.TempDir(), "state.db"))
	cs := connect(t, st, mcpserver.Options{})
	require.NoError(t, st.Close())
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpserver.SessionURI("any")})
	require.Error(t, err)
	var we *jsonrpc.Error
	require.True(t, errors.As(err, &we), "a JSON-RPC error: %v", err)
	require.Equal(t, int64(jsonrpc.CodeInternalError), we.Code, "%v", err)
	require.NotContains(t, we.Message, "\n")
}

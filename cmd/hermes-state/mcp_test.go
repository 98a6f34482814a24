package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// cliCommand returns the hermes-state CLI as a process: this test binary
// re-executed with runMainEnv set runs main() (see TestMain), so the
// process is the real command, flags, store and stdio included. A context
// bounds it so a hung server cannot hang the test run.
func cliCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// demoStore writes the demo store and returns its path and the id of its
// CLI session.
func demoStore(t *testing.T) (string, string) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	out, err := run(t, "--db", db, "--json", "sessions", "list", "--source", "cli")
	require.NoError(t, err)
	var ss []struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(out), &ss))
	require.Len(t, ss, 1)
	return db, ss[0].ID
}

// rpc speaks newline-delimited JSON-RPC to a process's stdio.
type rpc struct {
	t     *testing.T
	in    io.WriteCloser
	lines chan []byte
}

func (r *rpc) send(v map[string]any) {
	r.t.Helper()
	v["jsonrpc"] = "2.0"
	b, err := json.Marshal(v)
	require.NoError(r.t, err)
	_, err = r.in.Write(append(b, '\n'))
	require.NoError(r.t, err)
}

// reply reads the next line of stdout, which must be the JSON-RPC response
// to request id.
func (r *rpc) reply(id int) map[string]any {
	r.t.Helper()
	line, ok := <-r.lines
	require.True(r.t, ok, "the server closed stdout before answering request %d", id)
	var m map[string]any
	require.NoError(r.t, json.Unmarshal(line, &m), "stdout carries only JSON-RPC: %q", line)
	require.Equal(r.t, "2.0", m["jsonrpc"])
	require.EqualValues(r.t, id, m["id"], "%s", line)
	return m
}

// TestMCPStdioProcess starts `hermes-state --db FILE mcp` and speaks MCP to
// it over its stdin and stdout without an SDK: initialize, tools/list,
// tools/call (a search, an error, a write tool that is not there), then
// closes stdin; the process must exit 0 having written nothing but
// JSON-RPC to stdout.
func TestMCPStdioProcess(t *testing.T) {
	db, cliID := demoStore(t)
	cmd := cliCommand(t, "--db", db, "mcp")
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	r := &rpc{t: t, in: in, lines: make(chan []byte, 16)}
	go func() {
		defer close(r.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			r.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()

	r.send(map[string]any{"id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "raw-test", "version": "0"}}})
	init := r.reply(1)["result"].(map[string]any)
	require.Equal(t, "2025-06-18", init["protocolVersion"])
	require.Equal(t, mcpserver.Name, init["serverInfo"].(map[string]any)["name"])
	require.Contains(t, init["capabilities"], "tools")
	require.Contains(t, init["capabilities"], "resources")
	require.Contains(t, init["instructions"], "No tool writes")
	r.send(map[string]any{"method": "notifications/initialized", "params": map[string]any{}})

	r.send(map[string]any{"id": 2, "method": "tools/list", "params": map[string]any{}})
	var names []string
	for _, tool := range r.reply(2)["result"].(map[string]any)["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	require.ElementsMatch(t, mcpserver.ReadTools, names)

	r.send(map[string]any{"id": 3, "method": "tools/call", "params": map[string]any{
		"name": "search_sessions", "arguments": map[string]any{"query": "kubernetes"}}})
	res := r.reply(3)["result"].(map[string]any)
	require.NotEqual(t, true, res["isError"])
	hits := res["structuredContent"].(map[string]any)["hits"].([]any)
	require.NotEmpty(t, hits)
	for _, h := range hits {
		require.Equal(t, cliID, h.(map[string]any)["session_id"])
	}

	r.send(map[string]any{"id": 4, "method": "tools/call", "params": map[string]any{
		"name": "get_conversation", "arguments": map[string]any{"session_id": cliID, "limit": 2}}})
	pg := r.reply(4)["result"].(map[string]any)["structuredContent"].(map[string]any)
	require.Len(t, pg["messages"], 2)
	require.EqualValues(t, 2, pg["next_offset"])

	r.send(map[string]any{"id": 5, "method": "tools/call", "params": map[string]any{
		"name": "get_session", "arguments": map[string]any{"session_id": "nope"}}})
	res = r.reply(5)["result"].(map[string]any)
	require.Equal(t, true, res["isError"])
	require.Contains(t, res["content"].([]any)[0].(map[string]any)["text"], `no session id starts with "nope"`)

	r.send(map[string]any{"id": 6, "method": "tools/call", "params": map[string]any{
		"name": "set_title", "arguments": map[string]any{"session_id": cliID, "title": "x"}}})
	m := r.reply(6)
	refused := m["error"] != nil || m["result"].(map[string]any)["isError"] == true
	require.True(t, refused, "set_title does not exist without --allow-write: %v", m)

	require.NoError(t, in.Close())
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	for line := range r.lines {
		t.Fatalf("unexpected output after the last answer: %q", line)
	}
	title, err := run(t, "--db", db, "sessions", "title", cliID)
	require.NoError(t, err)
	require.Empty(t, title, "the read-only server wrote nothing (a session without a title prints nothing on stdout)")
}

// TestMCPAllowWriteProcess connects the SDK's own client to
// `hermes-state mcp --allow-write` over stdio and writes a title.
func TestMCPAllowWriteProcess(t *testing.T) {
	db, cliID := demoStore(t)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cliCommand(t, "--db", db, "mcp", "--allow-write")}, nil)
	require.NoError(t, err)
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		require.NoError(t, err)
		names = append(names, tool.Name)
	}
	require.ElementsMatch(t, append(append([]string{}, mcpserver.ReadTools...), mcpserver.WriteTools...), names)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "set_title", Arguments: map[string]any{"session_id": cliID, "title": "From MCP"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.NoError(t, cs.Close())

	title, err := run(t, "--db", db, "sessions", "title", cliID)
	require.NoError(t, err)
	require.Equal(t, "From MCP\n", title)
}

// syncBuffer is a bytes.Buffer safe for a process writing while the test
// reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMCPHTTPProcess serves streamable HTTP on a loopback port, talks to it
// with the SDK's client, checks a foreign Host header is refused, and stops
// the process with SIGTERM (exit 0).
func TestMCPHTTPProcess(t *testing.T) {
	db, cliID := demoStore(t)
	cmd := cliCommand(t, "--db", db, "mcp", "--http", "127.0.0.1:0")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	re := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/)`)
	var url string
	for i := 0; i < 600 && url == ""; i++ {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.NotEmpty(t, url, "the server says where it listens; stderr: %s", stderr.String())

	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "v0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_session", Arguments: map[string]any{"session_id": cliID}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	require.Equal(t, "cli", res.StructuredContent.(map[string]any)["session"].(map[string]any)["source"])
	require.NoError(t, cs.Close())

	// DNS rebinding: a page of another origin resolving to 127.0.0.1.
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	req.Host = "attacker.example:80"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
}

// TestMCPRefusesNonLoopback: --http never listens beyond this machine.
func TestMCPRefusesNonLoopback(t *testing.T) {
	db, _ := demoStore(t)
	for _, addr := range []string{"0.0.0.0:8765", ":8765", "192.168.1.10:8765", "[::]:8765", "example.com:80", "8765"} {
		_, err := run(t, "--db", db, "mcp", "--http", addr)
		require.Error(t, err, addr)
		require.Equal(t, 2, exitCode(err), addr)
		require.Contains(t, err.Error(), "loopback", addr)
	}
	for _, addr := range []string{"127.0.0.1:1", "[::1]:1", "localhost:1"} {
		got, err := mcpserver.LoopbackAddr(addr)
		require.NoError(t, err, addr)
		require.NotContains(t, got, "localhost")
	}
}

// TestMCPReadOnlyLeavesFileAlone (issue 11, item 3; issue 20, section 2):
// without --allow-write the server opens the store read-only, so serving a
// Hermes file leaves it byte for byte as it was, with nothing beside it
// (a writable open would migrate the v21 file to v30 and switch the
// delete-mode v30 file to WAL). The tools answer from either as it is: the
// v21 file is read through its own tables in the v30 shape.
func TestMCPReadOnlyLeavesFileAlone(t *testing.T) {
	for _, name := range []string{"hermes-v30.db", "hermes-v21.db"} {
		t.Run(name, func(t *testing.T) {
			db := fixturetest.Copy(t, name)
			before, listing := fixturetest.SHA256(t, db), fixturetest.Listing(t, filepath.Dir(db))
			ctx := context.Background()
			c := mcp.NewClient(&mcp.Implementation{Name: "sdk-test", Version: "v0"}, nil)
			cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cliCommand(t, "--db", db, "mcp")}, nil)
			require.NoError(t, err)
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_sessions", Arguments: map[string]any{"query": "桂林"}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			require.Len(t, res.StructuredContent.(map[string]any)["hits"], 3, "the fixture's three messages holding 桂林 are found")
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
			require.NoError(t, err)
			require.False(t, res.IsError, "%v", res.Content)
			require.NotEmpty(t, res.StructuredContent.(map[string]any)["sessions"])
			require.NoError(t, cs.Close())
			require.Equal(t, before, fixturetest.SHA256(t, db), "serving the file changed it")
			require.Equal(t, listing, fixturetest.Listing(t, filepath.Dir(db)), "serving the file left files beside it")
		})
	}
}

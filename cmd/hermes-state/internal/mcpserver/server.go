// Package mcpserver serves a hermesstate store as a Model Context Protocol
// server (github.com/modelcontextprotocol/go-sdk): tools to search, list and
// read sessions, a hermes-session://ID resource, and, only when asked for,
// tools that write a title or a note.
//
// It uses only the public API of the root package, like any other user of
// the library. The command `hermes-state mcp` (cmd/hermes-state/mcp.go)
// opens the store and serves it over stdio or streamable HTTP.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/errtext"
)

// Name is the implementation name the server reports to clients.
const Name = "hermes-state"

// Tool names. The write tools exist only with Options.AllowWrite.
const (
	ToolSearchSessions  = "search_sessions"
	ToolListSessions    = "list_sessions"
	ToolGetConversation = "get_conversation"
	ToolGetSession      = "get_session"
	ToolGetMessage      = "get_message"
	ToolUsageStats      = "get_usage_stats"
	ToolSetTitle        = "set_title"
	ToolAppendNote      = "append_note"
)

// ReadTools and WriteTools name the tools of a read-only and of a writable
// server (a writable one has both).
var (
	ReadTools  = []string{ToolSearchSessions, ToolListSessions, ToolGetConversation, ToolGetSession, ToolGetMessage, ToolUsageStats}
	WriteTools = []string{ToolSetTitle, ToolAppendNote}
)

// Options configure New.
type Options struct {
	// AllowWrite adds the tools that write (set_title, append_note). Without
	// it the server has no tool that changes the store.
	AllowWrite bool
	// Version is reported to clients; empty means the version
	// `hermes-state version` prints (hermesstate.BuildInfo).
	Version string
	// Logger receives the SDK's log of server activity; nil logs nothing.
	Logger *slog.Logger
}

// server holds the store the tools read.
type server struct {
	st  *hs.Store
	opt Options
}

// New returns an MCP server whose tools and resources read st. The server
// does not close st. It never fails: tool errors are reported to the
// client as tool results with IsError set, carrying the message the CLI
// prints for the same error.
func New(st *hs.Store, opt Options) *mcp.Server {
	if opt.Version == "" {
		b, _ := hs.BuildInfo(context.Background()) // Version never depends on the SQLite probe
		opt.Version = b.Version
	}
	s := &server{st: st, opt: opt}
	srv := mcp.NewServer(&mcp.Implementation{Name: Name, Title: "Hermes session store", Version: opt.Version},
		&mcp.ServerOptions{Instructions: instructions(opt.AllowWrite), Logger: opt.Logger,
			// No logging capability: the server logs to stderr, not to the client.
			Capabilities:      &mcp.ServerCapabilities{},
			CompletionHandler: s.complete})
	s.addReadTools(srv)
	if opt.AllowWrite {
		s.addWriteTools(srv)
	}
	s.addResources(srv)
	srv.AddReceivingMiddleware(s.listResources)
	return srv
}

func instructions(write bool) string {
	b := strings.Builder{}
	b.WriteString("Past conversations of a Hermes agent (every platform: CLI, Telegram, Discord, cron, ...). ")
	b.WriteString("Use search_sessions to find messages by words, list_sessions to see recent sessions, ")
	b.WriteString("get_conversation to read a session page by page (follow next_offset; around = a message id from a search hit reads its neighbourhood; compact = true saves tokens), get_message for the rest of a message cut to fit a page, get_session for its metadata, lineage and token usage, get_usage_stats for usage by source and model. ")
	b.WriteString("Session ids may be given as a unique prefix. Resource hermes-session://ID is a session as Markdown.")
	if write {
		b.WriteString(" Writes are enabled: set_title renames a session, append_note adds a note message to it.")
	} else {
		b.WriteString(" No tool writes to the store.")
	}
	return b.String()
}

// toolError is the error a tool reports: the first line of the store's
// message in the user's terms, as `hermes-state` prints it on stderr.
func toolError(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(errtext.FirstLine(err))
}

// invalid builds the error of a refused argument; its message names the
// argument, as the CLI names a flag.
func invalid(format string, args ...any) error {
	return fmt.Errorf("invalid input: "+format, args...)
}

// resolve returns the session id idOrPrefix names (an exact id, else a
// unique prefix).
func (s *server) resolve(ctx context.Context, idOrPrefix string) (string, error) {
	idOrPrefix = strings.TrimSpace(idOrPrefix)
	if idOrPrefix == "" {
		return "", invalid("session_id is required")
	}
	return s.st.Lineage().ResolveID(ctx, idOrPrefix)
}

func boolPtr(b bool) *bool { return &b }

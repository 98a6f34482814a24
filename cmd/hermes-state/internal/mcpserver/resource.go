package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// URIScheme is the scheme of session resources: hermes-session://ID.
const URIScheme = "hermes-session"

// MaxResourceBytes bounds the Markdown of a session resource; a longer
// session ends with a line saying where get_conversation continues.
const MaxResourceBytes = 256 << 10

// resourcePage is the number of messages read per step while rendering.
const resourcePage = 200

func (s *server) addResources(srv *mcp.Server) {
	srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "session",
		Title:       "Hermes session",
		Description: "A session as Markdown: its metadata and conversation (the first 256 KiB; read the rest with get_conversation).",
		MIMEType:    "text/markdown",
		URITemplate: URIScheme + "://{id}",
	}, s.readResource)
}

// SessionURI returns the resource URI of a session.
func SessionURI(id string) string { return URIScheme + "://" + url.PathEscape(id) }

func (s *server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (res *mcp.ReadResourceResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	uri := req.Params.URI
	raw, ok := strings.CutPrefix(uri, URIScheme+"://")
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	ref, err := url.PathUnescape(strings.TrimSuffix(raw, "/"))
	if err != nil || strings.TrimSpace(ref) == "" {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	id, err := s.resolve(ctx, ref)
	if errors.Is(err, hs.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, resourceError(err)
	}
	text, err := s.sessionMarkdown(ctx, id)
	if err != nil {
		return nil, resourceError(err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}, nil
}

// resourceError is the JSON-RPC error of a failed resource read: the
// CLI's one-line message, with -32602 (invalid params) for a refused id
// and -32603 (internal error) for a failure of the store.
func resourceError(err error) error {
	code := int64(jsonrpc.CodeInternalError)
	if errors.Is(err, hs.ErrInvalid) {
		code = jsonrpc.CodeInvalidParams
	}
	return &jsonrpc.Error{Code: code, Message: toolError(err).Error()}
}

// sessionMarkdown renders a session's metadata and conversation, at most
// MaxResourceBytes, reading the conversation a window at a time.
func (s *server) sessionMarkdown(ctx context.Context, id string) (string, error) {
	info, err := s.session(ctx, SessionInput{SessionID: id})
	if err != nil {
		return "", err
	}
	m := info.Session
	var b strings.Builder
	title := m.Title
	if title == "" {
		title = m.ID
	}
	fmt.Fprintf(&b, "# %s\n\n- id: `%s`\n- source: %s\n", oneLineMD(title), m.ID, oneLineMD(m.Source))
	if m.Model != "" {
		fmt.Fprintf(&b, "- model: %s\n", oneLineMD(m.Model))
	}
	fmt.Fprintf(&b, "- started: %s\n", m.StartedTime)
	if m.EndedAt != nil {
		fmt.Fprintf(&b, "- ended: %s (%s)\n", isoTime(*m.EndedAt), oneLineMD(m.EndReason))
	}
	if m.ParentSessionID != "" {
		fmt.Fprintf(&b, "- parent: `%s`\n", m.ParentSessionID)
	}
	if tip := info.Lineage.CompressionTip; tip != "" && tip != m.ID {
		fmt.Fprintf(&b, "- continued in: `%s`\n", tip)
	}
	fmt.Fprintf(&b, "- messages: %d, tokens in/out: %d / %d\n", m.MessageCount, info.Usage.InputTokens, info.Usage.OutputTokens)
	for offset := 0; ; {
		items, total, err := s.window(ctx, id, offset, resourcePage, repo.ConversationOptions{})
		if err != nil {
			return "", err
		}
		for i, it := range items {
			part := messageMarkdown(it)
			if b.Len()+len(part) > MaxResourceBytes {
				fmt.Fprintf(&b, "\n_(%d more messages: call get_conversation with session_id %q and offset %d)_\n", total-offset-i, id, offset+i)
				return b.String(), nil
			}
			b.WriteString(part)
		}
		offset += len(items)
		if len(items) == 0 || offset >= total {
			return b.String(), nil
		}
	}
}

func messageMarkdown(it repo.ConversationItem) string {
	var b strings.Builder
	head := it.Role
	if it.ToolName != "" {
		head += " (" + it.ToolName + ")"
	}
	fmt.Fprintf(&b, "\n## %s", oneLineMD(head))
	if t := isoTime(it.Timestamp); t != "" {
		b.WriteString(" · " + t)
	}
	b.WriteString("\n\n")
	switch c := it.Content.(type) {
	case nil:
	case string:
		if c != "" {
			b.WriteString(c + "\n")
		}
	default:
		j, _ := json.Marshal(c)
		b.WriteString("```json\n" + string(j) + "\n```\n")
	}
	if it.ToolCalls != nil {
		var calls []struct {
			Function struct{ Name, Arguments string } `json:"function"`
		}
		if json.Unmarshal(it.ToolCalls, &calls) == nil {
			for _, c := range calls {
				fmt.Fprintf(&b, "- tool call `%s`: `%s`\n", oneLineMD(c.Function.Name), oneLineMD(c.Function.Arguments))
			}
		}
	}
	return b.String()
}

func oneLineMD(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ", "`", "'").Replace(s)
}

package mcpserver

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/repo"
)

// Bounds of get_conversation's pages (also in its input schema).
const (
	DefaultConversationLimit = 50
	MaxConversationLimit     = 500
	DefaultConversationBytes = 64 << 10
	MinConversationBytes     = 1 << 10
	MaxConversationBytes     = 1 << 20
)

// ConversationInput are the arguments of get_conversation.
type ConversationInput struct {
	SessionID         string `json:"session_id" jsonschema:"Id of the session (or a unique prefix of it), as returned by search_sessions or list_sessions."`
	Offset            int    `json:"offset,omitempty" jsonschema:"Index of the first message to return (0 = the start). Pass next_offset of the previous page."`
	Limit             int    `json:"limit,omitempty" jsonschema:"Maximum number of messages in this page."`
	MaxBytes          int    `json:"max_bytes,omitempty" jsonschema:"Approximate maximum size of the page's messages as JSON, in bytes; the page ends before the message that would pass it."`
	KeepMemoryContext bool   `json:"keep_memory_context,omitempty" jsonschema:"Keep <memory-context> blocks (recalled memory) in the text; by default they are removed, as Hermes does when it replays a session."`
}

// ConversationOutput is one page of get_conversation.
type ConversationOutput struct {
	SessionID string `json:"session_id"`
	// Total is the number of messages of the session's live transcript.
	Total  int `json:"total" jsonschema:"Number of messages in the session."`
	Offset int `json:"offset" jsonschema:"Index of the first message of this page."`
	// Messages are Hermes' replay items with their index added.
	Messages   []map[string]any `json:"messages" jsonschema:"The page's messages in order. Each has index (its position in the session), role and content, and when present tool_calls, tool_call_id, tool_name, timestamp, reasoning and the other fields Hermes replays; truncated = true marks a message cut to fit max_bytes."`
	NextOffset *int             `json:"next_offset,omitempty" jsonschema:"Offset of the next page; absent when this page reaches the end."`
}

func (s *server) conversation(ctx context.Context, in ConversationInput) (ConversationOutput, error) {
	switch {
	case in.Offset < 0:
		return ConversationOutput{}, invalid("offset must not be negative")
	case in.Limit < 0 || in.Limit > MaxConversationLimit:
		return ConversationOutput{}, invalid("limit must be between 1 and %d", MaxConversationLimit)
	case in.MaxBytes != 0 && (in.MaxBytes < MinConversationBytes || in.MaxBytes > MaxConversationBytes):
		return ConversationOutput{}, invalid("max_bytes must be between %d and %d", MinConversationBytes, MaxConversationBytes)
	}
	if in.Limit == 0 {
		in.Limit = DefaultConversationLimit
	}
	if in.MaxBytes == 0 {
		in.MaxBytes = DefaultConversationBytes
	}
	id, err := s.resolve(ctx, in.SessionID)
	if err != nil {
		return ConversationOutput{}, err
	}
	items, total, err := s.window(ctx, id, in.Offset, in.Limit, repo.ConversationOptions{KeepMemoryContext: in.KeepMemoryContext})
	if err != nil {
		return ConversationOutput{}, err
	}
	out := ConversationOutput{SessionID: id, Total: total, Offset: in.Offset, Messages: []map[string]any{}}
	used := 0
	for i, it := range items {
		m, n, err := pageItem(it, in.Offset+i, in.MaxBytes)
		if err != nil {
			return ConversationOutput{}, err
		}
		if len(out.Messages) > 0 && used+n > in.MaxBytes {
			break
		}
		out.Messages = append(out.Messages, m)
		used += n
	}
	if next := in.Offset + len(out.Messages); next < total {
		out.NextOffset = &next
	}
	return out, nil
}

// window returns the replay items offset..offset+limit of session id and
// the number of messages of its live transcript, reading only that window
// from the store (limit at most repo.MaxPageLimit).
func (s *server) window(ctx context.Context, id string, offset, limit int, opt repo.ConversationOptions) ([]repo.ConversationItem, int, error) {
	p, err := s.st.Messages().Page(ctx, id, repo.PageOptions{Offset: offset, Limit: min(limit, repo.MaxPageLimit)})
	if err != nil {
		return nil, 0, err
	}
	return repo.ToConversation(p.Messages, opt), int(p.Total), nil
}

// pageItem converts a replay item to the map a page carries (the item's
// JSON plus "index") and returns its JSON size. An item larger than
// maxBytes by itself is cut: its content (with tool calls and reasoning
// folded into the text) keeps as many leading bytes as fit, and it is
// marked truncated with its original size.
func pageItem(it repo.ConversationItem, index, maxBytes int) (map[string]any, int, error) {
	b, err := json.Marshal(it)
	if err != nil {
		return nil, 0, err
	}
	if len(b) <= maxBytes {
		m := map[string]any{}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, 0, err
		}
		m["index"] = index
		return m, len(b) + len(`,"index":`) + 8, nil
	}
	// Fold every large field into one text, then cut it.
	text := ""
	if c, ok := it.Content.(string); ok {
		text = c
	} else if it.Content != nil {
		cb, _ := json.Marshal(it.Content)
		text = string(cb)
	}
	if it.ToolCalls != nil {
		text += "\n[tool_calls] " + string(it.ToolCalls)
	}
	for _, r := range []*string{it.Reasoning, it.ReasoningContent} {
		if r != nil && *r != "" {
			text += "\n[reasoning] " + *r
		}
	}
	m := map[string]any{"index": index, "role": it.Role, "truncated": true, "original_bytes": len(b)}
	if it.Timestamp != 0 {
		m["timestamp"] = it.Timestamp
	}
	if it.ToolCallID != "" {
		m["tool_call_id"] = it.ToolCallID
	}
	if it.ToolName != "" {
		m["tool_name"] = it.ToolName
	}
	room := maxBytes - 256 - len(it.ToolCallID) - len(it.ToolName)
	m["content"] = cutJSONText(text, max(room, 64))
	cb, err := json.Marshal(m)
	if err != nil {
		return nil, 0, err
	}
	return m, len(cb), nil
}

// cutJSONText returns the longest prefix of s (whole characters) whose JSON
// string encoding is at most limit bytes, with " …" appended when cut.
func cutJSONText(s string, limit int) string {
	n := 2 // quotes
	for i, r := range s {
		w := utf8.RuneLen(r)
		switch {
		case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
			w = 2
		case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029 || r == utf8.RuneError:
			w = 6
		}
		if n+w > limit-4 {
			return s[:i] + " …"
		}
		n += w
	}
	return s
}

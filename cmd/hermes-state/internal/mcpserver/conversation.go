package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// Bounds of get_conversation's pages (also in its input schema).
const (
	DefaultConversationLimit = 50
	MaxConversationLimit     = 500
	DefaultConversationBytes = 64 << 10
	MinConversationBytes     = 1 << 10
	MaxConversationBytes     = 1 << 20
	DefaultAroundWindow      = 5
	MaxAroundWindow          = 100
	DefaultToolOutputChars   = 500
)

// ConversationInput are the arguments of get_conversation.
type ConversationInput struct {
	SessionID         string `json:"session_id" jsonschema:"Id of the session (or a unique prefix of it), as returned by search_sessions or list_sessions."`
	Offset            int    `json:"offset,omitempty" jsonschema:"Index of the first message to return (0 = the start). Pass next_offset of the previous page."`
	Limit             int    `json:"limit,omitempty" jsonschema:"Maximum number of messages in this page."`
	MaxBytes          int    `json:"max_bytes,omitempty" jsonschema:"Approximate maximum size of the page's messages as JSON, in bytes; the page ends before the message that would pass it."`
	KeepMemoryContext bool   `json:"keep_memory_context,omitempty" jsonschema:"Keep <memory-context> blocks (recalled memory) in the text; by default they are removed, as Hermes does when it replays a session."`
	Around            int64  `json:"around,omitempty" jsonschema:"A message id (message_id of a search hit): the page is the window messages before it, the message itself and the window after it (offset is then ignored)."`
	Window            int    `json:"window,omitempty" jsonschema:"With around: messages on each side of it."`
	Compact           bool   `json:"compact,omitempty" jsonschema:"Save tokens: leave out reasoning (reasoning, reasoning_content, reasoning_details, codex items), Hermes' bookkeeping keys (_db_persisted, _row_id, display_*), and fold tool output to its first tool_output_chars characters (the rest is counted in tool_output_omitted_chars)."`
	ToolOutputChars   int    `json:"tool_output_chars,omitempty" jsonschema:"With compact: characters of a tool result's content kept."`
}

// ConversationOutput is one page of get_conversation.
type ConversationOutput struct {
	SessionID string `json:"session_id"`
	// Total is the number of messages of the session's live transcript.
	Total  int `json:"total" jsonschema:"Number of messages in the session."`
	Offset int `json:"offset" jsonschema:"Index of the first message of this page."`
	// AnchorIndex is the index of the around message.
	AnchorIndex *int `json:"anchor_index,omitempty" jsonschema:"With around: the index of that message in the session."`
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
	var anchor *int
	if in.Around != 0 {
		if in.Window == 0 {
			in.Window = DefaultAroundWindow
		}
		if in.Window < 0 || in.Window > MaxAroundWindow {
			return ConversationOutput{}, invalid("window must be between 0 and %d", MaxAroundWindow)
		}
		at, err := s.indexOf(ctx, id, in.Around)
		if err != nil {
			return ConversationOutput{}, err
		}
		anchor = &at
		in.Offset, in.Limit = max(0, at-in.Window), at-max(0, at-in.Window)+in.Window+1
	}
	raw, total, err := s.window(ctx, id, in.Offset, in.Limit, repo.ConversationOptions{KeepMemoryContext: in.KeepMemoryContext})
	if err != nil {
		return ConversationOutput{}, err
	}
	if in.Compact && in.ToolOutputChars == 0 {
		in.ToolOutputChars = DefaultToolOutputChars
	}
	out := ConversationOutput{SessionID: id, Total: total, Offset: in.Offset, Messages: []map[string]any{}, AnchorIndex: anchor}
	used := 0
	for i, ci := range raw {
		it := pageEntry{ConversationItem: ci}
		if in.Compact {
			it = compactItem(ci, in.ToolOutputChars)
		}
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
	// A Hermes file read as it is replays as its version did.
	v, err := s.st.SchemaVersion(ctx)
	if err != nil {
		return nil, 0, err
	}
	return repo.ToConversation(p.Messages, opt.ForHermes(v)), int(p.Total), nil
}

// pageItem converts a replay item to the map a page carries (the item's
// JSON plus "index") and returns its JSON size. An item larger than
// maxBytes by itself is cut: its content (with tool calls and reasoning
// folded into the text) keeps as many leading bytes as fit, and it is
// marked truncated with its original size.
func pageItem(it pageEntry, index, maxBytes int) (map[string]any, int, error) {
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
		if it.compact {
			delete(m, "_db_persisted")
			if it.omitted > 0 {
				m["tool_output_omitted_chars"] = it.omitted
			}
		}
		return m, len(b) + len(`,"index":`) + 8, nil
	}
	text := foldedText(it.ConversationItem)
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
	kept, cut := cutJSONText(text, max(room, 64))
	m["content"] = kept
	if cut < len(text) {
		m["content_next_offset"] = cut // get_message reads on from there
	}
	cb, err := json.Marshal(m)
	if err != nil {
		return nil, 0, err
	}
	return m, len(cb), nil
}

// cutJSONText returns the longest prefix of s (whole characters) whose JSON
// string encoding is at most limit bytes, with " …" appended when cut,
// and the length of that prefix in bytes of s.
func cutJSONText(s string, limit int) (string, int) {
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
			return s[:i] + " …", i
		}
		n += w
	}
	return s, len(s)
}

// pageEntry is a replay item on its way into a page: compact marks the
// compact mode, omitted the characters of tool output folded away.
type pageEntry struct {
	repo.ConversationItem
	compact bool
	omitted int
}

// compactItem drops what an agent rarely needs from an item: reasoning
// copies, bookkeeping keys, tool output past keep characters.
func compactItem(it repo.ConversationItem, keep int) pageEntry {
	it.Reasoning, it.ReasoningContent, it.ReasoningDetails = nil, nil, nil
	it.CodexReasoningItems, it.CodexMessageItems = nil, nil
	it.RowID, it.DisplayKind, it.DisplayMetadata, it.APIContent = 0, "", nil, ""
	e := pageEntry{compact: true}
	if c, ok := it.Content.(string); ok && it.Role == "tool" {
		if r := []rune(c); len(r) > keep {
			it.Content = string(r[:keep]) + " …"
			e.omitted = len(r) - keep
		}
	}
	e.ConversationItem = it
	return e
}

// foldedText is an item's content with its tool calls and reasoning
// folded in: what a cut message shows and get_message reads.
func foldedText(it repo.ConversationItem) string {
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
	return text
}

// indexOf returns the index of message id in session sid's live
// transcript (ErrNotFound when it is not one of its active messages).
func (s *server) indexOf(ctx context.Context, sid string, id int64) (int, error) {
	p, err := s.st.Messages().Page(ctx, sid, repo.PageOptions{BeforeID: id + 1, Limit: 1})
	if err != nil {
		return 0, err
	}
	if len(p.Messages) == 0 || p.Messages[0].ID != id {
		return 0, fmt.Errorf("message %d is not an active message of session %s (%w)", id, sid, hs.ErrNotFound)
	}
	return int(p.Start), nil
}

// MessageInput are the arguments of get_message.
type MessageInput struct {
	SessionID string `json:"session_id" jsonschema:"Id of the session (or a unique prefix of it)."`
	Index     int    `json:"index" jsonschema:"Index of the message in the session (index of a get_conversation message)."`
	Offset    int    `json:"offset,omitempty" jsonschema:"Byte offset in the message's text to start from (content_next_offset of a cut message, then next_offset)."`
	MaxBytes  int    `json:"max_bytes,omitempty" jsonschema:"Approximate maximum size of the text returned, as JSON, in bytes."`
}

// MessageOutput is a part of one message's text.
type MessageOutput struct {
	SessionID  string `json:"session_id"`
	Index      int    `json:"index"`
	Role       string `json:"role"`
	TotalBytes int    `json:"total_bytes" jsonschema:"Length of the message's whole text in bytes."`
	Offset     int    `json:"offset"`
	Text       string `json:"text" jsonschema:"The text from offset (whole characters)."`
	NextOffset *int   `json:"next_offset,omitempty" jsonschema:"Where the text continues; absent at its end."`
}

func (s *server) message(ctx context.Context, in MessageInput) (MessageOutput, error) {
	switch {
	case in.Index < 0:
		return MessageOutput{}, invalid("index must not be negative")
	case in.Offset < 0:
		return MessageOutput{}, invalid("offset must not be negative")
	case in.MaxBytes != 0 && (in.MaxBytes < MinConversationBytes || in.MaxBytes > MaxConversationBytes):
		return MessageOutput{}, invalid("max_bytes must be between %d and %d", MinConversationBytes, MaxConversationBytes)
	}
	if in.MaxBytes == 0 {
		in.MaxBytes = DefaultConversationBytes
	}
	id, err := s.resolve(ctx, in.SessionID)
	if err != nil {
		return MessageOutput{}, err
	}
	items, total, err := s.window(ctx, id, in.Index, 1, repo.ConversationOptions{})
	if err != nil {
		return MessageOutput{}, err
	}
	if len(items) == 0 {
		return MessageOutput{}, fmt.Errorf("session %s has %d messages; there is no index %d (%w)", id, total, in.Index, hs.ErrNotFound)
	}
	text := foldedText(items[0])
	if in.Offset > len(text) {
		return MessageOutput{}, invalid("offset %d is past the end of the message (%d bytes)", in.Offset, len(text))
	}
	start := in.Offset
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start-- // a whole character
	}
	kept, n := cutJSONText(text[start:], in.MaxBytes)
	if start+n < len(text) {
		kept = strings.TrimSuffix(kept, " …") // the cut mark; next_offset says it goes on
	}
	out := MessageOutput{SessionID: id, Index: in.Index, Role: items[0].Role, TotalBytes: len(text), Offset: start, Text: kept}
	if start+n < len(text) {
		next := start + n
		out.NextOffset = &next
	}
	return out, nil
}

package models

import (
	"encoding/json"
	"strings"
)

// MultimodalPrefix starts the stored content of a multimodal message (a list
// of parts): NUL, "json:", then the JSON text of the parts.
const MultimodalPrefix = "\x00json:"

// Message is one row of the messages table.
type Message struct {
	ID                  int64    `gorm:"column:id;type:INTEGER;primaryKey;autoIncrement" json:"id"`
	SessionID           string   `gorm:"column:session_id;type:TEXT;not null" json:"session_id"`
	Role                string   `gorm:"column:role;type:TEXT;not null" json:"role"`
	Content             *string  `gorm:"column:content;type:TEXT" json:"content"`
	ToolCallID          *string  `gorm:"column:tool_call_id;type:TEXT" json:"tool_call_id"`
	ToolCalls           JSON     `gorm:"column:tool_calls;type:TEXT;serializer:pyjson" json:"tool_calls"`
	ToolName            *string  `gorm:"column:tool_name;type:TEXT" json:"tool_name"`
	EffectDisposition   *string  `gorm:"column:effect_disposition;type:TEXT" json:"effect_disposition"`
	Timestamp           Epoch    `gorm:"column:timestamp;type:REAL;not null" json:"timestamp"`
	TokenCount          *int64   `gorm:"column:token_count;type:INTEGER" json:"token_count"`
	FinishReason        *string  `gorm:"column:finish_reason;type:TEXT" json:"finish_reason"`
	Reasoning           *string  `gorm:"column:reasoning;type:TEXT" json:"reasoning"`
	ReasoningContent    *string  `gorm:"column:reasoning_content;type:TEXT" json:"reasoning_content"`
	ReasoningDetails    JSONText `gorm:"column:reasoning_details;type:TEXT;serializer:pyjson" json:"reasoning_details"`
	CodexReasoningItems JSONText `gorm:"column:codex_reasoning_items;type:TEXT;serializer:pyjson" json:"codex_reasoning_items"`
	CodexMessageItems   JSONText `gorm:"column:codex_message_items;type:TEXT;serializer:pyjson" json:"codex_message_items"`
	PlatformMessageID   *string  `gorm:"column:platform_message_id;type:TEXT" json:"platform_message_id"`
	Observed            int64    `gorm:"column:observed;type:INTEGER;default:0" json:"observed"`
	CompressedSummary   int64    `gorm:"column:_compressed_summary;type:INTEGER;not null;default:0" json:"_compressed_summary"`
	Active              int64    `gorm:"column:active;type:INTEGER;not null;default:1" json:"active"`
	Compacted           int64    `gorm:"column:compacted;type:INTEGER;not null;default:0" json:"compacted"`
	APIContent          *string  `gorm:"column:api_content;type:TEXT" json:"api_content"`
	DisplayKind         *string  `gorm:"column:display_kind;type:TEXT" json:"display_kind"`
	DisplayMetadata     JSON     `gorm:"column:display_metadata;type:TEXT;serializer:pyjson" json:"display_metadata"`
	DisplayIdentity     []byte   `gorm:"column:display_identity;type:BLOB" json:"-"`
	DisplayOrder        *int64   `gorm:"column:display_order;type:INTEGER" json:"-"`
}

// TableName implements GORM's Tabler.
func (Message) TableName() string { return "messages" }

// ToolCall is one OpenAI tool call as Hermes stores it in tool_calls.
type ToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function ToolCallFunction `json:"function"`
}

// ToolCallFunction is the function part of a ToolCall; Arguments is itself
// JSON text.
type ToolCallFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolCallCount returns how many tool calls a tool_calls value holds, the way
// Hermes counts them: the length of a list, 1 for any other non-empty value.
func ToolCallCount(j JSON) int64 {
	if j.IsNull() {
		return 0
	}
	var list []json.RawMessage
	if err := json.Unmarshal(j, &list); err == nil {
		return int64(len(list))
	}
	return 1
}

// IsMultimodal reports whether the stored content is a multimodal part list.
func (m *Message) IsMultimodal() bool {
	return m.Content != nil && strings.HasPrefix(*m.Content, MultimodalPrefix)
}

// DecodedContent returns the content as Hermes' readers return it: a string,
// nil for NULL, or the decoded list of parts for multimodal content.
func (m *Message) DecodedContent() any {
	if m.Content == nil {
		return nil
	}
	if !m.IsMultimodal() {
		return *m.Content
	}
	var parts any
	if err := json.Unmarshal([]byte((*m.Content)[len(MultimodalPrefix):]), &parts); err != nil {
		return *m.Content
	}
	return parts
}

// ContentText returns the text of the content: the string itself, the text
// parts of multimodal content joined by spaces ("[multimodal content]" when
// there are none), or "" for NULL.
func (m *Message) ContentText() string {
	if m.Content == nil {
		return ""
	}
	if !m.IsMultimodal() {
		return *m.Content
	}
	parts, ok := m.DecodedContent().([]any)
	if !ok {
		return "[multimodal content]"
	}
	var texts []string
	for _, p := range parts {
		switch v := p.(type) {
		case string:
			texts = append(texts, v)
		case map[string]any:
			if t, ok := v["text"].(string); ok {
				texts = append(texts, t)
			}
		}
	}
	if len(texts) == 0 {
		return "[multimodal content]"
	}
	return strings.Join(texts, " ")
}

// MarshalJSON writes the dict Hermes' get_messages returns: content decoded
// (multimodal → list), tool_calls and display_metadata parsed, the other JSON
// columns as stored text, display_identity and display_order left out, and
// _compressed_summary only when true.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	type out struct {
		plain
		Content           any    `json:"content"`
		CompressedSummary *int64 `json:"_compressed_summary,omitempty"`
	}
	o := out{plain: plain(m), Content: m.DecodedContent()}
	if m.CompressedSummary != 0 {
		v := m.CompressedSummary
		o.CompressedSummary = &v
	}
	return json.Marshal(o)
}

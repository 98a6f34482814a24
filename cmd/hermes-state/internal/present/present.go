// Package present is how hermes-state shows a conversation to people, the
// same on every surface: a message is its row id (the number the CLI's
// `messages`, MCP's message_id and the web page's #m123 all use), its role,
// its text and its tool calls; a tool call is its name, its arguments as
// indented JSON (CJK and other text shown as characters, not \u escapes)
// and, when the result is at hand, the tool message that answered it; a
// search snippet is a list of spans, the hits marked. The package holds
// data and text only: no terminal escapes, no HTML. Each surface escapes
// for its own output (the web page with html/template, the CLI for the
// terminal), since every string here comes from stored content, which is
// hostile.
//
// The filters every surface offers (source, excluded sources, roles,
// since/until, title, sort) are defined once here too (filters.go).
package present

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
)

// Message is one stored message as people read it.
type Message struct {
	// ID is the message's row id: the one number of a message on every
	// surface.
	ID        int64
	SessionID string
	Role      string
	// Time is when it was written, epoch seconds.
	Time float64
	// Text is the content as text (the text parts of multimodal content,
	// "" for none).
	Text string
	// Multimodal is set when the content was a list of parts (images,
	// audio, ...): Text holds only the text parts.
	Multimodal bool
	// ToolName and ToolCallID are set on a tool result: the tool that ran
	// and the call it answers.
	ToolName, ToolCallID string
	// ToolCalls are the calls an assistant message makes, in order.
	ToolCalls []ToolCall
	// Reasoning is the model's reasoning text (reasoning, else
	// reasoning_content), "" when none was stored.
	Reasoning string
	// Inactive marks a rewound or archived row (active = 0); Compacted a
	// row archived by in-place compaction; Summary a compaction summary.
	Inactive, Compacted, Summary bool
	// Answers is set on a tool result whose call is in the same
	// conversation slice (Conversation paired them): the call shows it.
	Answers bool
}

// ToolCall is one call an assistant message makes.
type ToolCall struct {
	// ID is the call id the tool result quotes in tool_call_id.
	ID   string
	Name string
	// Arguments is the call's arguments: indented JSON with characters
	// unescaped when they are JSON, else the stored text as it is.
	Arguments string
	// Result is the tool message that answered this call, when
	// Conversation found it in the same slice; nil otherwise.
	Result *Message
}

// FromMessage returns the presentation of one stored row.
func FromMessage(m models.Message) Message {
	out := Message{
		ID: m.ID, SessionID: m.SessionID, Role: m.Role, Time: float64(m.Timestamp),
		Text: m.ContentText(), Multimodal: m.IsMultimodal(),
		ToolName: ptr.Deref(m.ToolName), ToolCallID: ptr.Deref(m.ToolCallID),
		ToolCalls: ToolCalls(m.ToolCalls),
		Inactive:  m.Active == 0, Compacted: m.Compacted != 0, Summary: m.CompressedSummary != 0,
	}
	if r := ptr.Deref(m.Reasoning); r != "" {
		out.Reasoning = r
	} else {
		out.Reasoning = ptr.Deref(m.ReasoningContent)
	}
	return out
}

// Conversation returns the presentation of rows in their order, each tool
// result paired with the call it answers when that call is among the rows
// before it (the call's Result points at it and the result is marked
// Answers, so a surface can show it folded under its call).
func Conversation(ms []models.Message) []Message {
	out := make([]Message, len(ms))
	calls := map[string]*ToolCall{}
	for i := range ms {
		out[i] = FromMessage(ms[i])
	}
	for i := range out {
		m := &out[i]
		for j := range m.ToolCalls {
			if id := m.ToolCalls[j].ID; id != "" {
				calls[id] = &m.ToolCalls[j]
			}
		}
		if m.Role == "tool" && m.ToolCallID != "" {
			if c, ok := calls[m.ToolCallID]; ok && c.Result == nil {
				c.Result = m
				m.Answers = true
				if c.Name == "" {
					c.Name = m.ToolName
				}
			}
		}
	}
	return out
}

// ToolCalls decodes a tool_calls column. It reads OpenAI's shape
// ({"id", "type", "function": {"name", "arguments"}}) and the flat one
// some writers store ({"name", "arguments"}), arguments as JSON text or as
// an object. A column that is not a JSON list of objects gives one call
// named "(unreadable tool_calls)" whose arguments are the stored text, so
// nothing stored is hidden; NULL gives none.
func ToolCalls(j models.JSON) []ToolCall {
	if j.IsNull() {
		return nil
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal(j, &raw); err != nil {
		return []ToolCall{{Name: "(unreadable tool_calls)", Arguments: string(j)}}
	}
	out := make([]ToolCall, 0, len(raw))
	for _, c := range raw {
		var tc ToolCall
		_ = json.Unmarshal(c["id"], &tc.ID)
		src := c
		if f, ok := c["function"]; ok {
			var fn map[string]json.RawMessage
			if json.Unmarshal(f, &fn) == nil {
				src = fn
			}
		}
		_ = json.Unmarshal(src["name"], &tc.Name)
		if a, ok := src["arguments"]; ok {
			var s string
			if json.Unmarshal(a, &s) == nil {
				tc.Arguments = PrettyJSON(s)
			} else {
				tc.Arguments = PrettyJSON(string(a))
			}
		}
		out = append(out, tc)
	}
	return out
}

// PrettyJSON returns s indented by two spaces with its keys in their
// stored order and every string's characters written as themselves (CJK,
// accents, <, > and & are not \u-escaped; quotes, backslashes and control
// characters are). Text that is not one JSON value is returned as it is.
func PrettyJSON(s string) string {
	t := strings.TrimSpace(s)
	if t == "" || !json.Valid([]byte(t)) {
		return s
	}
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	var b strings.Builder
	if err := writeValue(&b, dec, 0); err != nil {
		return s
	}
	return b.String()
}

// writeValue copies the next JSON value of dec to b, indented at depth.
func writeValue(b *strings.Builder, dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		closing := json.Delim(']')
		if v == '{' {
			closing = '}'
		}
		b.WriteByte(byte(v))
		n := 0
		for dec.More() {
			if n > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
			indent(b, depth+1)
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				writeString(b, key)
				b.WriteString(": ")
			}
			if err := writeValue(b, dec, depth+1); err != nil {
				return err
			}
			n++
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return err
		}
		if n > 0 {
			b.WriteByte('\n')
			indent(b, depth)
		}
		b.WriteByte(byte(closing))
	case string:
		writeString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case bool:
		if v {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

func indent(b *strings.Builder, depth int) {
	for range depth {
		b.WriteString("  ")
	}
}

// writeString writes s as a JSON string without HTML escaping.
func writeString(b *strings.Builder, s string) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

// Span is a piece of a search snippet; Hit marks a matched term.
type Span struct {
	Text string
	Hit  bool
}

// Hit marks: Hermes' snippets put >>> before and <<< after each match.
const (
	HitOpen  = ">>>"
	HitClose = "<<<"
)

// Marks splits a snippet at Hermes' hit marks (>>>term<<<) into spans,
// the marks removed. An unclosed >>> marks the rest as a hit; a stray <<<
// is kept as text.
func Marks(snippet string) []Span {
	var out []Span
	for snippet != "" {
		i := strings.Index(snippet, HitOpen)
		if i < 0 {
			out = append(out, Span{Text: snippet})
			break
		}
		if i > 0 {
			out = append(out, Span{Text: snippet[:i]})
		}
		snippet = snippet[i+len(HitOpen):]
		j := strings.Index(snippet, HitClose)
		if j < 0 {
			out = append(out, Span{Text: snippet, Hit: true})
			break
		}
		if j > 0 {
			out = append(out, Span{Text: snippet[:j], Hit: true})
		}
		snippet = snippet[j+len(HitClose):]
	}
	return out
}

var (
	// toolCallHead is the JSON around a tool call's name in a snippet of
	// the tool_calls column; toolCallTail the JSON closing a call.
	toolCallHead = regexp.MustCompile(`\[?\{"id": "[^"]*", "type": "function", "function": \{"name": "([^"]*)"(, "arguments": ")?`)
	toolCallTail = regexp.MustCompile(`"\}\}(, |\])?`)
)

// ReadableSnippet is a search snippet on one line; a snippet of the
// tool_calls JSON reads `-> name {"arg": "value"}` instead of escaped JSON
// (the >>> <<< marks stay, for Marks).
func ReadableSnippet(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if strings.HasPrefix(s, `[{"`) {
		if calls := ToolCalls(models.JSON(s)); len(calls) > 0 && calls[0].Name != "(unreadable tool_calls)" {
			parts := make([]string, 0, len(calls))
			for _, c := range calls {
				parts = append(parts, strings.TrimSpace(c.Name+" "+oneLine(c.Arguments)))
			}
			return "-> " + strings.Join(parts, "; ")
		}
	}
	if !strings.Contains(s, `"function": {"name": "`) {
		return s
	}
	// A fragment (FTS5 cut it): drop the JSON frame, unescape the arguments.
	s = toolCallHead.ReplaceAllString(s, "-> $1 ")
	s = toolCallTail.ReplaceAllString(s, " ")
	s = strings.NewReplacer(`\"`, `"`, `\\`, `\`, `\n`, " ").Replace(s)
	return strings.Join(strings.Fields(s), " ")
}

// oneLine is JSON text on one line (compact when it is JSON).
func oneLine(s string) string {
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(s)) == nil {
		return buf.String()
	}
	return strings.Join(strings.Fields(s), " ")
}

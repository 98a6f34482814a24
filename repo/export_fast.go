package repo

import (
	"strings"

	"gorm.io/gorm"

	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/models"
)

// The export hot path: messages are read with database/sql rows.Scan into
// variables reused for every row (no GORM reflection per row) and written
// with a hand-rolled encoder that produces exactly the bytes of
// json.Encoder (SetEscapeHTML(false)) on models.Message, whose MarshalJSON
// output json.Marshal builds with HTML escaping. export_fast_test.go checks
// both against the GORM / encoding/json path.

// msgScanner scans rows of SELECT * FROM messages into one reused
// models.Message. Columns are matched by name (a file may carry columns we
// do not know, or lack ones a read-only older file never had).
type msgScanner struct {
	dest []any

	id, tokenCount, observed, compressed, active, compacted sql.NullInt64
	ts                                                      sql.NullFloat64
	sessionID, role, content, toolCallID, toolName, effect  sql.NullString
	finish, reasoning, reasoningContent, platformID, apiC   sql.NullString
	displayKind                                             sql.NullString
	reasoningDetails, codexReasoning, codexMsg              any // string vs BLOB matters
	toolCalls, displayMeta                                  any // string vs BLOB matters
	displayOrder                                            sql.NullInt64
	displayIdentity                                         []byte
	sink                                                    sql.RawBytes
}

func newMsgScanner(cols []string) *msgScanner {
	s := &msgScanner{}
	byName := map[string]any{
		"id": &s.id, "session_id": &s.sessionID, "role": &s.role, "content": &s.content,
		"tool_call_id": &s.toolCallID, "tool_calls": &s.toolCalls, "tool_name": &s.toolName,
		"effect_disposition": &s.effect, "timestamp": &s.ts, "token_count": &s.tokenCount,
		"finish_reason": &s.finish, "reasoning": &s.reasoning, "reasoning_content": &s.reasoningContent,
		"reasoning_details": &s.reasoningDetails, "codex_reasoning_items": &s.codexReasoning,
		"codex_message_items": &s.codexMsg, "platform_message_id": &s.platformID, "observed": &s.observed,
		"_compressed_summary": &s.compressed, "active": &s.active, "compacted": &s.compacted,
		"api_content": &s.apiC, "display_kind": &s.displayKind, "display_metadata": &s.displayMeta,
		"display_order": &s.displayOrder, "display_identity": &s.displayIdentity,
	}
	s.dest = make([]any, len(cols))
	for i, c := range cols {
		if d, ok := byName[c]; ok {
			s.dest[i] = d
			delete(byName, c) // a duplicated name scans once
		} else {
			s.dest[i] = &s.sink
		}
	}
	return s
}

func optStr(v sql.NullString) *string {
	if !v.Valid {
		return nil
	}
	s := v.String
	return &s
}

// pyJSONCol is what the pyjson serializer makes of a stored value for a
// models.JSON field: NULL and an empty BLOB → nil, valid JSON as is, other
// text (an empty TEXT included) as a JSON string.
func pyJSONCol(v any) (models.JSON, error) {
	var raw []byte
	switch v := v.(type) {
	case nil:
		return nil, nil
	case []byte:
		if len(v) == 0 {
			return nil, nil
		}
		raw = append([]byte(nil), v...)
	case string:
		raw = []byte(v)
	default:
		return nil, fmt.Errorf("pyjson: cannot scan %T into a JSON column", v)
	}
	if json.Valid(raw) {
		return models.JSON(raw), nil
	}
	b, _ := json.Marshal(string(raw))
	return models.JSON(b), nil
}

// textCol is what the pyjson serializer makes of a stored value for a
// models.JSONText field: NULL and an empty BLOB → nil, an empty TEXT → an
// empty non-nil value, anything else its bytes.
func textCol(v any) models.JSONText {
	switch v := v.(type) {
	case string:
		return models.JSONText(v)
	case []byte:
		if len(v) == 0 {
			return nil
		}
		return models.JSONText(append([]byte(nil), v...))
	}
	return nil
}

// scan reads the current row into m (every field is overwritten).
func (s *msgScanner) scan(rows *sql.Rows, m *models.Message) error {
	if err := rows.Scan(s.dest...); err != nil {
		return err
	}
	tc, err := pyJSONCol(s.toolCalls)
	if err != nil {
		return err
	}
	dm, err := pyJSONCol(s.displayMeta)
	if err != nil {
		return err
	}
	*m = models.Message{
		ID: s.id.Int64, SessionID: s.sessionID.String, Role: s.role.String, Content: optStr(s.content),
		ToolCallID: optStr(s.toolCallID), ToolCalls: tc, ToolName: optStr(s.toolName),
		EffectDisposition: optStr(s.effect), Timestamp: models.Epoch(s.ts.Float64),
		FinishReason: optStr(s.finish), Reasoning: optStr(s.reasoning), ReasoningContent: optStr(s.reasoningContent),
		ReasoningDetails: textCol(s.reasoningDetails), CodexReasoningItems: textCol(s.codexReasoning),
		CodexMessageItems: textCol(s.codexMsg), PlatformMessageID: optStr(s.platformID), Observed: s.observed.Int64,
		CompressedSummary: s.compressed.Int64, Active: s.active.Int64, Compacted: s.compacted.Int64,
		APIContent: optStr(s.apiC), DisplayKind: optStr(s.displayKind), DisplayMetadata: dm,
	}
	if s.tokenCount.Valid {
		v := s.tokenCount.Int64
		m.TokenCount = &v
	}
	if s.displayOrder.Valid {
		v := s.displayOrder.Int64
		m.DisplayOrder = &v
	}
	if s.displayIdentity != nil {
		m.DisplayIdentity = s.displayIdentity
		s.displayIdentity = nil // the next row gets its own slice
	}
	return nil
}

// appendMessageJSON appends m as json.Encoder (SetEscapeHTML(false)) would
// write it, without the trailing newline. Values encoding/json refuses
// (NaN or infinite timestamps) go through encoding/json for its error.
func appendMessageJSON(dst []byte, m *models.Message) ([]byte, error) {
	f := float64(m.Timestamp)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		b, err := json.Marshal(m)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
	var err error
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, m.ID, 10)
	dst = append(dst, `,"session_id":`...)
	dst = appendJSONString(dst, m.SessionID)
	dst = append(dst, `,"role":`...)
	dst = appendJSONString(dst, m.Role)
	dst = append(dst, `,"tool_call_id":`...)
	dst = appendOptString(dst, m.ToolCallID)
	dst = append(dst, `,"tool_calls":`...)
	if dst, err = appendJSONValue(dst, m.ToolCalls); err != nil {
		return dst, err
	}
	dst = append(dst, `,"tool_name":`...)
	dst = appendOptString(dst, m.ToolName)
	dst = append(dst, `,"effect_disposition":`...)
	dst = appendOptString(dst, m.EffectDisposition)
	dst = append(dst, `,"timestamp":`...)
	dst = appendJSONFloat(dst, f)
	dst = append(dst, `,"token_count":`...)
	if m.TokenCount == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, *m.TokenCount, 10)
	}
	dst = append(dst, `,"finish_reason":`...)
	dst = appendOptString(dst, m.FinishReason)
	dst = append(dst, `,"reasoning":`...)
	dst = appendOptString(dst, m.Reasoning)
	dst = append(dst, `,"reasoning_content":`...)
	dst = appendOptString(dst, m.ReasoningContent)
	dst = append(dst, `,"reasoning_details":`...)
	dst = appendJSONText(dst, m.ReasoningDetails)
	dst = append(dst, `,"codex_reasoning_items":`...)
	dst = appendJSONText(dst, m.CodexReasoningItems)
	dst = append(dst, `,"codex_message_items":`...)
	dst = appendJSONText(dst, m.CodexMessageItems)
	dst = append(dst, `,"platform_message_id":`...)
	dst = appendOptString(dst, m.PlatformMessageID)
	dst = append(dst, `,"observed":`...)
	dst = strconv.AppendInt(dst, m.Observed, 10)
	dst = append(dst, `,"active":`...)
	dst = strconv.AppendInt(dst, m.Active, 10)
	dst = append(dst, `,"compacted":`...)
	dst = strconv.AppendInt(dst, m.Compacted, 10)
	dst = append(dst, `,"api_content":`...)
	dst = appendOptString(dst, m.APIContent)
	dst = append(dst, `,"display_kind":`...)
	dst = appendOptString(dst, m.DisplayKind)
	dst = append(dst, `,"display_metadata":`...)
	if dst, err = appendJSONValue(dst, m.DisplayMetadata); err != nil {
		return dst, err
	}
	dst = append(dst, `,"content":`...)
	switch {
	case m.Content == nil:
		dst = append(dst, "null"...)
	case !m.IsMultimodal():
		dst = appendJSONString(dst, *m.Content)
	default:
		b, err := json.Marshal(m.DecodedContent())
		if err != nil {
			return dst, err
		}
		dst = append(dst, b...)
	}
	if m.CompressedSummary != 0 {
		dst = append(dst, `,"_compressed_summary":`...)
		dst = strconv.AppendInt(dst, m.CompressedSummary, 10)
	}
	return append(dst, '}'), nil
}

func appendOptString(dst []byte, s *string) []byte {
	if s == nil {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, *s)
}

// appendJSONValue writes a models.JSON the way json.Marshal writes its
// MarshalJSON output: null when empty, a string when not JSON, else the
// value compacted with <, >, &, U+2028 and U+2029 escaped.
func appendJSONValue(dst []byte, j models.JSON) ([]byte, error) {
	if len(j) == 0 {
		return append(dst, "null"...), nil
	}
	if !json.Valid(j) {
		return appendJSONString(dst, string(j)), nil
	}
	var c bytes.Buffer
	if err := json.Compact(&c, j); err != nil {
		return dst, fmt.Errorf("json value: %w", err)
	}
	var h bytes.Buffer
	json.HTMLEscape(&h, c.Bytes())
	return append(dst, h.Bytes()...), nil
}

func appendJSONText(dst []byte, t models.JSONText) []byte {
	if len(t) == 0 {
		return append(dst, "null"...)
	}
	return appendJSONString(dst, string(t))
}

// appendJSONFloat formats a finite float64 as encoding/json does.
func appendJSONFloat(dst []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping on:
// invalid UTF-8 becomes U+FFFD, <, >, & and U+2028/U+2029 are \u-escaped.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// conversationColumns are the messages columns ToConversation reads.
var conversationColumns = []string{"id", "role", "content", "tool_call_id", "tool_calls", "tool_name", "effect_disposition",
	"timestamp", "finish_reason", "reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items",
	"codex_message_items", "platform_message_id", "observed", "_compressed_summary", "api_content", "display_kind",
	"display_metadata"}

// conversationCols is the SELECT list of a replay: the conversationColumns
// the file has (read once per store; columns are only ever added), "*"
// when they cannot be read. Fewer columns per row is less work in the
// driver, which converts every column of every row.
func (d *DB) conversationCols(tx *gorm.DB) string {
	if p := d.convCols.Load(); p != nil {
		return *p
	}
	if d.Dialect != SQLite {
		return "*"
	}
	rows, err := queryRows(tx, "SELECT name FROM pragma_table_info('messages')")
	if err != nil {
		return "*"
	}
	have := map[string]bool{}
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			have[n] = true
		}
	}
	if rows.Err() != nil || rows.Close() != nil || len(have) == 0 {
		return "*"
	}
	var cols []string
	for _, c := range conversationColumns {
		if have[c] {
			cols = append(cols, `"`+c+`"`)
		}
	}
	s := strings.Join(cols, ", ")
	d.convCols.Store(&s)
	return s
}

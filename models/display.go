package models

import (
	"crypto/sha256"
	"strings"

	"github.com/hermesstate/hermesstate/internal/pyrepr"
)

// carrierMarkers are texts of Hermes' context-compaction handoffs (its
// summary prefixes and the delimiters of a summary merged into a user
// message, agent/context_compressor.py). A user row holding one may be a
// handoff carrier, whose display identity Hermes computes from the live
// text it carries (split_user_originated_turn), not from the stored
// content.
var carrierMarkers = []string{"[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "[PRIOR CONTEXT", "COMPACTION SUMMARY BELOW]", "END OF CONTEXT SUMMARY"}

// DisplayIdentity returns what Hermes v30 stores in messages.display_identity
// for the row m as it is stored: the SHA-256 of Python's repr() of the tuple
// (role, content, timestamp, tool_call_id, tool_calls, tool_name), the
// stored texts (content with its multimodal prefix, tool_calls as
// json.dumps wrote it) and the timestamp as a float (hermes_state_messages.py,
// _display_identity(_display_dedupe_key(row)); Hermes hashes the UTF-8 of
// the repr). For append_message(id, "user", "héllo 世界 🚀",
// timestamp=1767000000.0) that is f924c2ed...7b98ff3.
//
// It returns nil (the column stays NULL; Hermes fills it on its next
// display read of the session, and the display triggers order the row by
// its id meanwhile) where the bytes could differ from Hermes' own: a user
// row that may be a compaction handoff carrier (a summary row, or text
// holding one of Hermes' handoff markers), text whose repr() depends on the
// Python version that runs Hermes (pyrepr.Str: characters Unicode 15.0
// added, or unassigned ones), tool_calls that are not valid JSON, or text
// that is not valid UTF-8.
func DisplayIdentity(m *Message) []byte {
	if m.Role == "user" && (m.CompressedSummary != 0 || (m.Content != nil && hasCarrierMarker(*m.Content))) {
		return nil
	}
	text := func(s *string) (string, bool) {
		if s == nil {
			return pyrepr.None, true
		}
		return pyrepr.Str(*s)
	}
	role, ok1 := pyrepr.Str(m.Role)
	content, ok2 := text(m.Content)
	callID, ok3 := text(m.ToolCallID)
	toolName, ok4 := text(m.ToolName)
	calls := pyrepr.None
	ok5 := true
	if v, err := m.ToolCalls.SQLValue("tool_calls"); err != nil {
		ok5 = false
	} else if s, isText := v.(string); isText {
		calls, ok5 = pyrepr.Str(s)
	}
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return nil
	}
	ts := float64(m.Timestamp)
	if ts == 0 {
		ts = 0 // Hermes hashes -0.0 as 0.0 (SQLite reads both back as 0.0)
	}
	key := pyrepr.Tuple(role, content, pyrepr.Float(ts), callID, calls, toolName)
	sum := sha256.Sum256([]byte(key))
	return sum[:]
}

func hasCarrierMarker(s string) bool {
	for _, mk := range carrierMarkers {
		if strings.Contains(s, mk) {
			return true
		}
	}
	return false
}

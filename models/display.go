package models

import (
	"crypto/sha256"
	"strings"
	"unicode"

	"github.com/hermesstate/hermesstate/internal/pyrepr"
)

// carrierMarkers are texts of Hermes' context-compaction handoffs (its
// summary prefixes and the delimiters of a summary merged into a user
// message, agent/context_compressor.py). A user row holding one may be a
// handoff carrier, whose display identity Hermes computes from the live
// text it carries (split_user_originated_turn), not from the stored
// content.
var carrierMarkers = []string{"[CONTEXT COMPACTION", "[CONTEXT SUMMARY]", "[PRIOR CONTEXT", "COMPACTION SUMMARY BELOW]", "END OF CONTEXT SUMMARY"}

// summaryPrefixes begin a standalone compaction summary (Hermes'
// SUMMARY_PREFIX and its historical versions, LEGACY_SUMMARY_PREFIX);
// mergedMarkers are the delimiters of a summary merged into a preserved
// message (_MERGED_PRIOR_CONTEXT_HEADER, _MERGED_SUMMARY_DELIMITER);
// summaryEnd is the start of _SUMMARY_END_MARKER, after which a summary
// merged in front of a live user turn carries that turn.
var (
	summaryPrefixes = []string{"[CONTEXT COMPACTION", "[CONTEXT SUMMARY]:"}
	mergedMarkers   = []string{"[PRIOR CONTEXT", "COMPACTION SUMMARY BELOW]"}
)

const summaryEnd = "--- END OF CONTEXT SUMMARY"

// DisplayIdentity returns what Hermes v30 stores in messages.display_identity
// for the row m as it is stored: the SHA-256 of Python's repr() of the tuple
// (role, content, timestamp, tool_call_id, tool_calls, tool_name), the
// stored texts (content with its multimodal prefix, tool_calls as
// json.dumps wrote it) and the timestamp as a float (hermes_state_messages.py,
// _display_identity(_display_dedupe_key(row)); Hermes hashes the UTF-8 of
// the repr). For append_message(id, "user", "héllo 世界 🚀",
// timestamp=1767000000.0) that is f924c2ed...7b98ff3.
//
// A compaction summary row is hashed like any other row: Hermes hashes the
// stored content of a user row unless split_user_originated_turn finds
// both a handoff and a live user turn in it, and a standalone summary (the
// row archive_and_compact and compression rotation insert: a summary
// prefix, the summary, the end marker and nothing after it) carries no
// live turn; an assistant row is never split.
//
// It returns nil (the column stays NULL; Hermes fills it on its next
// display read of the session, and the display triggers order the row by
// its id meanwhile) where the bytes could differ from Hermes' own: a user
// row whose text may carry a live turn inside a handoff (a summary merged
// into a preserved message, text after a summary's end marker, a handoff
// marker elsewhere in the text or in multimodal parts: Hermes hashes the
// live part, cut by rules of agent/context_compressor.py that hermesstate
// does not repeat), text whose repr() depends on the
// Python version that runs Hermes (pyrepr.Str: characters Unicode 15.0
// added, or unassigned ones), tool_calls that are not valid JSON, or text
// that is not valid UTF-8.
func DisplayIdentity(m *Message) []byte {
	if m.Role == "user" && m.Content != nil && mayCarryLiveTurn(*m.Content) {
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

// mayCarryLiveTurn reports whether the stored text s of a user row may be
// a handoff carrying a live user turn, whose identity Hermes computes from
// the live part: any text holding a handoff marker except a standalone
// summary with nothing after its end marker.
func mayCarryLiveTurn(s string) bool {
	if !hasAny(s, carrierMarkers) {
		return false
	}
	if strings.HasPrefix(s, MultimodalPrefix) || hasAny(s, mergedMarkers) {
		return true
	}
	t := strings.TrimLeftFunc(s, unicode.IsSpace)
	standalone := false
	for _, p := range summaryPrefixes {
		standalone = standalone || strings.HasPrefix(t, p)
	}
	if !standalone {
		return true
	}
	i := strings.Index(t, summaryEnd)
	if i < 0 {
		return false
	}
	rest := t[i:]
	nl := strings.IndexByte(rest, '\n')
	return nl >= 0 && strings.TrimSpace(rest[nl:]) != ""
}

func hasAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

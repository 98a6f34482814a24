package migrations

// Hermes' numbered data steps 16, 20 and 25, for files adopted below those
// versions. Each step runs inside the migration transaction after the v30
// baseline (every v30 table and column exists), touches only the rows the
// step is about, and is idempotent: a second run finds nothing to do.

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Lineage markers kept in sessions.model_config.
const (
	delegateMarker = "_delegate_from"
	branchMarker   = "_branched_from"
	resetMarker    = "_reset_from"
	// orphanedDelegate is the _delegate_from value Hermes step 16 gives to
	// parentless rows that look like delegate runs whose parent is gone.
	orphanedDelegate = "__orphaned__"
	// orphanMaxMessages is the largest message_count such a row may have.
	orphanMaxMessages = 25
)

// resetEndReasons are the parent end reasons that make a same-key child a
// reset continuation for rows written before the _reset_from marker existed.
var resetEndReasons = []string{
	"session_reset", "session_switch", "idle", "daily", "suspended", "resume_pending_expired",
}

// jsonMarkerSQL reads $.<marker> from a model_config column without ever
// raising: text SQLite does not accept as JSON is read as an empty object.
func jsonMarkerSQL(column, marker string) string {
	return fmt.Sprintf("json_extract(CASE WHEN json_valid(%[1]s) THEN %[1]s ELSE '{}' END, '$.%[2]s')", column, marker)
}

func sqlStringList(values []string) string {
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return strings.Join(quoted, ", ")
}

// delegateCandidatesSQL selects untagged children that are neither branches,
// compression continuations nor resets: what Hermes calls ephemeral
// (subagent) children. Neither source nor the child's end reason matter.
var delegateCandidatesSQL = `SELECT c.id AS id, c.parent_session_id AS parent, c.model_config AS model_config
FROM sessions AS c
WHERE c.parent_session_id IS NOT NULL
  AND ` + jsonMarkerSQL("c.model_config", delegateMarker) + ` IS NULL
  AND ` + jsonMarkerSQL("c.model_config", branchMarker) + ` IS NULL
  AND ` + jsonMarkerSQL("c.model_config", resetMarker) + ` IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM sessions AS p
    WHERE p.id = c.parent_session_id
      AND (p.end_reason = 'compression'
        OR (p.end_reason = 'branched' AND c.started_at >= p.ended_at)
        OR (p.end_reason IN (` + sqlStringList(resetEndReasons) + `)
            AND c.session_key IS NOT NULL AND c.session_key <> ''
            AND c.session_key = p.session_key)))
ORDER BY c.rowid`

// orphanCandidatesSQL selects parentless, untitled, short sessions with a
// tool result and no children that carry no delegate or branch marker.
var orphanCandidatesSQL = `SELECT s.id AS id, s.model_config AS model_config
FROM sessions AS s
WHERE s.parent_session_id IS NULL
  AND ` + jsonMarkerSQL("s.model_config", delegateMarker) + ` IS NULL
  AND ` + jsonMarkerSQL("s.model_config", branchMarker) + ` IS NULL
  AND s.title IS NULL
  AND s.message_count <= ` + fmt.Sprint(orphanMaxMessages) + `
  AND EXISTS (SELECT 1 FROM messages AS m WHERE m.session_id = s.id AND m.role = 'tool')
  AND NOT EXISTS (SELECT 1 FROM sessions AS ch WHERE ch.parent_session_id = s.id)
ORDER BY s.rowid`

type markerCandidate struct {
	ID          string         `gorm:"column:id"`
	Parent      sql.NullString `gorm:"column:parent"`
	ModelConfig sql.NullString `gorm:"column:model_config"`
}

// stepV16DelegateTags is Hermes data step 16. Ephemeral children get
// $._delegate_from = their parent id; parentless sessions that look like
// delegate runs whose parent was deleted get $._delegate_from = "__orphaned__".
//
// model_config is rewritten in Python's json.dumps form with the marker as
// the last key (NULL becomes a one-key object). A row whose model_config is
// not a JSON object (malformed text, or another JSON type) is left as it is:
// Hermes' json_set cannot add a key to it either.
func stepV16DelegateTags(tx *gorm.DB) error {
	var children []markerCandidate
	if err := tx.Raw(delegateCandidatesSQL).Scan(&children).Error; err != nil {
		return fmt.Errorf("v16 delegate candidates: %w", err)
	}
	for _, c := range children {
		if !c.Parent.Valid {
			continue
		}
		if err := setDelegateMarker(tx, c, c.Parent.String); err != nil {
			return err
		}
	}
	var orphans []markerCandidate
	if err := tx.Raw(orphanCandidatesSQL).Scan(&orphans).Error; err != nil {
		return fmt.Errorf("v16 orphan candidates: %w", err)
	}
	for _, c := range orphans {
		if err := setDelegateMarker(tx, c, orphanedDelegate); err != nil {
			return err
		}
	}
	return nil
}

func setDelegateMarker(tx *gorm.DB, c markerCandidate, value string) error {
	var text string
	if !c.ModelConfig.Valid {
		text = "{" + pyQuote(delegateMarker) + ": " + pyQuote(value) + "}"
	} else {
		edited, ok := pySetKey(c.ModelConfig.String, delegateMarker, value)
		if !ok || edited == c.ModelConfig.String {
			return nil
		}
		text = edited
	}
	if err := tx.Exec("UPDATE sessions SET model_config = ? WHERE id = ?", text, c.ID).Error; err != nil {
		return fmt.Errorf("v16 tag session %q: %w", c.ID, err)
	}
	return nil
}

// usageSeedSQL copies each session's aggregate totals into one
// session_model_usage row keyed by the session's stored model and route.
// OR IGNORE keeps a row that already exists under that key.
const usageSeedSQL = `INSERT OR IGNORE INTO session_model_usage (
    session_id, model, billing_provider, billing_base_url, billing_mode, task,
    api_call_count, input_tokens, output_tokens, cache_read_tokens,
    cache_write_tokens, reasoning_tokens, estimated_cost_usd, actual_cost_usd,
    cost_status, cost_source, first_seen, last_seen)
SELECT s.id, COALESCE(s.model, 'unknown'),
    COALESCE(s.billing_provider, ''), COALESCE(s.billing_base_url, ''), COALESCE(s.billing_mode, ''), '',
    COALESCE(s.api_call_count, 0), COALESCE(s.input_tokens, 0), COALESCE(s.output_tokens, 0),
    COALESCE(s.cache_read_tokens, 0), COALESCE(s.cache_write_tokens, 0), COALESCE(s.reasoning_tokens, 0),
    COALESCE(s.estimated_cost_usd, 0), COALESCE(s.actual_cost_usd, 0),
    s.cost_status, s.cost_source, s.started_at, COALESCE(s.ended_at, s.started_at)
FROM sessions AS s
WHERE COALESCE(s.input_tokens, 0) + COALESCE(s.output_tokens, 0) + COALESCE(s.cache_read_tokens, 0)
    + COALESCE(s.cache_write_tokens, 0) + COALESCE(s.reasoning_tokens, 0) > 0
ORDER BY s.rowid`

// stepV20UsageSeed is Hermes data step 20: every session whose five token
// counters sum above zero gets one main-loop usage row (empty task) seeded
// from its totals. The key is COALESCE(model, 'unknown') and the stored
// billing route with NULL parts as empty strings; first_seen = started_at, last_seen =
// COALESCE(ended_at, started_at). Existing rows under the same key win.
func stepV20UsageSeed(tx *gorm.DB) error {
	if err := tx.Exec(usageSeedSQL).Error; err != nil {
		return fmt.Errorf("v20 usage seed: %w", err)
	}
	return nil
}

const promptBatchSize = 200

type inlinePrompt struct {
	RowID  int64  `gorm:"column:rid"`
	ID     string `gorm:"column:id"`
	Prompt string `gorm:"column:system_prompt"`
}

// stepV25SystemPrompts is Hermes data step 25: every inline
// sessions.system_prompt moves into system_prompts under the lowercase hex
// SHA-256 of its UTF-8 bytes (an existing row with that hash is kept), the
// session's system_prompt_hash is set to it and the inline copy is NULLed.
// Only TEXT values are moved; any other storage class stays inline, where
// readers still find it through the legacy fallback.
func stepV25SystemPrompts(tx *gorm.DB) error {
	var after int64 = -1 << 63
	for {
		var batch []inlinePrompt
		err := tx.Raw(`SELECT rowid AS rid, id, system_prompt FROM sessions
WHERE system_prompt IS NOT NULL AND typeof(system_prompt) = 'text' AND rowid > ?
ORDER BY rowid LIMIT ?`, after, promptBatchSize).Scan(&batch).Error
		if err != nil {
			return fmt.Errorf("v25 inline prompts: %w", err)
		}
		if len(batch) == 0 {
			return nil
		}
		for _, row := range batch {
			sum := sha256.Sum256([]byte(row.Prompt))
			hash := hex.EncodeToString(sum[:])
			if err := tx.Exec("INSERT OR IGNORE INTO system_prompts (hash, prompt) VALUES (?, ?)", hash, row.Prompt).Error; err != nil {
				return fmt.Errorf("v25 store prompt of session %q: %w", row.ID, err)
			}
			if err := tx.Exec("UPDATE sessions SET system_prompt_hash = ?, system_prompt = NULL WHERE rowid = ?", hash, row.RowID).Error; err != nil {
				return fmt.Errorf("v25 update session %q: %w", row.ID, err)
			}
			after = row.RowID
		}
	}
}

// pyJSONMaxDepth bounds nesting; deeper text is treated as not editable.
const pyJSONMaxDepth = 1000

// pySetKey sets key to the string value in text, a JSON object, and returns
// it in the form Python's json.dumps writes by default: ", " and ": "
// separators, no other whitespace, every character outside printable ASCII
// escaped as lowercase \uXXXX (surrogate pairs above U+FFFF), and the short
// escapes \" \\ \b \f \n \r \t. Members keep their order; an existing key
// has its value replaced in place, otherwise the key is appended last.
// Number literals are kept as written. ok is false, and text must then be
// left alone, when text is not exactly one well-formed JSON object
// (including invalid UTF-8 and nesting deeper than pyJSONMaxDepth).
func pySetKey(text, key, value string) (out string, ok bool) {
	p := pyJSONRewriter{src: text}
	p.skipSpace()
	if p.pos >= len(p.src) || p.src[p.pos] != '{' {
		return "", false
	}
	p.pos++
	wantKey := pyQuote(key)
	newValue := pyQuote(value)
	found := false
	p.out = append(p.out, '{')
	p.skipSpace()
	if p.peek() == '}' {
		p.pos++
	} else {
		for {
			p.skipSpace()
			start := len(p.out)
			if p.peek() != '"' || !p.string() {
				return "", false
			}
			isKey := string(p.out[start:]) == wantKey
			p.skipSpace()
			if p.peek() != ':' {
				return "", false
			}
			p.pos++
			p.out = append(p.out, ": "...)
			p.skipSpace()
			mark := len(p.out)
			if !p.value(1) {
				return "", false
			}
			if isKey {
				p.out = append(p.out[:mark], newValue...)
				found = true
			}
			p.skipSpace()
			switch p.peek() {
			case ',':
				p.pos++
				p.out = append(p.out, ", "...)
				continue
			case '}':
				p.pos++
			default:
				return "", false
			}
			break
		}
	}
	if !found {
		if len(p.out) > 1 {
			p.out = append(p.out, ", "...)
		}
		p.out = append(p.out, wantKey...)
		p.out = append(p.out, ": "...)
		p.out = append(p.out, newValue...)
	}
	p.out = append(p.out, '}')
	p.skipSpace()
	if p.pos != len(p.src) {
		return "", false
	}
	return string(p.out), true
}

// pyQuote returns s as a JSON string literal in Python's ensure_ascii form.
func pyQuote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			b = pyAppendUnit(b, hi)
			b = pyAppendUnit(b, lo)
			continue
		}
		b = pyAppendUnit(b, r)
	}
	return string(append(b, '"'))
}

// pyAppendUnit appends one UTF-16 code unit (or ASCII byte) as Python's
// ensure_ascii encoder writes it inside a string literal.
func pyAppendUnit(b []byte, u rune) []byte {
	switch u {
	case '"':
		return append(b, '\\', '"')
	case '\\':
		return append(b, '\\', '\\')
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	if u >= 0x20 && u <= 0x7e {
		return append(b, byte(u))
	}
	const hexDigits = "0123456789abcdef"
	return append(b, '\\', 'u', hexDigits[u>>12&0xF], hexDigits[u>>8&0xF], hexDigits[u>>4&0xF], hexDigits[u&0xF])
}

// pyJSONRewriter validates strict RFC 8259 JSON and re-emits it in Python's
// default json.dumps form.
type pyJSONRewriter struct {
	src string
	pos int
	out []byte
}

func (p *pyJSONRewriter) peek() byte {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *pyJSONRewriter) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *pyJSONRewriter) value(depth int) bool {
	if depth > pyJSONMaxDepth {
		return false
	}
	switch c := p.peek(); {
	case c == '{':
		return p.container('}', depth, true)
	case c == '[':
		return p.container(']', depth, false)
	case c == '"':
		return p.string()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return false
	}
}

func (p *pyJSONRewriter) container(closer byte, depth int, object bool) bool {
	p.out = append(p.out, p.src[p.pos])
	p.pos++
	p.skipSpace()
	if p.peek() == closer {
		p.pos++
		p.out = append(p.out, closer)
		return true
	}
	for {
		p.skipSpace()
		if object {
			if p.peek() != '"' || !p.string() {
				return false
			}
			p.skipSpace()
			if p.peek() != ':' {
				return false
			}
			p.pos++
			p.out = append(p.out, ": "...)
			p.skipSpace()
		}
		if !p.value(depth + 1) {
			return false
		}
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.pos++
			p.out = append(p.out, ", "...)
		case closer:
			p.pos++
			p.out = append(p.out, closer)
			return true
		default:
			return false
		}
	}
}

func (p *pyJSONRewriter) literal(word string) bool {
	if !strings.HasPrefix(p.src[p.pos:], word) {
		return false
	}
	p.pos += len(word)
	p.out = append(p.out, word...)
	return true
}

func (p *pyJSONRewriter) digits() int {
	n := 0
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
		n++
	}
	return n
}

func (p *pyJSONRewriter) number() bool {
	start := p.pos
	if p.peek() == '-' {
		p.pos++
	}
	switch c := p.peek(); {
	case c == '0':
		p.pos++
	case c >= '1' && c <= '9':
		p.digits()
	default:
		return false
	}
	if p.peek() == '.' {
		p.pos++
		if p.digits() == 0 {
			return false
		}
	}
	if c := p.peek(); c == 'e' || c == 'E' {
		p.pos++
		if c := p.peek(); c == '+' || c == '-' {
			p.pos++
		}
		if p.digits() == 0 {
			return false
		}
	}
	p.out = append(p.out, p.src[start:p.pos]...)
	return true
}

func (p *pyJSONRewriter) hex4() (rune, bool) {
	if p.pos+4 > len(p.src) {
		return 0, false
	}
	var u rune
	for _, c := range []byte(p.src[p.pos : p.pos+4]) {
		switch {
		case c >= '0' && c <= '9':
			u = u<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			u = u<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			u = u<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return u, true
}

// string re-emits the string literal at p.pos. Escaped code units are
// copied one by one (a lone surrogate survives, as in Python).
func (p *pyJSONRewriter) string() bool {
	p.pos++
	p.out = append(p.out, '"')
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '"':
			p.pos++
			p.out = append(p.out, '"')
			return true
		case c == '\\':
			p.pos++
			if p.pos >= len(p.src) {
				return false
			}
			e := p.src[p.pos]
			p.pos++
			var u rune
			switch e {
			case '"', '\\', '/':
				u = rune(e)
			case 'b':
				u = '\b'
			case 'f':
				u = '\f'
			case 'n':
				u = '\n'
			case 'r':
				u = '\r'
			case 't':
				u = '\t'
			case 'u':
				var ok bool
				if u, ok = p.hex4(); !ok {
					return false
				}
			default:
				return false
			}
			p.out = pyAppendUnit(p.out, u)
		case c < 0x20:
			return false
		case c < utf8.RuneSelf:
			p.pos++
			p.out = pyAppendUnit(p.out, rune(c))
		default:
			r, size := utf8.DecodeRuneInString(p.src[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return false
			}
			p.pos += size
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				p.out = pyAppendUnit(p.out, hi)
				p.out = pyAppendUnit(p.out, lo)
			} else {
				p.out = pyAppendUnit(p.out, r)
			}
		}
	}
	return false
}

package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// In-place compaction and resume (Hermes' archive_and_compact,
// get_active_message_watermark, get_resume_conversations,
// get_resume_message_count, resolve_resume_session_id,
// get_conversation_root, is_explicit_fork_child, and the include_ancestors
// replay).

// CompactOptions tunes Compaction.ArchiveAndCompact.
type CompactOptions struct {
	// Watermark, when set, is the session's Watermark taken when the
	// compression started: live rows above it arrived during the summary
	// and are kept live, cloned (fresh ids, every other column as stored)
	// after the compacted rows, their originals becoming rewind rows. Nil
	// archives every live row.
	Watermark *int64
	// TailCount says the last N compacted messages carry the newest N live
	// rows (at or below the watermark) verbatim: those originals become
	// rewind rows (active = 0, compacted = 0) instead of compaction-archived
	// rows, so search does not find each carried message twice.
	TailCount int
	// ModelConfigPatch is merged into model_config in the same
	// transaction; a nil value removes the key, new keys are added in
	// sorted order.
	ModelConfigPatch map[string]any
	// LockHolder, when set, must hold the session's unexpired compression
	// lock, else nothing is written (ErrConflict).
	LockHolder string
}

// Compaction compacts a session in place and assembles what a resume
// loads.
type Compaction interface {
	// Watermark returns the greatest live message id of the session (0
	// when none): captured when a compression starts.
	Watermark(ctx context.Context, sessionID string) (int64, error)
	// ArchiveAndCompact atomically archives the live rows (active = 0,
	// compacted = 1: summarized away, still searchable) and inserts msgs as
	// the new live rows, keeping rows that arrived after opt.Watermark live
	// after them; message_count and tool_call_count become the live totals,
	// which it returns. ErrNotFound when the session does not exist,
	// ErrConflict when opt.LockHolder no longer holds the lock, ErrInvalid
	// for a bad message or option.
	ArchiveAndCompact(ctx context.Context, sessionID string, msgs []MessageInput, opt CompactOptions) (int, error)
	// ResumeConversations returns what a resume shows, from one read: the
	// model history (the session's live rows, with row ids and summary
	// markers) and the display history (the whole lineage, live and
	// compaction-archived rows, each logical message once, with row ids).
	// ErrNotFound when the session does not exist.
	ResumeConversations(ctx context.Context, sessionID string) (model, display []ConversationItem, err error)
	// ResumeMessageCount counts the rows a resume loads: the session's live
	// rows (tipOnly), else the display rows of its whole lineage.
	ResumeMessageCount(ctx context.Context, sessionID string, tipOnly bool) (int64, error)
	// ResolveResumeID returns the session a resume of id continues: the
	// compression tip, then the deepest descendant holding messages
	// (branch, delegate, reset and tool children are not followed); id
	// itself when nothing has messages.
	ResolveResumeID(ctx context.Context, sessionID string) (string, error)
	// ConversationRoot returns the root of the session's parent chain (the
	// stable conversation id across compressions and delegate runs); id
	// itself when it has no recorded parent.
	ConversationRoot(ctx context.Context, sessionID string) (string, error)
	// IsExplicitForkChild reports whether the session is a branch,
	// delegate or tool child of its parent (false for a missing session).
	IsExplicitForkChild(ctx context.Context, sessionID string) (bool, error)
}

type compactionRepo struct{ db *DB }

// NewCompaction returns the GORM implementation of Compaction.
func NewCompaction(db *DB) Compaction { return &compactionRepo{db} }

func (r *compactionRepo) Watermark(ctx context.Context, sid string) (int64, error) {
	const op = "compaction.watermark"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (int64, error) {
		var n int64
		err := tx.Raw("SELECT COALESCE(MAX(id), 0) FROM messages WHERE session_id = ? AND active = 1", sid).Scan(&n).Error
		return n, err
	})
}

// cloneColumns are the message columns a compaction clone copies (every
// column but id, active, compacted and display_order).
const cloneColumns = `session_id, role, content, tool_call_id, tool_calls, tool_name, effect_disposition, timestamp,
	token_count, finish_reason, reasoning, reasoning_content, reasoning_details, codex_reasoning_items,
	codex_message_items, platform_message_id, observed, _compressed_summary, api_content, display_kind,
	display_metadata, display_identity`

// toolCallsLen counts a stored tool_calls value as Hermes' _tool_calls_len
// with scalar 0: a list's length, 0 for anything else.
func toolCallsLen(j models.JSON) int64 {
	var list []json.RawMessage
	if j.IsNull() || json.Unmarshal(j, &list) != nil {
		return 0
	}
	return int64(len(list))
}

// mergeModelConfig returns the session's model_config with patch applied
// (nil removes a key), in Python's json.dumps form; nil when empty. Stored
// keys keep their order; new keys follow in keyOrder, then the rest of
// patch's keys sorted (a Go map has no order).
func mergeModelConfig(current models.JSONText, patch map[string]any, keyOrder ...string) (any, error) {
	cfg := map[string]any{}
	var order []string
	if !current.IsNull() {
		dec := json.NewDecoder(strings.NewReader(string(current)))
		dec.UseNumber()
		var m map[string]any
		if dec.Decode(&m) == nil && m != nil {
			cfg = m
			order = objectKeys(current)
		}
	}
	keys := append([]string{}, keyOrder...)
	var rest []string
	for k := range patch {
		if !slices.Contains(keyOrder, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range append(keys, rest...) {
		v, ok := patch[k]
		if !ok {
			continue
		}
		if v == nil {
			delete(cfg, k)
			continue
		}
		if _, ok := cfg[k]; !ok {
			order = append(order, k)
		}
		cfg[k] = v
	}
	if len(cfg) == 0 {
		return nil, nil
	}
	// Keys keep their order; a new key goes last (a Python dict).
	var b strings.Builder
	b.WriteByte('{')
	n := 0
	for _, k := range order {
		v, ok := cfg[k]
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	out, err := pyjson.Canonical([]byte(b.String()))
	if err != nil {
		return nil, err
	}
	return string(out), nil
}

// objectKeys returns the keys of a JSON object in document order (first
// occurrence).
func objectKeys(obj []byte) []string {
	dec := json.NewDecoder(strings.NewReader(string(obj)))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	seen := map[string]bool{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := kt.(string)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys
}

func (r *compactionRepo) ArchiveAndCompact(ctx context.Context, sid string, msgs []MessageInput, opt CompactOptions) (int, error) {
	const op = "compaction.archive_and_compact"
	if err := checkCompactArgs(op, sid, opt); err != nil {
		return 0, err
	}
	rows, tools, err := freshRows(op, sid, msgs)
	if err != nil {
		return 0, err
	}
	var live int
	err = r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		if err := checkCompressionLease(op, tx, sid, opt.LockHolder); err != nil {
			return err
		}
		s, err := getSession(tx, sid)
		if err != nil {
			return err
		}
		var merged any
		if opt.ModelConfigPatch != nil {
			if merged, err = mergeModelConfig(s.ModelConfig, opt.ModelConfigPatch); err != nil {
				return errs.Wrap(errs.ErrInvalid, op, err, "model_config patch cannot be encoded as JSON")
			}
		}
		tailIDs, tailTools, err := archiveForCompaction(tx, sid, opt)
		if err != nil {
			return err
		}
		for _, row := range rows {
			row.ID = 0
		}
		if err := insertFresh(tx, rows); err != nil {
			return err
		}
		live = len(rows)
		total := tools
		if len(tailIDs) > 0 {
			in, args := int64List(tailIDs)
			if err := tx.Exec(fmt.Sprintf("INSERT INTO messages (%[1]s, active, compacted) SELECT %[1]s, 1, 0 FROM messages WHERE id IN (%[2]s) ORDER BY id",
				cloneColumns, in), args...).Error; err != nil {
				return err
			}
			live += len(tailIDs)
			total += tailTools
		}
		up := map[string]any{"message_count": live, "tool_call_count": total}
		if opt.ModelConfigPatch != nil {
			up["model_config"] = merged
		}
		return tx.Model(&models.Session{}).Where("id = ?", sid).Updates(up).Error
	})
	return live, err
}

// checkCompactArgs refuses what ArchiveAndCompact cannot do before any
// transaction starts (ErrInvalid).
func checkCompactArgs(op, sid string, opt CompactOptions) error {
	if err := checkID(op, sid); err != nil {
		return err
	}
	if opt.TailCount < 0 || (opt.Watermark != nil && *opt.Watermark < 0) {
		return errs.Errorf(errs.ErrInvalid, op, "tail_count and watermark must not be negative")
	}
	if err := checkText(op, "lock_holder", opt.LockHolder); err != nil {
		return err
	}
	if opt.ModelConfigPatch != nil {
		if _, err := json.Marshal(opt.ModelConfigPatch); err != nil {
			return errs.Wrap(errs.ErrInvalid, op, err, "model_config patch cannot be encoded as JSON")
		}
	}
	return nil
}

// checkCompressionLease refuses (ErrConflict) when holder no longer holds
// an unexpired compression lock of the session; an empty holder asks for
// no check.
func checkCompressionLease(op string, tx *gorm.DB, sid, holder string) error {
	if holder == "" {
		return nil
	}
	var locks []struct {
		Holder    string
		ExpiresAt float64
	}
	if err := tx.Raw("SELECT holder, expires_at FROM compression_locks WHERE session_id = ?", sid).Scan(&locks).Error; err != nil {
		return err
	}
	if len(locks) == 0 || locks[0].Holder != holder || locks[0].ExpiresAt <= float64(models.Now()) {
		return errs.Errorf(errs.ErrConflict, op, "the compression lease of session %q was lost before commit; nothing was written", sid)
	}
	return nil
}

// archiveForCompaction takes the session's live rows out of the live
// transcript: rows up to the watermark become compacted (archived, shown
// in the display history), except the last TailCount of them, which are
// rewound (inactive, not compacted) like the concurrent tail (live rows
// after the watermark). It returns the tail's ids (to be re-inserted live
// after the new rows) and their tool-call count.
func archiveForCompaction(tx *gorm.DB, sid string, opt CompactOptions) ([]int64, int64, error) {
	var tail []models.Message
	if opt.Watermark != nil {
		if err := tx.Select("id, tool_calls").Where("session_id = ? AND active = 1 AND id > ?", sid, *opt.Watermark).
			Order("id").Find(&tail).Error; err != nil {
			return nil, 0, err
		}
	}
	var rewind []int64
	if opt.TailCount > 0 {
		q := tx.Model(&models.Message{}).Where("session_id = ? AND active = 1", sid)
		if opt.Watermark != nil {
			q = q.Where("id <= ?", *opt.Watermark)
		}
		if err := q.Order("id DESC").Limit(opt.TailCount).Pluck("id", &rewind).Error; err != nil {
			return nil, 0, err
		}
	}
	var tailTools int64
	tailIDs := make([]int64, 0, len(tail))
	for i := range tail {
		tailIDs = append(tailIDs, tail[i].ID)
		tailTools += toolCallsLen(tail[i].ToolCalls)
	}
	rewind = append(rewind, tailIDs...)
	if len(rewind) == 0 {
		return tailIDs, tailTools, tx.Exec("UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1", sid).Error
	}
	in, args := int64List(rewind)
	if err := tx.Exec("UPDATE messages SET active = 0, compacted = 0 WHERE session_id = ? AND id IN ("+in+")",
		append([]any{sid}, args...)...).Error; err != nil {
		return nil, 0, err
	}
	return tailIDs, tailTools, tx.Exec("UPDATE messages SET active = 0, compacted = 1 WHERE session_id = ? AND active = 1 AND id NOT IN ("+in+")",
		append([]any{sid}, args...)...).Error
}

// int64List returns the placeholders and arguments of an id list.
func int64List(ids []int64) (string, []any) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return placeholders(len(ids)), args
}

// resumeLineage returns the sessions a resume materialises, root first:
// the session alone when it is an explicit /branch copy, else its parent
// chain (every parent edge, at most 100 sessions, cycles cut).
func resumeLineage(tx *gorm.DB, sid string) ([]string, error) {
	s, err := getSession(tx, sid)
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	if s != nil {
		if v, ok := models.JSONGetString(s.ModelConfig, "_branched_from"); ok && v != "" {
			return []string{sid}, nil
		}
	}
	return parentChain(tx, sid)
}

// parentOf returns the parent_session_id of a session (false when the
// session is missing or has none).
func parentOf(tx *gorm.DB, sid string) (string, bool, error) {
	var rows []struct{ ParentSessionID *string }
	if err := tx.Model(&models.Session{}).Select("parent_session_id").Where("id = ?", sid).Limit(1).Find(&rows).Error; err != nil {
		return "", false, err
	}
	if len(rows) == 0 || rows[0].ParentSessionID == nil {
		return "", false, nil
	}
	return *rows[0].ParentSessionID, true, nil
}

// lineageRows reads the rows of the sessions in ids in id order, with the
// visibility clause of the replay options.
func lineageRows(tx *gorm.DB, ids []string, inactive, compacted bool) ([]models.Message, error) {
	var rows []models.Message
	q := tx.Where("session_id IN ?", ids)
	switch {
	case inactive:
	case compacted:
		q = q.Where("active = 1 OR compacted = 1")
	default:
		q = q.Where("active = 1")
	}
	if err := q.Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	if compacted {
		rows = dedupeDisplay(rows)
	}
	return rows, nil
}

// conversationWith is Messages.Conversation with the lineage and
// visibility options.
func conversationWith(ctx context.Context, db *DB, op, sid string, opt ConversationOptions) ([]ConversationItem, error) {
	rows, err := Read(ctx, db, op, func(tx *gorm.DB) ([]models.Message, error) {
		ok, err := sessionExists(tx, sid)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, noSession(op, sid)
		}
		ids := []string{sid}
		if opt.IncludeAncestors {
			if ids, err = resumeLineage(tx, sid); err != nil {
				return nil, err
			}
		}
		return lineageRows(tx, ids, opt.IncludeInactive, opt.IncludeCompacted)
	})
	if err != nil {
		return nil, err
	}
	return ToConversation(rows, opt), nil
}

func (r *compactionRepo) ResumeConversations(ctx context.Context, sid string) ([]ConversationItem, []ConversationItem, error) {
	const op = "compaction.resume_conversations"
	if err := checkID(op, sid); err != nil {
		return nil, nil, err
	}
	rows, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.Message, error) {
		ok, err := sessionExists(tx, sid)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, noSession(op, sid)
		}
		ids, err := resumeLineage(tx, sid)
		if err != nil {
			return nil, err
		}
		var rows []models.Message
		err = tx.Where("session_id IN ? AND (active = 1 OR compacted = 1)", ids).Order("id").Find(&rows).Error
		return rows, err
	})
	if err != nil {
		return nil, nil, err
	}
	var tip []models.Message
	for i := range rows {
		if rows[i].SessionID == sid && rows[i].Active == 1 {
			tip = append(tip, rows[i])
		}
	}
	model := ToConversation(tip, ConversationOptions{IncludeRowIDs: true, IncludeSummaryMarkers: true})
	display := ToConversation(dedupeDisplay(rows), ConversationOptions{IncludeAncestors: true, IncludeRowIDs: true})
	return model, display, nil
}

func (r *compactionRepo) ResumeMessageCount(ctx context.Context, sid string, tipOnly bool) (int64, error) {
	const op = "compaction.resume_message_count"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (int64, error) {
		var n int64
		if tipOnly {
			err := tx.Model(&models.Message{}).Where("session_id = ? AND active = 1", sid).Count(&n).Error
			return n, err
		}
		ids, err := resumeLineage(tx, sid)
		if err != nil {
			return 0, err
		}
		err = tx.Model(&models.Message{}).Where("session_id IN ? AND (active = 1 OR compacted = 1)", ids).Count(&n).Error
		return n, err
	})
}

// resolveResume follows id to the session a resume continues (Hermes'
// resolve_resume_session_id).
func resolveResume(tx *gorm.DB, d *DB, sid string) (string, error) {
	if d.AsIs > 0 && d.AsIs < 16 {
		return resolveResumeEarly(tx, sid)
	}
	tip, err := compressionTip(tx, d, sid)
	if err != nil {
		return "", err
	}
	child := fmt.Sprintf(`SELECT c.id FROM sessions c WHERE c.parent_session_id = ?
		AND %s IS NULL AND %s IS NULL AND %s IS NULL
		AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = c.parent_session_id AND p.end_reason IN (%s)
			AND c.session_key IS NOT NULL AND c.session_key <> '' AND c.session_key = p.session_key)
		AND COALESCE(c.source, '') <> 'tool'
		ORDER BY c.started_at DESC, c.id DESC LIMIT 1`,
		d.jsonMarker("c.model_config", "_branched_from"), d.jsonMarker("c.model_config", "_delegate_from"),
		d.jsonMarker("c.model_config", "_reset_from"), resetReasonsSQL)
	cur, best := tip, ""
	seen := map[string]bool{cur: true}
	for i := 0; i < 32; i++ {
		var n int64
		if err := tx.Model(&models.Message{}).Where("session_id = ?", cur).Limit(1).Count(&n).Error; err != nil {
			return "", err
		}
		if n > 0 {
			best = cur
		}
		var next []string
		if err := tx.Raw(child, cur).Scan(&next).Error; err != nil {
			return "", err
		}
		if len(next) == 0 || next[0] == "" || seen[next[0]] {
			break
		}
		cur = next[0]
		seen[cur] = true
	}
	if best == "" {
		return tip, nil
	}
	return best, nil
}

// resolveResumeEarly is resolve_resume_session_id of Hermes v9-v14 (a file
// of those versions read as it is): a session holding messages is resumed
// itself; otherwise the chain of children (each time the one started
// last) is walked, at most 32 deep, to the first that holds messages, and
// the session itself when none does. v16 resumes the compression tip.
func resolveResumeEarly(tx *gorm.DB, sid string) (string, error) {
	cur := sid
	seen := map[string]bool{cur: true}
	for i := 0; i < 32; i++ {
		var n int64
		if err := tx.Model(&models.Message{}).Where("session_id = ?", cur).Limit(1).Count(&n).Error; err != nil {
			return "", err
		}
		if n > 0 {
			return cur, nil
		}
		var next []string
		if err := tx.Raw("SELECT id FROM sessions WHERE parent_session_id = ? ORDER BY started_at DESC LIMIT 1", cur).Scan(&next).Error; err != nil {
			return "", err
		}
		if len(next) == 0 || next[0] == "" || seen[next[0]] {
			break
		}
		cur = next[0]
		seen[cur] = true
	}
	return sid, nil
}

func (r *compactionRepo) ResolveResumeID(ctx context.Context, sid string) (string, error) {
	const op = "compaction.resolve_resume_id"
	if err := checkID(op, sid); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) { return resolveResume(tx, r.db, sid) })
}

func (r *compactionRepo) ConversationRoot(ctx context.Context, sid string) (string, error) {
	const op = "compaction.conversation_root"
	if err := checkID(op, sid); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		// The parent chain (never the /branch shortcut of a resume).
		chain := []string{}
		seen := map[string]bool{}
		cur := sid
		for cur != "" && !seen[cur] && len(chain) < 100 {
			chain = append(chain, cur)
			seen[cur] = true
			p, ok, err := parentOf(tx, cur)
			if err != nil {
				return "", err
			}
			if !ok {
				break
			}
			cur = p
		}
		return chain[len(chain)-1], nil
	})
}

func (r *compactionRepo) IsExplicitForkChild(ctx context.Context, sid string) (bool, error) {
	const op = "compaction.is_explicit_fork_child"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (bool, error) {
		s, err := getSession(tx, sid)
		if err != nil {
			if isNotFound(err) {
				return false, nil
			}
			return false, err
		}
		return isExplicitForkChild(s, false), nil
	})
}

// dedupeReplayedUsers drops the user messages a lineage replays twice
// (Hermes' _dedupe_replayed_user): an exact clone (same timestamp and
// content) replaces its earlier copy; a user message equal to an earlier
// one with no assistant reply (text or tool calls) in between is skipped.
func dedupeReplayedUsers(items []ConversationItem) []ConversationItem {
	out := make([]*ConversationItem, 0, len(items))
	clones := map[string]*ConversationItem{}
	for i := range items {
		it := &items[i]
		if it.Role != "user" || emptyContent(it.Content) {
			out = append(out, it)
			continue
		}
		cb, _ := json.Marshal(it.Content)
		key := ""
		if it.Timestamp != 0 {
			key = fmt.Sprintf("%x|%s", it.Timestamp, cb)
		}
		dup, preferCurrent := -1, false
		if prev := clones[key]; key != "" && prev != nil {
			for j, p := range out {
				if p == prev {
					dup, preferCurrent = j, true
					break
				}
			}
		}
		if dup < 0 {
			_, isText := it.Content.(string)
			for j := len(out) - 1; j >= 0; j-- {
				p := out[j]
				if p.Role == "user" {
					pb, _ := json.Marshal(p.Content)
					if string(pb) == string(cb) && isText {
						dup = j
						break
					}
				} else if p.Role == "assistant" && (!emptyContent(p.Content) || p.ToolCalls != nil) {
					break
				}
			}
		}
		switch {
		case dup < 0:
			out = append(out, it)
		case preferCurrent:
			out = append(out[:dup], out[dup+1:]...)
			out = append(out, it)
		default:
			continue // the earlier copy stays
		}
		if key != "" {
			clones[key] = it
		}
	}
	res := make([]ConversationItem, len(out))
	for i, p := range out {
		res[i] = *p
	}
	return res
}

func emptyContent(c any) bool {
	switch v := c.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	}
	return false
}

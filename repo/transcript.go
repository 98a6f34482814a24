package repo

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// The transcript operations of Hermes' SessionMessagesMixin beyond append
// and replay (hermes_state_messages.py): option-driven reads, the window
// around a message, rewrites, targeted deletes and clears, the small
// "latest row" probes and the sidecar stamps a turn prologue writes.

// GetOptions selects the rows of Transcript.Get (Hermes' get_messages).
// The zero value returns every active message in id order.
type GetOptions struct {
	// IncludeInactive also returns rewound and archived rows (every row).
	IncludeInactive bool
	// IncludeCompacted returns the display history: live rows plus rows
	// archived by in-place compaction (not rewind rows), each logical
	// message once (the live copy, else the newest), ordered by its first
	// copy. With IncludeInactive the dedupe runs over every row.
	IncludeCompacted bool
	// Limit caps the rows (0 = no limit); Offset skips rows first.
	Limit, Offset int
	// Latest pages back from the newest rows; the page is still returned
	// in id order.
	Latest bool
	// AfterID (> 0) returns rows with a greater id (keyset paging); it
	// cannot be combined with Latest, Offset or IncludeCompacted.
	AfterID int64
}

// AroundResult is Hermes' get_messages_around answer: up to window rows on
// each side of the anchor (anchor included, ascending) and how many rows
// of each side were returned (fewer than window means the session ends
// there).
type AroundResult struct {
	Window         []WindowMessage `json:"window"`
	MessagesBefore int             `json:"messages_before"`
	MessagesAfter  int             `json:"messages_after"`
}

// WindowMessage is a message row as get_messages_around returns it: like
// models.Message, but _compressed_summary is always present.
type WindowMessage struct{ models.Message }

// MarshalJSON writes the row dict with _compressed_summary as stored.
func (w WindowMessage) MarshalJSON() ([]byte, error) {
	type plain models.Message
	type out struct {
		plain
		Content           any   `json:"content"`
		CompressedSummary int64 `json:"_compressed_summary"`
	}
	return json.Marshal(out{plain: plain(w.Message), Content: w.DecodedContent(), CompressedSummary: w.CompressedSummary})
}

// ReplaceOptions tunes Transcript.Replace (Hermes' replace_messages).
type ReplaceOptions struct {
	// ActiveOnly deletes only the live rows (rows soft-archived by
	// compaction or rewind stay).
	ActiveOnly bool
	// ArchiveDropped keeps the replaced live rows as rewind rows
	// (active = 0) instead of deleting them; they stay searchable with
	// include_inactive and readable with GetOptions.IncludeInactive.
	ArchiveDropped bool
	// RejectActiveTurnLease refuses the rewrite (ErrConflict, nothing
	// written) while a live turn lease of the session's conversation is
	// held, by anyone; a stale one is deleted in the same transaction
	// (Hermes' reject_active_turn_lease, for user rewrites).
	RejectActiveTurnLease bool
}

// ClearOptions selects what Transcript.Clear deletes (Hermes'
// clear_session_messages); the zero value deletes every message.
type ClearOptions struct {
	// KeepLastN (> 0) keeps the newest N messages by id.
	KeepLastN int
	// Before, when set (and KeepLastN is not), deletes the messages older
	// than this epoch timestamp.
	Before *float64
}

// Transcript reads and rewrites a session's message rows the way Hermes'
// SessionDB does. Every method returns ErrInvalid for a bad session id.
type Transcript interface {
	// Get returns a session's rows with Hermes' get_messages options. A
	// session that does not exist has no rows (an empty list, as Hermes).
	// ErrInvalid for negative paging or AfterID combined with Latest,
	// Offset or IncludeCompacted.
	Get(ctx context.Context, sessionID string, opt GetOptions) ([]models.Message, error)
	// Around returns up to window (negative = 0) rows on each side of the
	// anchor message, rewound rows included. An anchor that is not a row
	// of the session gives an empty window.
	Around(ctx context.Context, sessionID string, anchorID int64, window int) (*AroundResult, error)
	// Replace atomically replaces the session's messages with msgs
	// (/retry, /undo, /compress): the live rows are deleted (or archived,
	// see ReplaceOptions), msgs are inserted as fresh live rows (reasoning
	// kept only on assistant rows, timestamps made increasing) and the
	// counters are set to what was inserted. It returns the number of rows
	// inserted. ErrNotFound for a missing session, ErrConflict for one
	// ended by compression, ErrInvalid for a bad message.
	Replace(ctx context.Context, sessionID string, msgs []MessageInput, opt ReplaceOptions) (int, error)
	// DeleteMessages deletes the given rows of the session and, when any
	// went, recounts message_count and tool_call_count from the live rows
	// and stamps last_activity_at. It returns how many rows were deleted
	// (0 for a missing session).
	DeleteMessages(ctx context.Context, sessionID string, ids []int64) (int64, error)
	// Clear deletes the session's messages (all, the older ones, or those
	// before a time) keeping the row: counters are recounted, or, when
	// nothing is left, token counters, api_call_count and the usage rows
	// are reset as well; last_activity_at is stamped and unreferenced
	// system prompts are removed. It reports false when the session does
	// not exist.
	Clear(ctx context.Context, sessionID string, opt ClearOptions) (bool, error)
	// LatestRowID returns the id of the offset-th newest live row of role
	// ("user" or "assistant"), skipping rows without text when
	// requireText; false when there is none. ErrInvalid for another role
	// or a negative offset.
	LatestRowID(ctx context.Context, sessionID, role string, offset int, requireText bool) (int64, bool, error)
	// LatestConversationRole returns the role of the newest live row that
	// is not session_meta or system bookkeeping ("" when none).
	LatestConversationRole(ctx context.Context, sessionID string) (string, error)
	// FirstAssistantText returns the first assistant reply as text by
	// (timestamp, id), "" when there is none or it is not text.
	FirstAssistantText(ctx context.Context, sessionID string) (string, error)
	// SetAPIContent stores apiContent (the exact text sent to the
	// provider) on one live user row of the session whose content still
	// equals content (a string, nil for NULL, or a list of parts). It
	// returns the rows changed (0 or 1).
	SetAPIContent(ctx context.Context, sessionID string, rowID int64, content any, apiContent string) (int64, error)
	// SetLatestUserAPIContent stores apiContent on the newest live user
	// row when its content equals content; it returns the rows changed.
	SetLatestUserAPIContent(ctx context.Context, sessionID string, content any, apiContent string) (int64, error)
	// SetLatestDisplayKind stamps displayKind (and display_metadata, a
	// JSON object or nil) on the newest live row of role whose content is
	// content; it reports whether a row was stamped (false for empty
	// arguments).
	SetLatestDisplayKind(ctx context.Context, sessionID, role, content, displayKind string, metadata models.JSON) (bool, error)
	// MessageRole returns the role of the live row rowID of the session,
	// "" when there is no such live row (get_message_role).
	MessageRole(ctx context.Context, sessionID string, rowID int64) (string, error)
	// HasPlatformMessageID reports whether the session holds a row with
	// that platform message id (the gateway's retry dedupe probe).
	HasPlatformMessageID(ctx context.Context, sessionID, platformMessageID string) (bool, error)
}

type transcriptRepo struct{ db *DB }

// NewTranscript returns the GORM implementation of Transcript.
func NewTranscript(db *DB) Transcript { return &transcriptRepo{db} }

// encodeContent stores content as Hermes' _encode_content does: a string as
// is, nil as NULL, anything else (multimodal parts) as NUL + "json:" + JSON.
func encodeContent(op string, v any) (*string, error) {
	switch c := v.(type) {
	case nil:
		return nil, nil
	case string:
		return &c, nil
	case *string:
		return c, nil
	}
	b, err := pyjson.Dumps(v)
	if err != nil {
		return nil, errs.Wrap(errs.ErrInvalid, op, err, "content cannot be encoded as JSON")
	}
	s := models.MultimodalPrefix + string(b)
	return &s, nil
}

func (r *transcriptRepo) Get(ctx context.Context, sid string, opt GetOptions) ([]models.Message, error) {
	const op = "transcript.get"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	switch {
	case opt.Limit < 0 || opt.Offset < 0 || opt.AfterID < 0:
		return nil, errs.Errorf(errs.ErrInvalid, op, "limit, offset and after_id must not be negative")
	case opt.AfterID > 0 && (opt.Latest || opt.Offset > 0):
		return nil, errs.Errorf(errs.ErrInvalid, op, "after_id cannot be combined with latest or offset paging")
	case opt.AfterID > 0 && opt.IncludeCompacted:
		return nil, errs.Errorf(errs.ErrInvalid, op, "after_id cannot be combined with include_compacted")
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.Message, error) {
		out := []models.Message{}
		if opt.IncludeCompacted {
			q := tx.Where("session_id = ?", sid)
			if !opt.IncludeInactive {
				q = q.Where("active = 1 OR compacted = 1")
			}
			if err := q.Order("id").Find(&out).Error; err != nil {
				return nil, err
			}
			return pageRows(dedupeDisplay(out), opt), nil
		}
		q := tx.Where("session_id = ?", sid)
		if !opt.IncludeInactive {
			q = q.Where("active = 1")
		}
		if opt.AfterID > 0 {
			q = q.Where("id > ?", opt.AfterID)
		}
		if opt.Latest {
			q = q.Order("id DESC")
		} else {
			q = q.Order("id")
		}
		if opt.Limit > 0 {
			q = q.Limit(opt.Limit)
		}
		if opt.Offset > 0 {
			q = q.Offset(opt.Offset)
		}
		if err := q.Find(&out).Error; err != nil {
			return nil, err
		}
		if opt.Latest {
			reverseMessages(out)
		}
		return out, nil
	})
}

func reverseMessages(ms []models.Message) {
	for i, j := 0, len(ms)-1; i < j; i, j = i+1, j-1 {
		ms[i], ms[j] = ms[j], ms[i]
	}
}

// pageRows applies Limit/Offset/Latest to rows already in display order.
func pageRows(rows []models.Message, opt GetOptions) []models.Message {
	if opt.Latest {
		reverseMessages(rows)
	}
	if opt.Offset >= len(rows) {
		rows = rows[:0]
	} else {
		rows = rows[opt.Offset:]
	}
	if opt.Limit > 0 && opt.Limit < len(rows) {
		rows = rows[:opt.Limit]
	}
	if opt.Latest {
		reverseMessages(rows)
	}
	return rows
}

// displayKey is the identity of a logical message across compaction
// generations (the protected tail is copied into each): role, stored
// content, timestamp, tool_call_id, tool_calls and tool_name, NULL kept
// apart from "".
func displayKey(m *models.Message) string {
	var b strings.Builder
	opt := func(p *string) {
		if p == nil {
			b.WriteString("\x01N")
		} else {
			b.WriteString("\x01S")
			b.WriteString(*p)
		}
	}
	b.WriteString(m.Role)
	opt(m.Content)
	b.WriteString("\x01T" + strconv.FormatUint(math.Float64bits(float64(m.Timestamp)), 16))
	opt(m.ToolCallID)
	if m.ToolCalls == nil {
		b.WriteString("\x01N")
	} else {
		b.WriteString("\x01S" + string(m.ToolCalls))
	}
	opt(m.ToolName)
	return b.String()
}

// dedupeDisplay collapses compaction generations so each logical message
// appears once: the live copy wins, else the newest; the order is that of
// each message's first copy (Hermes' _dedupe_display_generations). rows
// must be in id order.
func dedupeDisplay(rows []models.Message) []models.Message {
	type slot struct{ pick, first int }
	idx := map[string]*slot{}
	var order []*slot
	for i := range rows {
		k := displayKey(&rows[i])
		s := idx[k]
		if s == nil {
			s = &slot{pick: i, first: i}
			idx[k] = s
			order = append(order, s)
			continue
		}
		cur := &rows[s.pick]
		if rows[i].Active > cur.Active || (rows[i].Active == cur.Active && rows[i].ID > cur.ID) {
			s.pick = i
		}
	}
	out := make([]models.Message, 0, len(order))
	for _, s := range order {
		out = append(out, rows[s.pick])
	}
	return out
}

func (r *transcriptRepo) Around(ctx context.Context, sid string, anchor int64, window int) (*AroundResult, error) {
	const op = "transcript.around"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	window = max(window, 0)
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*AroundResult, error) {
		res := &AroundResult{Window: []WindowMessage{}}
		var n int64
		if err := tx.Model(&models.Message{}).Where("id = ? AND session_id = ?", anchor, sid).Limit(1).Count(&n).Error; err != nil {
			return nil, err
		}
		if n == 0 {
			return res, nil
		}
		var before, after []models.Message
		if err := tx.Where("session_id = ? AND id <= ?", sid, anchor).Order("id DESC").Limit(window + 1).Find(&before).Error; err != nil {
			return nil, err
		}
		if window > 0 {
			if err := tx.Where("session_id = ? AND id > ?", sid, anchor).Order("id").Limit(window).Find(&after).Error; err != nil {
				return nil, err
			}
		}
		for i := len(before) - 1; i >= 0; i-- {
			res.Window = append(res.Window, WindowMessage{before[i]})
		}
		for i := range after {
			res.Window = append(res.Window, WindowMessage{after[i]})
		}
		res.MessagesBefore = max(0, len(before)-1)
		res.MessagesAfter = len(after)
		return res, nil
	})
}

// endedByCompression reports whether the session row exists and whether it
// was ended by compression.
func endedByCompression(tx *gorm.DB, sid string) (exists, compressed bool, err error) {
	var rows []struct {
		EndedAt   *float64
		EndReason *string
	}
	if err := tx.Model(&models.Session{}).Select("ended_at, end_reason").Where("id = ?", sid).Limit(1).Find(&rows).Error; err != nil {
		return false, false, err
	}
	if len(rows) == 0 {
		return false, false, nil
	}
	return true, rows[0].EndedAt != nil && rows[0].EndReason != nil && *rows[0].EndReason == "compression", nil
}

// freshRows validates msgs and turns them into rows the way Hermes'
// _insert_message_rows writes them: reasoning only on assistant rows, and
// timestamps that keep increasing (a row without a valid timestamp gets
// the running clock, which then moves past every row by a microsecond).
func freshRows(op, sid string, msgs []MessageInput) ([]*models.Message, int64, error) {
	return freshRowsAt(op, sid, msgs, float64(models.Now()))
}

// freshRowsAt is freshRows with the running clock starting at now.
func freshRowsAt(op, sid string, msgs []MessageInput, now float64) ([]*models.Message, int64, error) {
	rows := make([]*models.Message, len(msgs))
	var tools int64
	for i := range msgs {
		m := msgs[i]
		if m.Role != "assistant" {
			m.Reasoning, m.ReasoningContent, m.ReasoningDetails, m.CodexReasoning, m.CodexMessageItems = nil, nil, nil, nil, nil
		}
		row, err := m.toRow(op, sid)
		if err != nil {
			return nil, 0, err
		}
		if !row.Timestamp.Sane() {
			row.Timestamp = models.Epoch(now)
		}
		now = math.Max(now, float64(row.Timestamp)) + 1e-6
		tools += models.ToolCallCount(row.ToolCalls)
		rows[i] = row
	}
	return rows, tools, nil
}

// insertFresh inserts rows (from freshRows) in the caller's transaction.
func insertFresh(tx *gorm.DB, rows []*models.Message) error {
	if len(rows) == 0 {
		return nil
	}
	return tx.CreateInBatches(rows, batchRows).Error
}

func (r *transcriptRepo) Replace(ctx context.Context, sid string, msgs []MessageInput, opt ReplaceOptions) (int, error) {
	const op = "transcript.replace"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	rows, tools, err := freshRows(op, sid, msgs)
	if err != nil {
		return 0, err
	}
	err = r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		exists, compressed, err := endedByCompression(tx, sid)
		switch {
		case err != nil:
			return err
		case !exists:
			return noSession(op, sid)
		case compressed:
			return errs.Errorf(errs.ErrConflict, op, "session %q was ended by compression; rewrite its continuation", sid)
		}
		if opt.RejectActiveTurnLease {
			if err := turnLeaseFence(tx, op, sid, "", 0); err != nil {
				return err
			}
		}
		switch {
		case opt.ArchiveDropped:
			err = tx.Exec("UPDATE messages SET active = 0 WHERE session_id = ? AND active = 1", sid).Error
		case opt.ActiveOnly:
			err = tx.Exec("DELETE FROM messages WHERE session_id = ? AND active = 1", sid).Error
		default:
			err = tx.Exec("DELETE FROM messages WHERE session_id = ?", sid).Error
		}
		if err != nil {
			return err
		}
		for _, row := range rows {
			row.ID = 0
		}
		if err := insertFresh(tx, rows); err != nil {
			return err
		}
		return tx.Exec("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", len(rows), tools, sid).Error
	})
	if err != nil {
		return 0, err
	}
	return len(rows), nil
}

// recountLive sets message_count and tool_call_count from the live rows the
// way Hermes' delete/clear paths count them (a row counts once for tools
// when it is a tool row or carries tool_calls) and stamps last_activity_at.
func recountLive(tx *gorm.DB, sid string) (int64, error) {
	var c struct{ Msgs, Tools int64 }
	if err := tx.Raw(`SELECT COUNT(*) AS msgs, COALESCE(SUM(CASE WHEN role = 'tool' OR (tool_calls IS NOT NULL AND tool_calls <> '' AND tool_calls <> '[]') THEN 1 ELSE 0 END), 0) AS tools
		FROM messages WHERE session_id = ? AND active = 1`, sid).Scan(&c).Error; err != nil {
		return 0, err
	}
	return c.Msgs, tx.Exec("UPDATE sessions SET message_count = ?, tool_call_count = ?, last_activity_at = ? WHERE id = ?",
		c.Msgs, c.Tools, models.Now(), sid).Error
}

func (r *transcriptRepo) DeleteMessages(ctx context.Context, sid string, ids []int64) (int64, error) {
	const op = "transcript.delete_messages"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		n = 0
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		for start := 0; start < len(ids); start += idChunk {
			ch := ids[start:min(len(ids), start+idChunk)]
			args := make([]any, 0, len(ch)+1)
			args = append(args, sid)
			for _, id := range ch {
				args = append(args, id)
			}
			res := tx.Exec("DELETE FROM messages WHERE session_id = ? AND id IN ("+placeholders(len(ch))+")", args...)
			if res.Error != nil {
				return res.Error
			}
			n += res.RowsAffected
		}
		if n == 0 {
			return nil
		}
		_, err := recountLive(tx, sid)
		return err
	})
	return n, err
}

func (r *transcriptRepo) Clear(ctx context.Context, sid string, opt ClearOptions) (bool, error) {
	const op = "transcript.clear"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	if opt.KeepLastN < 0 {
		return false, errs.Errorf(errs.ErrInvalid, op, "keep_last_n must not be negative")
	}
	var found bool
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		ok, err := sessionExists(tx, sid)
		if err != nil || !ok {
			found = false
			return err
		}
		found = true
		switch {
		case opt.KeepLastN > 0:
			err = tx.Exec(`DELETE FROM messages WHERE session_id = ? AND id NOT IN
				(SELECT id FROM messages WHERE session_id = ? ORDER BY id DESC LIMIT ?)`, sid, sid, opt.KeepLastN).Error
		case opt.Before != nil:
			err = tx.Exec("DELETE FROM messages WHERE session_id = ? AND timestamp < ?", sid, *opt.Before).Error
		default:
			err = tx.Exec("DELETE FROM messages WHERE session_id = ?", sid).Error
		}
		if err != nil {
			return err
		}
		left, err := recountLive(tx, sid)
		if err != nil {
			return err
		}
		if left == 0 {
			if err := tx.Exec(`UPDATE sessions SET input_tokens = 0, output_tokens = 0, cache_read_tokens = 0,
				cache_write_tokens = 0, reasoning_tokens = 0, api_call_count = 0 WHERE id = ?`, sid).Error; err != nil {
				return err
			}
			if err := tx.Exec("DELETE FROM session_model_usage WHERE session_id = ?", sid).Error; err != nil {
				return err
			}
		}
		return deleteUnreferencedPrompts(tx)
	})
	return found, err
}

func (r *transcriptRepo) LatestRowID(ctx context.Context, sid, role string, offset int, requireText bool) (int64, bool, error) {
	const op = "transcript.latest_row_id"
	if err := checkID(op, sid); err != nil {
		return 0, false, err
	}
	if role != "user" && role != "assistant" {
		return 0, false, errs.Errorf(errs.ErrInvalid, op, "role must be user or assistant")
	}
	if offset < 0 {
		return 0, false, errs.Errorf(errs.ErrInvalid, op, "offset must not be negative")
	}
	ids, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]int64, error) {
		q := tx.Model(&models.Message{}).Where("session_id = ? AND role = ? AND active = 1", sid, role)
		if requireText {
			q = q.Where("content IS NOT NULL AND TRIM(content) <> ''")
		}
		var ids []int64
		err := q.Order("id DESC").Limit(1).Offset(offset).Pluck("id", &ids).Error
		return ids, err
	})
	if err != nil || len(ids) == 0 {
		return 0, false, err
	}
	return ids[0], true, nil
}

func (r *transcriptRepo) LatestConversationRole(ctx context.Context, sid string) (string, error) {
	const op = "transcript.latest_conversation_role"
	if err := checkID(op, sid); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		var roles []string
		err := tx.Model(&models.Message{}).Where("session_id = ? AND active = 1 AND role NOT IN ('session_meta', 'system')", sid).
			Order("id DESC").Limit(1).Pluck("role", &roles).Error
		if err != nil || len(roles) == 0 {
			return "", err
		}
		return roles[0], nil
	})
}

func (r *transcriptRepo) FirstAssistantText(ctx context.Context, sid string) (string, error) {
	const op = "transcript.first_assistant_text"
	if err := checkID(op, sid); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		var rows []models.Message
		if err := tx.Select("id, content").Where("session_id = ? AND role = 'assistant' AND content IS NOT NULL", sid).
			Order("timestamp, id").Limit(1).Find(&rows).Error; err != nil || len(rows) == 0 {
			return "", err
		}
		s, _ := rows[0].DecodedContent().(string)
		return s, nil
	})
}

func (r *transcriptRepo) setAPIContent(ctx context.Context, op, where string, args []any, apiContent string) (int64, error) {
	if err := checkText(op, "api_content", apiContent); err != nil {
		return 0, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE messages SET api_content = ? WHERE "+where, append([]any{apiContent}, args...)...)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

func (r *transcriptRepo) SetAPIContent(ctx context.Context, sid string, rowID int64, content any, apiContent string) (int64, error) {
	const op = "transcript.set_api_content"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	if rowID <= 0 {
		return 0, nil
	}
	c, err := encodeContent(op, content)
	if err != nil {
		return 0, err
	}
	return r.setAPIContent(ctx, op, "id = ? AND session_id = ? AND role = 'user' AND active = 1 AND content "+r.db.isNullSafe()+" ?",
		[]any{rowID, sid, c}, apiContent)
}

func (r *transcriptRepo) SetLatestUserAPIContent(ctx context.Context, sid string, content any, apiContent string) (int64, error) {
	const op = "transcript.set_latest_user_api_content"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	c, err := encodeContent(op, content)
	if err != nil {
		return 0, err
	}
	return r.setAPIContent(ctx, op, `id = (SELECT id FROM messages WHERE session_id = ? AND role = 'user' AND active = 1
		ORDER BY id DESC LIMIT 1) AND content `+r.db.isNullSafe()+" ?", []any{sid, c}, apiContent)
}

func (r *transcriptRepo) SetLatestDisplayKind(ctx context.Context, sid, role, content, kind string, meta models.JSON) (bool, error) {
	const op = "transcript.set_latest_display_kind"
	if sid == "" || content == "" || kind == "" {
		return false, nil
	}
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	for f, v := range map[string]string{"role": role, "content": content, "display_kind": kind} {
		if err := checkText(op, f, v); err != nil {
			return false, err
		}
	}
	var metaText any
	if !meta.IsNull() {
		var obj map[string]json.RawMessage
		if json.Unmarshal(meta, &obj) != nil || obj == nil {
			return false, errs.Errorf(errs.ErrInvalid, op, "display_metadata must be a JSON object")
		}
		b, err := pyjson.Canonical(meta)
		if err != nil {
			return false, errs.Wrap(errs.ErrInvalid, op, err, "display_metadata is not valid JSON")
		}
		metaText = string(b)
	}
	var stamped bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var ids []int64
		if err := tx.Model(&models.Message{}).Where("session_id = ? AND role = ? AND content = ? AND active = 1", sid, role, content).
			Order("id DESC").Limit(1).Pluck("id", &ids).Error; err != nil {
			return err
		}
		stamped = len(ids) == 1
		if !stamped {
			return nil
		}
		return tx.Exec("UPDATE messages SET display_kind = ?, display_metadata = ? WHERE id = ?", kind, metaText, ids[0]).Error
	})
	return stamped, err
}

func (r *transcriptRepo) MessageRole(ctx context.Context, sid string, rowID int64) (string, error) {
	const op = "transcript.message_role"
	if err := checkID(op, sid); err != nil {
		return "", err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		var roles []string
		err := tx.Model(&models.Message{}).Where("id = ? AND session_id = ? AND active = 1", rowID, sid).Limit(1).Pluck("role", &roles).Error
		if err != nil || len(roles) == 0 {
			return "", err
		}
		return roles[0], nil
	})
}

func (r *transcriptRepo) HasPlatformMessageID(ctx context.Context, sid, pmid string) (bool, error) {
	const op = "transcript.has_platform_message_id"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	if err := checkText(op, "platform_message_id", pmid); err != nil {
		return false, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (bool, error) {
		var n int64
		err := tx.Model(&models.Message{}).Where("session_id = ? AND platform_message_id = ?", sid, pmid).Limit(1).Count(&n).Error
		return n > 0, err
	})
}

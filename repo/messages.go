package repo

import (
	"context"
	"regexp"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// MessageInput is one message to append. Pointer fields distinguish NULL from
// ""; empty strings of the other fields are stored as NULL.
type MessageInput struct {
	Role string
	// Content is the text; nil is NULL (an assistant turn that only calls
	// tools), "" an empty reply. Ignored when Parts is set.
	Content *string
	// Parts is multimodal content (a list of OpenAI content parts); stored
	// as NUL + "json:" + JSON text, as Hermes does.
	Parts             any
	ToolCalls         models.JSON
	ToolName          string
	ToolCallID        string
	TokenCount        *int64
	FinishReason      *string
	Reasoning         *string
	ReasoningContent  *string
	ReasoningDetails  models.JSONText
	CodexReasoning    models.JSONText
	CodexMessageItems models.JSONText
	PlatformMessageID string
	Observed          bool
	CompressedSummary bool
	EffectDisposition string
	// Timestamp defaults to now; an invalid or out-of-window value becomes now.
	Timestamp       models.Epoch
	APIContent      *string
	DisplayKind     string
	DisplayMetadata models.JSON
	// TurnLeaseHolder, when set, fences Append and AppendBatch by the
	// conversation's turn lease (Hermes' turn_lease_holder): the write is
	// refused (ErrConflict, nothing written) unless this holder holds the
	// lease (TurnLeases), and a lease of this holder that expired without
	// being taken over is renewed for TurnLeaseTTL (0: DefaultLeaseTTL) in
	// the same transaction. A batch is fenced once, by the one holder its
	// messages name (ErrInvalid for two). Other writers ignore these.
	TurnLeaseHolder string
	TurnLeaseTTL    time.Duration
}

// Messages is the repository of message rows.
type Messages interface {
	// Append stores one message in its own transaction and returns its id.
	// The session's message_count and tool_call_count move in the same
	// transaction. ErrNotFound when the session does not exist, ErrConflict
	// when it was ended by compression (append to its continuation),
	// ErrInvalid for bad input; nothing is written on error.
	Append(ctx context.Context, sessionID string, m MessageInput) (int64, error)
	// AppendBatch stores several messages of one session in one
	// transaction (one multi-row INSERT) and returns their ids in order.
	AppendBatch(ctx context.Context, sessionID string, ms []MessageInput) ([]int64, error)
	// List returns the active messages of a session ordered by id (Hermes'
	// get_messages). ErrNotFound when the session does not exist.
	List(ctx context.Context, sessionID string) ([]models.Message, error)
	// Conversation returns the active messages in the OpenAI format Hermes
	// replays (get_messages_as_conversation), with its include_ancestors /
	// include_inactive / include_compacted / include_row_ids options.
	// ErrNotFound when the session does not exist.
	Conversation(ctx context.Context, sessionID string, opt ConversationOptions) ([]ConversationItem, error)
	// Count returns the number of messages, of one session when sessionID
	// is not empty.
	Count(ctx context.Context, sessionID string) (int64, error)
	// Page returns one window of a session's messages in id order, with
	// the window's position among them, so a reader can walk a session of
	// any size a window at a time (by id from a window it holds, or by
	// offset to jump). ErrNotFound when the session does not exist,
	// ErrInvalid for a bad id, a negative offset or ids, or a limit above
	// MaxPageLimit.
	Page(ctx context.Context, sessionID string, opt PageOptions) (MessagePage, error)
}

// MaxPageLimit is the largest window Messages.Page returns.
const MaxPageLimit = 1000

// PageOptions selects the window of Messages.Page. The zero value is the
// first 100 active messages.
type PageOptions struct {
	// AfterID, when > 0, starts the window after this message id.
	AfterID int64
	// BeforeID, when > 0, ends the window before this message id. Without
	// AfterID the window is the Limit messages just before it (walking
	// backwards), still returned in id order.
	BeforeID int64
	// Offset skips this many messages in the walking direction: from the
	// first message (or AfterID) forwards, or from BeforeID backwards.
	Offset int
	// Limit is the window size: 0 means 100, at most MaxPageLimit.
	Limit int
	// IncludeInactive also returns rewound (active = 0) messages.
	IncludeInactive bool
}

// MessagePage is one window of a session's messages.
type MessagePage struct {
	// Messages of the window, in id order.
	Messages []models.Message `json:"messages"`
	// Start is the 0-based index of Messages[0] among the Total messages
	// (an empty window: Total after the end, 0 before the start).
	Start int64 `json:"start"`
	// Total is the number of messages the options select without the
	// window (the session's active messages unless IncludeInactive).
	Total int64 `json:"total"`
}

type messageRepo struct {
	db       *DB
	defaults messageDefaults
	group    committer
}

// NewMessages returns the GORM implementation of Messages. Its group
// committer is drained when db is marked closed.
func NewMessages(db *DB) Messages {
	r := &messageRepo{db: db}
	r.group.r = r
	db.OnClose(r.group.drain)
	return r
}

func (in *MessageInput) toRow(op, sessionID string) (*models.Message, error) {
	row := &models.Message{
		SessionID: sessionID, Role: in.Role, Content: in.Content, ToolCalls: in.ToolCalls,
		ToolName: models.TextOrNil(in.ToolName), ToolCallID: models.TextOrNil(in.ToolCallID),
		TokenCount: in.TokenCount, FinishReason: in.FinishReason, Reasoning: in.Reasoning,
		ReasoningContent: in.ReasoningContent, ReasoningDetails: in.ReasoningDetails,
		CodexReasoningItems: in.CodexReasoning, CodexMessageItems: in.CodexMessageItems,
		PlatformMessageID: models.TextOrNil(in.PlatformMessageID), EffectDisposition: models.TextOrNil(in.EffectDisposition),
		Timestamp: in.Timestamp, APIContent: in.APIContent, DisplayKind: models.TextOrNil(in.DisplayKind),
		DisplayMetadata: in.DisplayMetadata, Active: 1,
	}
	if in.Observed {
		row.Observed = 1
	}
	if in.CompressedSummary {
		row.CompressedSummary = 1
	}
	if in.Parts != nil {
		b, err := pyjson.Dumps(in.Parts)
		if err != nil {
			return nil, errs.Wrap(errs.ErrInvalid, op, err, "content parts cannot be encoded as JSON")
		}
		s := models.MultimodalPrefix + string(b)
		row.Content = &s
	}
	// The rules every writer of a message obeys (rowcheck.go).
	if _, err := checkMessageRow(op, row); err != nil {
		return nil, err
	}
	return row, nil
}

// checkAppendable returns ErrNotFound for a missing session and ErrConflict
// for one ended by compression.
func checkAppendable(tx *gorm.DB, op, sessionID string) error {
	var rows []struct {
		EndedAt   *float64
		EndReason *string
	}
	if err := tx.Model(&models.Session{}).Select("ended_at, end_reason").Where("id = ?", sessionID).Limit(1).Find(&rows).Error; err != nil {
		return err
	}
	if len(rows) == 0 {
		return noSession(op, sessionID)
	}
	if rows[0].EndReason != nil && *rows[0].EndReason == "compression" && rows[0].EndedAt != nil {
		return errs.Errorf(errs.ErrConflict, op, "session %q was ended by compression; append to its continuation", sessionID)
	}
	return nil
}

// Append validates m, then queues it for the group committer
// (groupcommit.go): calls made at the same time by several goroutines are
// committed in one transaction; a lone call is committed alone at once.
// The id is returned only after the COMMIT that stored the row.
// The INSERT runs the write path's callbacks (RegisterWritePath,
// writepath.go): normalisation, the session counters, the CJK index.
func (r *messageRepo) Append(ctx context.Context, sessionID string, m MessageInput) (int64, error) {
	const op = "messages.append"
	if err := checkID(op, sessionID); err != nil {
		return 0, err
	}
	row, err := m.toRow(op, sessionID)
	if err != nil {
		return 0, err
	}
	if m.TurnLeaseHolder != "" {
		// A fenced append commits alone, its guard in its transaction.
		holder, ttl, err := batchLeaseHolder(op, []MessageInput{m})
		if err != nil {
			return 0, err
		}
		ids, err := r.writeRows(ctx, op, sessionID, []*models.Message{row}, func(tx *gorm.DB) error {
			return turnLeaseFence(tx, op, sessionID, holder, ttl)
		})
		if err != nil {
			return 0, err
		}
		return ids[0], nil
	}
	if r.db.closed.Load() {
		return 0, errs.Errorf(errs.ErrClosed, op, "the store is closed")
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c := &appendCall{ctx: ctx, op: op, sid: sessionID, row: row, done: make(chan struct{})}
	lead, err := r.group.submit(c)
	if err != nil {
		return 0, err
	}
	if lead {
		r.group.lead()
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		if c.state.CompareAndSwap(callQueued, callWithdrawn) {
			return 0, ctx.Err()
		}
		// Its row is in the transaction being committed (or the call
		// was answered already): wait for the outcome.
		<-c.done
	}
	return c.id, c.err
}

func (r *messageRepo) AppendBatch(ctx context.Context, sessionID string, ms []MessageInput) ([]int64, error) {
	if len(ms) == 0 {
		return nil, nil
	}
	return r.append(ctx, "messages.append_batch", sessionID, ms)
}

// batchRows bounds one INSERT statement (SQLite's variable limit is 32766;
// a message row binds 25 values).
const batchRows = 500

func (r *messageRepo) append(ctx context.Context, op, sessionID string, ms []MessageInput) ([]int64, error) {
	if err := checkID(op, sessionID); err != nil {
		return nil, err
	}
	holder, ttl, err := batchLeaseHolder(op, ms)
	if err != nil {
		return nil, err
	}
	rows := make([]*models.Message, len(ms))
	for i := range ms {
		row, err := ms[i].toRow(op, sessionID)
		if err != nil {
			return nil, err
		}
		rows[i] = row
	}
	var fence func(tx *gorm.DB) error
	if holder != "" {
		fence = func(tx *gorm.DB) error { return turnLeaseFence(tx, op, sessionID, holder, ttl) }
	}
	return r.writeRows(ctx, op, sessionID, rows, fence)
}

// writeRows stores rows (validated, all of sessionID) in one transaction
// and returns their ids in order; fence, when not nil, runs first in that
// transaction (the turn-lease guard).
func (r *messageRepo) writeRows(ctx context.Context, op, sessionID string, rows []*models.Message, fence func(tx *gorm.DB) error) ([]int64, error) {
	ids := make([]int64, len(rows))
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sessionID); err != nil {
			return err
		}
		if fence != nil {
			if err := fence(tx); err != nil {
				return err
			}
		}
		if err := checkAppendable(tx, op, sessionID); err != nil {
			return err
		}
		for i := range rows {
			rows[i].ID = 0
		}
		if err := r.insertRows(tx, rows); err != nil {
			return err
		}
		for i, row := range rows {
			ids[i] = row.ID
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

func sessionExists(tx *gorm.DB, id string) (bool, error) {
	var n int64
	err := tx.Model(&models.Session{}).Where("id = ?", id).Limit(1).Count(&n).Error
	return n > 0, err
}

func (r *messageRepo) List(ctx context.Context, sessionID string) ([]models.Message, error) {
	const op = "messages.list"
	if err := checkID(op, sessionID); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.Message, error) {
		return listActive(tx, op, sessionID)
	})
}

// listActive reads the active messages of a session in id order with
// database/sql rows scanned into reused variables (export_fast.go's
// scanner): GORM's reflection per row was most of a replay's cost.
func listActive(tx *gorm.DB, op, sessionID string) ([]models.Message, error) {
	return listActiveCols(tx, op, sessionID, "*")
}

// listActiveCols is listActive reading only the columns cols (a SELECT
// list); the fields of the others stay zero.
func listActiveCols(tx *gorm.DB, op, sessionID, sel string) ([]models.Message, error) {
	rows, err := queryRows(tx, "SELECT "+sel+" FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	sc := newMsgScanner(cols)
	var out []models.Message
	for rows.Next() {
		out = append(out, models.Message{})
		if err := sc.scan(rows, &out[len(out)-1]); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if len(out) == 0 {
		ok, err := sessionExists(tx, sessionID)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, noSession(op, sessionID)
		}
		out = []models.Message{}
	}
	return out, nil
}

func (r *messageRepo) Count(ctx context.Context, sessionID string) (int64, error) {
	return Read(ctx, r.db, "messages.count", func(tx *gorm.DB) (int64, error) {
		q := tx.Model(&models.Message{})
		if sessionID != "" {
			q = q.Where("session_id = ?", sessionID)
		}
		var n int64
		return n, q.Count(&n).Error
	})
}

func (r *messageRepo) Page(ctx context.Context, sessionID string, opt PageOptions) (MessagePage, error) {
	const op = "messages.page"
	if err := checkID(op, sessionID); err != nil {
		return MessagePage{}, err
	}
	switch {
	case opt.AfterID < 0 || opt.BeforeID < 0:
		return MessagePage{}, errs.Errorf(errs.ErrInvalid, op, "message ids must not be negative")
	case opt.Offset < 0:
		return MessagePage{}, errs.Errorf(errs.ErrInvalid, op, "offset must not be negative")
	case opt.Limit < 0 || opt.Limit > MaxPageLimit:
		return MessagePage{}, errs.Errorf(errs.ErrInvalid, op, "limit must be between 0 and %d", MaxPageLimit)
	}
	if opt.Limit == 0 {
		opt.Limit = 100
	}
	backwards := opt.BeforeID > 0 && opt.AfterID == 0
	return Read(ctx, r.db, op, func(tx *gorm.DB) (MessagePage, error) {
		scope := func(q *gorm.DB) *gorm.DB {
			q = q.Where("session_id = ?", sessionID)
			if !opt.IncludeInactive {
				q = q.Where("active = 1")
			}
			return q
		}
		q := scope(tx.Model(&models.Message{}))
		if opt.AfterID > 0 {
			q = q.Where("id > ?", opt.AfterID)
		}
		if opt.BeforeID > 0 {
			q = q.Where("id < ?", opt.BeforeID)
		}
		if backwards {
			q = q.Order("id DESC")
		} else {
			q = q.Order("id")
		}
		q = q.Limit(opt.Limit)
		if opt.Offset > 0 {
			q = q.Offset(opt.Offset)
		}
		out := MessagePage{Messages: []models.Message{}}
		if err := q.Find(&out.Messages).Error; err != nil {
			return out, err
		}
		if backwards {
			for i, j := 0, len(out.Messages)-1; i < j; i, j = i+1, j-1 {
				out.Messages[i], out.Messages[j] = out.Messages[j], out.Messages[i]
			}
		}
		// Total and the window's position in one pass over the index.
		var first int64 = -1
		if len(out.Messages) > 0 {
			first = out.Messages[0].ID
		}
		var counts struct{ Total, Earlier int64 }
		if err := scope(tx.Model(&models.Message{})).
			Select("COUNT(*) AS total, COALESCE(SUM(CASE WHEN id < ? THEN 1 ELSE 0 END), 0) AS earlier", first).
			Scan(&counts).Error; err != nil {
			return out, err
		}
		out.Total = counts.Total
		switch {
		case len(out.Messages) > 0:
			out.Start = counts.Earlier
		case backwards:
			out.Start = 0
		default:
			out.Start = out.Total
		}
		if out.Total == 0 {
			ok, err := sessionExists(tx, sessionID)
			if err != nil {
				return out, err
			}
			if !ok {
				return out, noSession(op, sessionID)
			}
		}
		return out, nil
	})
}

// ConversationOptions tunes Messages.Conversation.
type ConversationOptions struct {
	// KeepMemoryContext leaves <memory-context> blocks and the recalled
	// memory note in user and assistant text (by default they are removed,
	// as Hermes' context scrubber does before a replay).
	KeepMemoryContext bool
	// IncludeAncestors replays the session's lineage (its parent chain,
	// root first; an explicit /branch copy stands alone), dropping a user
	// message the lineage replays twice (compaction.go).
	IncludeAncestors bool
	// IncludeInactive also replays rewound and archived rows;
	// IncludeCompacted replays the display history (live rows plus rows
	// archived by compaction, each logical message once).
	IncludeInactive, IncludeCompacted bool
	// IncludeRowIDs adds each row's id as _row_id.
	IncludeRowIDs bool
	// IncludeSummaryMarkers adds _compressed_summary: true to compaction
	// summary rows.
	IncludeSummaryMarkers bool
}

// ForHermes returns o as the Hermes version v replays (v: the schema
// version of a file read as it is, 0 or 30 for the current rules): before
// v10 Hermes had no context scrubber and replayed text as stored, so
// KeepMemoryContext is set. Callers that convert rows themselves
// (ToConversation) pass the store's schema version.
func (o ConversationOptions) ForHermes(v int) ConversationOptions {
	if v > 0 && v < 10 {
		o.KeepMemoryContext = true
	}
	return o
}

// ConversationItem is one message in the replay format. Optional fields are
// present only when truthy (reasoning_content of assistant rows: when not
// NULL), as in Hermes' dicts.
type ConversationItem struct {
	Role                string      `json:"role"`
	Content             any         `json:"content"`
	DBPersisted         bool        `json:"_db_persisted"`
	RowID               int64       `json:"_row_id,omitempty"`
	CompressedSummary   bool        `json:"_compressed_summary,omitempty"`
	APIContent          string      `json:"api_content,omitempty"`
	DisplayKind         string      `json:"display_kind,omitempty"`
	DisplayMetadata     models.JSON `json:"display_metadata,omitempty"`
	Timestamp           float64     `json:"timestamp,omitempty"`
	ToolCallID          string      `json:"tool_call_id,omitempty"`
	ToolName            string      `json:"tool_name,omitempty"`
	EffectDisposition   string      `json:"effect_disposition,omitempty"`
	ToolCalls           models.JSON `json:"tool_calls,omitempty"`
	MessageID           string      `json:"message_id,omitempty"`
	Observed            bool        `json:"observed,omitempty"`
	FinishReason        *string     `json:"finish_reason,omitempty"`
	Reasoning           *string     `json:"reasoning,omitempty"`
	ReasoningContent    *string     `json:"reasoning_content,omitempty"`
	ReasoningDetails    any         `json:"reasoning_details,omitempty"`
	CodexReasoningItems any         `json:"codex_reasoning_items,omitempty"`
	CodexMessageItems   any         `json:"codex_message_items,omitempty"`
}

var (
	memoryBlockRE = regexp.MustCompile(`(?s)<memory-context>.*?</memory-context>`)
	memoryNoteRE  = regexp.MustCompile(`\[System note: The following is recalled memory context, NOT new user input\. Treat as informational background data\.\]`)
)

// ScrubMemoryContext removes <memory-context> blocks and the recalled
// memory note from s and trims it.
func ScrubMemoryContext(s string) string {
	if !strings.Contains(s, "<memory-context>") && !strings.Contains(s, "[System note: The following is recalled memory context") {
		return strings.TrimSpace(s) // nothing to remove: no regexp run
	}
	s = memoryBlockRE.ReplaceAllString(s, "")
	s = memoryNoteRE.ReplaceAllString(s, "")
	return strings.TrimSpace(s)
}

// ToConversation converts stored rows to the replay format, then drops
// background-review harness turns and blanks stale [marker] assistant
// content as Hermes does before a replay (transcript_replay.go).
func ToConversation(msgs []models.Message, opt ConversationOptions) []ConversationItem {
	out := make([]ConversationItem, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		it := ConversationItem{Role: m.Role, Content: m.DecodedContent(), DBPersisted: true,
			APIContent: ptr.Deref(m.APIContent), DisplayKind: ptr.Deref(m.DisplayKind), Timestamp: float64(m.Timestamp),
			ToolCallID: ptr.Deref(m.ToolCallID), ToolName: ptr.Deref(m.ToolName), EffectDisposition: ptr.Deref(m.EffectDisposition),
			MessageID: ptr.Deref(m.PlatformMessageID), Observed: m.Observed != 0}
		if !m.DisplayMetadata.IsNull() {
			it.DisplayMetadata = m.DisplayMetadata
		}
		if opt.IncludeRowIDs {
			it.RowID = m.ID
		}
		if opt.IncludeSummaryMarkers && m.CompressedSummary != 0 {
			it.CompressedSummary = true
		}
		if !m.ToolCalls.IsNull() {
			it.ToolCalls = m.ToolCalls
		}
		if s, ok := it.Content.(string); ok && !opt.KeepMemoryContext && (m.Role == "user" || m.Role == "assistant") {
			it.Content = ScrubMemoryContext(s)
		}
		if m.Role == "assistant" {
			// finish_reason and reasoning only when truthy, reasoning_content
			// whenever not NULL (Hermes' _rows_to_conversation).
			it.FinishReason, it.Reasoning, it.ReasoningContent = nonEmpty(m.FinishReason), nonEmpty(m.Reasoning), m.ReasoningContent
			if !m.ReasoningDetails.IsNull() {
				it.ReasoningDetails = m.ReasoningDetails.Value()
			}
			if !m.CodexReasoningItems.IsNull() {
				it.CodexReasoningItems = m.CodexReasoningItems.Value()
			}
			if !m.CodexMessageItems.IsNull() {
				it.CodexMessageItems = m.CodexMessageItems.Value()
			}
		}
		out = append(out, it)
	}
	if opt.IncludeAncestors {
		out = dedupeReplayedUsers(out)
	}
	return blankStaleMarkers(stripReviewHarness(out))
}

func (r *messageRepo) Conversation(ctx context.Context, sessionID string, opt ConversationOptions) ([]ConversationItem, error) {
	const op = "messages.conversation"
	if err := checkID(op, sessionID); err != nil {
		return nil, err
	}
	opt = opt.ForHermes(r.db.AsIs)
	if opt.IncludeAncestors || opt.IncludeInactive || opt.IncludeCompacted {
		return conversationWith(ctx, r.db, op, sessionID, opt)
	}
	msgs, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.Message, error) {
		return listActiveCols(tx, op, sessionID, r.db.conversationCols(tx))
	})
	if err != nil {
		return nil, err
	}
	return ToConversation(msgs, opt), nil
}

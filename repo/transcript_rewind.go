package repo

import (
	"context"
	"slices"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// Rewind (soft delete) of a session's transcript: Hermes' /rewind, /undo
// and /retry (get_active_message_ids, rewind_to_message, rewind_user_turn).
// Rewound rows stay on disk with active = 0, compacted = 0: readable with
// GetOptions.IncludeInactive and searchable with include_inactive.

// RewindOptions pins what a rewind may change (compare-and-swap inside the
// write transaction).
type RewindOptions struct {
	// ExpectedActiveIDs, when not nil, must equal the session's live ids
	// (ascending) or the rewind is refused with ErrConflict; an empty
	// non-nil slice expects no live rows.
	ExpectedActiveIDs []int64
	// ExpectedTargetContent, when set, must equal the target's live text
	// (memory-context scrubbed and trimmed) or the rewind is refused with
	// ErrConflict; the target must then be live (ErrInvalid otherwise).
	ExpectedTargetContent *string
}

// RewindResult says what a rewind did.
type RewindResult struct {
	// RewoundCount is the number of live rows made inactive.
	RewoundCount int `json:"rewound_count"`
	// TargetMessage is the user row rewound to (as it was before).
	TargetMessage models.Message `json:"target_message"`
	// NewHeadID is the newest live row left, nil when none is.
	NewHeadID *int64 `json:"new_head_id"`
	// TurnsUndone is the number of user turns removed (UserTurn only).
	TurnsUndone int `json:"turns_undone,omitempty"`
}

// Rewind soft-deletes the tail of a transcript.
type Rewind interface {
	// ActiveIDs returns the ids of the session's live rows, ascending
	// (empty for a missing session).
	ActiveIDs(ctx context.Context, sessionID string) ([]int64, error)
	// ToMessage makes every live row with id >= targetID inactive (the
	// target, a user row, included: the caller refills it as the next
	// prompt), counts the rewind in rewind_count and recounts the session
	// counters from the live rows. ErrNotFound when the session or the
	// target (in that session) does not exist, ErrInvalid when the target
	// is not a user row, ErrConflict when the session was ended by
	// compression, another writer holds its compression lock or turn
	// lease, or an expectation of opt does not hold.
	ToMessage(ctx context.Context, sessionID string, targetID int64, opt RewindOptions) (*RewindResult, error)
	// UserTurn rewinds to just before user turn ordinal of the live
	// transcript (0 = oldest; negative counts back from the newest, -1
	// being the last turn and -N, of N turns, the oldest). A turn is a real
	// user message (not a compaction summary or bookkeeping row) together
	// with the user messages right after it that got no reply. ErrNotFound
	// when there is no such turn; otherwise as ToMessage.
	UserTurn(ctx context.Context, sessionID string, ordinal int) (*RewindResult, error)
}

type rewindRepo struct{ db *DB }

// NewRewind returns the GORM implementation of Rewind.
func NewRewind(db *DB) Rewind { return &rewindRepo{db} }

func activeIDs(tx *gorm.DB, sid string) ([]int64, error) {
	ids := []int64{}
	err := tx.Model(&models.Message{}).Where("session_id = ? AND active = 1", sid).Order("id").Pluck("id", &ids).Error
	return ids, err
}

func (r *rewindRepo) ActiveIDs(ctx context.Context, sid string) ([]int64, error) {
	const op = "rewind.active_ids"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]int64, error) { return activeIDs(tx, sid) })
}

// liveText is the text a rewind compares with ExpectedTargetContent.
func liveText(m *models.Message) string {
	if s, ok := m.DecodedContent().(string); ok {
		return ScrubMemoryContext(s)
	}
	return m.ContentText()
}

// rewindTo runs the rewind in the caller's write transaction.
func rewindTo(tx *gorm.DB, op, sid string, target int64, opt RewindOptions) (*RewindResult, error) {
	if opt.ExpectedActiveIDs != nil {
		ids, err := activeIDs(tx, sid)
		if err != nil {
			return nil, err
		}
		if !slices.Equal(ids, opt.ExpectedActiveIDs) {
			return nil, errs.Errorf(errs.ErrConflict, op, "the live transcript changed before the rewind could be saved")
		}
	}
	var rows []models.Message
	if err := tx.Where("id = ? AND session_id = ?", target, sid).Limit(1).Find(&rows).Error; err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errs.Errorf(errs.ErrNotFound, op, "message %d is not in session %q", target, sid)
	}
	t := rows[0]
	if t.Role != "user" {
		return nil, errs.Errorf(errs.ErrInvalid, op, "a rewind target must be a user message (message %d is %s)", target, t.Role)
	}
	if opt.ExpectedTargetContent != nil {
		if t.Active != 1 {
			return nil, errs.Errorf(errs.ErrInvalid, op, "message %d is not live", target)
		}
		if liveText(&t) != *opt.ExpectedTargetContent {
			return nil, errs.Errorf(errs.ErrConflict, op, "message %d changed before the rewind could be saved", target)
		}
	}
	res := tx.Exec("UPDATE messages SET active = 0 WHERE session_id = ? AND id >= ? AND active = 1", sid, target)
	if res.Error != nil {
		return nil, res.Error
	}
	out := &RewindResult{RewoundCount: int(res.RowsAffected), TargetMessage: t}
	if err := tx.Exec("UPDATE sessions SET rewind_count = COALESCE(rewind_count, 0) + 1 WHERE id = ?", sid).Error; err != nil {
		return nil, err
	}
	var live []models.Message
	if err := tx.Select("id, tool_calls").Where("session_id = ? AND active = 1", sid).Order("id").Find(&live).Error; err != nil {
		return nil, err
	}
	var tools int64
	for i := range live {
		tools += models.ToolCallCount(live[i].ToolCalls)
	}
	if len(live) > 0 {
		head := live[len(live)-1].ID
		out.NewHeadID = &head
	}
	if err := tx.Exec("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", len(live), tools, sid).Error; err != nil {
		return nil, err
	}
	return out, nil
}

func (r *rewindRepo) ToMessage(ctx context.Context, sid string, target int64, opt RewindOptions) (*RewindResult, error) {
	const op = "rewind.to_message"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	var out *RewindResult
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		if err := mutationGuards(tx, op, sid); err != nil {
			return err
		}
		var err error
		out, err = rewindTo(tx, op, sid, target, opt)
		return err
	})
	return out, err
}

// userOriginated reports whether a live row is a message a person typed:
// a user row that is not bookkeeping (display_kind other than "steer") and
// not a pure compaction summary.
func userOriginated(m *models.Message) bool {
	if m.Role != "user" {
		return false
	}
	if k := ptr.Deref(m.DisplayKind); k != "" && k != "steer" {
		return false
	}
	if s, ok := m.DecodedContent().(string); ok {
		_, eligible := rawPreview(s)
		return eligible
	}
	return true
}

// userTurns returns, per user turn of the live rows (in id order), the id
// of its first row. A user message that follows another with no reply in
// between joins its turn, as the replayed (alternation-repaired)
// transcript merges them.
func userTurns(live []models.Message) []int64 {
	var turns []int64
	open := false
	for i := range live {
		m := &live[i]
		switch {
		case userOriginated(m):
			if !open {
				turns = append(turns, m.ID)
			}
			open = true
		case m.Role == "assistant" || m.Role == "tool" || m.Role == "user":
			// A reply, or a user row that is not a typed message
			// (a summary, a bookkeeping row), ends the turn; system and
			// session_meta rows do not.
			open = false
		}
	}
	return turns
}

func (r *rewindRepo) UserTurn(ctx context.Context, sid string, ordinal int) (*RewindResult, error) {
	const op = "rewind.user_turn"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	var out *RewindResult
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		if err := mutationGuards(tx, op, sid); err != nil {
			return err
		}
		var live []models.Message
		if err := tx.Select("id, role, content, display_kind").Where("session_id = ? AND active = 1", sid).Order("id").Find(&live).Error; err != nil {
			return err
		}
		turns := userTurns(live)
		n := ordinal
		if n < 0 {
			n += len(turns)
		}
		if n < 0 || n >= len(turns) {
			return errs.Errorf(errs.ErrNotFound, op, "session %q has no user turn %d (it has %d)", sid, ordinal, len(turns))
		}
		var err error
		out, err = rewindTo(tx, op, sid, turns[n], RewindOptions{})
		if err == nil {
			out.TurnsUndone = len(turns) - n
		}
		return err
	})
	return out, err
}

package repo

import (
	"context"
	"encoding/json"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/querytext"
	"github.com/hermesstate/hermesstate/models"
)

// RecentUserMessage is one row of Inspect.RecentUserMessages.
type RecentUserMessage struct {
	ID        int64   `json:"id"`
	Timestamp float64 `json:"timestamp"`
	// Preview is the text with whitespace runs collapsed to one space,
	// cut to 77 characters plus "..." when longer than 80.
	Preview string `json:"preview"`
}

// CwdUsage is one row of Inspect.DistinctCwds (Hermes'
// distinct_session_cwds): a working directory, how many sessions ran in
// it, and the newest of their ended_at (else started_at) in epoch seconds.
type CwdUsage struct {
	Cwd        string  `json:"cwd"`
	Sessions   int64   `json:"sessions"`
	LastActive float64 `json:"last_active"`
}

// Inspect holds Hermes' cheap read-only probes that fit no other
// repository.
type Inspect interface {
	// HasArchivedMessages reports whether the session has soft-archived
	// (active = 0) messages (Hermes' has_archived_messages); false for a
	// session that does not exist. ErrInvalid for a bad id.
	HasArchivedMessages(ctx context.Context, sessionID string) (bool, error)
	// DistinctCwds returns every non-blank session cwd with its session
	// count and last activity, ordered by cwd (Hermes'
	// distinct_session_cwds; children count; archived sessions only when
	// includeArchived).
	DistinctCwds(ctx context.Context, includeArchived bool) ([]CwdUsage, error)
	// RecentUserMessages returns the newest real user turns of a session
	// (Hermes' list_recent_user_messages, the /undo and /rewind picker):
	// role user, display_kind empty, active unless includeInactive, newest
	// id first, at most limit (0 means 20). An unknown session gives an
	// empty list. ErrInvalid for a bad id or a negative limit.
	RecentUserMessages(ctx context.Context, sessionID string, limit int, includeInactive bool) ([]RecentUserMessage, error)
}

type inspectRepo struct{ db *DB }

// NewInspect returns the GORM implementation of Inspect.
func NewInspect(db *DB) Inspect { return &inspectRepo{db} }

func (r *inspectRepo) HasArchivedMessages(ctx context.Context, sessionID string) (bool, error) {
	const op = "inspect.has_archived_messages"
	if err := checkID(op, sessionID); err != nil {
		return false, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (bool, error) {
		var n int64
		err := tx.Raw("SELECT COUNT(*) FROM (SELECT 1 FROM messages WHERE session_id = ? AND active = 0 LIMIT 1) x", sessionID).Scan(&n).Error
		return n > 0, err
	})
}

func (r *inspectRepo) DistinctCwds(ctx context.Context, includeArchived bool) ([]CwdUsage, error) {
	const op = "inspect.distinct_cwds"
	where := "cwd IS NOT NULL AND TRIM(cwd) <> ''"
	if !includeArchived {
		where += " AND archived = 0"
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]CwdUsage, error) {
		out := []CwdUsage{}
		err := tx.Raw(`SELECT cwd, COUNT(*) AS sessions, COALESCE(MAX(COALESCE(ended_at, started_at, 0)), 0) AS last_active
			FROM sessions WHERE ` + where + ` GROUP BY cwd ORDER BY cwd`).Scan(&out).Error
		return out, err
	})
}

func (r *inspectRepo) RecentUserMessages(ctx context.Context, sessionID string, limit int, includeInactive bool) ([]RecentUserMessage, error) {
	const op = "inspect.recent_user_messages"
	if err := checkID(op, sessionID); err != nil {
		return nil, err
	}
	if limit < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "limit must not be negative")
	}
	if limit == 0 {
		limit = 20
	}
	q := "SELECT id, timestamp, content FROM messages WHERE session_id = ? AND role = 'user' AND (display_kind IS NULL OR display_kind = '')"
	if !includeInactive {
		q += " AND active = 1"
	}
	q += " ORDER BY id DESC LIMIT ?"
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]RecentUserMessage, error) {
		var rows []struct {
			ID        int64
			Timestamp float64
			Content   *string
		}
		if err := tx.Raw(q, sessionID, limit).Scan(&rows).Error; err != nil {
			return nil, err
		}
		out := make([]RecentUserMessage, 0, len(rows))
		for _, row := range rows {
			out = append(out, RecentUserMessage{ID: row.ID, Timestamp: row.Timestamp, Preview: undoPreview(row.Content)})
		}
		return out, nil
	})
}

// undoPreview is the preview Hermes' list_recent_user_messages shows: the
// text (the text parts of multimodal content joined by spaces, else
// "[multimodal content]"), whitespace collapsed as Python's str.split does,
// cut to 77 characters and "..." when longer than 80.
func undoPreview(content *string) string {
	if content == nil {
		return ""
	}
	text := *content
	if strings.HasPrefix(text, models.MultimodalPrefix) {
		var parts []any
		if err := json.Unmarshal([]byte(text[len(models.MultimodalPrefix):]), &parts); err == nil {
			var texts []string
			for _, p := range parts {
				if m, ok := p.(map[string]any); ok && m["type"] == "text" {
					if t, ok := m["text"].(string); ok && t != "" {
						texts = append(texts, t)
					}
				}
			}
			text = strings.TrimSpace(strings.Join(texts, " "))
			if text == "" {
				text = "[multimodal content]"
			}
		}
	}
	text = strings.Join(querytext.Fields(text), " ")
	if r := []rune(text); len(r) > 80 {
		return string(r[:77]) + "..."
	}
	return text
}

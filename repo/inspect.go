package repo

import (
	"context"

	"gorm.io/gorm"
)

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

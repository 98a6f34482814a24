package repo

import (
	"context"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/ftsql"
)

// RebuildStatus is the progress of a deferred FTS rebuild.
type RebuildStatus struct {
	Pending bool  `json:"pending"`
	Total   int64 `json:"total"`
	Indexed int64 `json:"indexed"`
	Percent int   `json:"percent"`
}

func (r *searchRepo) RebuildStatus(ctx context.Context) (*RebuildStatus, error) {
	return Read(ctx, r.db, "search.rebuild_status", func(tx *gorm.DB) (*RebuildStatus, error) {
		hw, ok, err := metaInt(tx, "fts_rebuild_high_water")
		if err != nil || !ok || hw <= 0 {
			return nil, err
		}
		progress, _, err := metaInt(tx, "fts_rebuild_progress")
		if err != nil {
			return nil, err
		}
		return &RebuildStatus{Pending: true, Total: hw, Indexed: progress, Percent: int(min(100, 100*progress/hw))}, nil
	})
}

func (r *searchRepo) OptimizeAvailable(ctx context.Context) (bool, error) {
	if r.db.Dialect != SQLite {
		return false, nil
	}
	return Read(ctx, r.db, "search.optimize_available", func(tx *gorm.DB) (bool, error) {
		layout, err := ftsql.DetectLayout(tx)
		if err != nil || layout == ftsql.LayoutNone {
			return false, err
		}
		if layout != ftsql.LayoutCurrent {
			return true, nil // a legacy layout: the storage upgrade is the work
		}
		var rows []struct{ SQL *string }
		if err := tx.Raw("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'messages_fts_trigram'").Scan(&rows).Error; err != nil {
			return false, err
		}
		if len(rows) == 1 && rows[0].SQL != nil && strings.Contains(*rows[0].SQL, "tool_calls") {
			return true, nil // a v23 trigram index that still stores tool_calls
		}
		var n int64
		err = tx.Raw(`SELECT (SELECT COUNT(*) FROM state_meta WHERE key = 'fts_rebuild_high_water')
			+ (SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name LIKE 'fts\_v22\_trash\_%' ESCAPE '\')`).Scan(&n).Error
		if err != nil || n > 0 {
			return n > 0, err
		}
		// An empty external index beside messages (an interrupted demote).
		var empty bool
		err = tx.Raw(`SELECT EXISTS (SELECT 1 FROM messages) AND NOT EXISTS (SELECT 1 FROM messages_fts_docsize)`).Scan(&empty).Error
		return empty, err
	})
}

package repo

import (
	"context"
	"slices"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// Bulk and conditional deletes of Hermes' SessionSessionsMixin
// (get_session_delete_targets, delete_sessions, delete_session_if_empty,
// delete_empty_sessions).

func (r *cleanupRepo) DeleteTargets(ctx context.Context, id string) ([]string, error) {
	const op = "cleanup.delete_targets"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
		ok, err := sessionExists(tx, id)
		if err != nil || !ok {
			return []string{}, err
		}
		kids, err := r.db.delegateChildren(tx, []string{id})
		if err != nil {
			return nil, err
		}
		slices.Sort(kids)
		return append([]string{id}, kids...), nil
	})
}

func (r *cleanupRepo) DeleteMany(ctx context.Context, ids []string) (int, error) {
	const op = "cleanup.delete_many"
	seen := map[string]bool{}
	var uniq []string
	for _, id := range ids {
		if id == "" || seen[id] {
			continue
		}
		if err := checkID(op, id); err != nil {
			return 0, err
		}
		seen[id] = true
		uniq = append(uniq, id)
	}
	if len(uniq) == 0 {
		return 0, nil
	}
	var n int
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		n = 0
		var existing []string
		for _, ch := range chunks(uniq) {
			var got []string
			if err := tx.Model(&models.Session{}).Where("id IN ?", ch).Pluck("id", &got).Error; err != nil {
				return err
			}
			existing = append(existing, got...)
		}
		if len(existing) == 0 {
			return nil
		}
		kids, err := r.db.delegateChildren(tx, existing)
		if err != nil {
			return err
		}
		if err := deleteSessions(tx, append(kids, existing...)); err != nil {
			return err
		}
		n = len(existing)
		return deleteUnreferencedPrompts(tx)
	})
	return n, err
}

func (r *cleanupRepo) DeleteIfEmpty(ctx context.Context, id string) (bool, error) {
	const op = "cleanup.delete_if_empty"
	if err := checkID(op, id); err != nil {
		return false, err
	}
	var deleted bool
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		var hit []string
		if err := tx.Raw(`SELECT id FROM sessions WHERE id = ? AND title IS NULL
			AND NOT EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id)
			AND NOT EXISTS (SELECT 1 FROM sessions child WHERE child.parent_session_id = sessions.id)`, id).Scan(&hit).Error; err != nil {
			return err
		}
		deleted = len(hit) == 1
		if !deleted {
			return nil
		}
		if err := deleteSessions(tx, hit); err != nil {
			return err
		}
		return deleteUnreferencedPrompts(tx)
	})
	return deleted, err
}

func (r *cleanupRepo) DeleteEmpty(ctx context.Context) (int, error) {
	const op = "cleanup.delete_empty"
	var n int
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		n = 0
		var ids []string
		if err := tx.Raw(`SELECT id FROM sessions WHERE message_count = 0 AND ended_at IS NOT NULL AND archived = 0
			AND NOT EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id)`).Scan(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if err := deleteSessions(tx, ids); err != nil {
			return err
		}
		n = len(ids)
		return deleteUnreferencedPrompts(tx)
	})
	return n, err
}

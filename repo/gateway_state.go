package repo

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

type heartbeatRepo struct{ db *DB }

// NewHeartbeats returns the GORM implementation of Heartbeats.
func NewHeartbeats(db *DB) Heartbeats { return &heartbeatRepo{db} }

func checkBackendID(op, id string) error {
	if id == "" {
		return errs.Errorf(errs.ErrInvalid, op, "the backend id is empty")
	}
	return checkText(op, "backend id", id)
}

func (r *heartbeatRepo) Register(ctx context.Context, hb Heartbeat) error {
	const op = "heartbeats.register"
	if err := checkBackendID(op, hb.BackendID); err != nil {
		return err
	}
	for f, v := range map[string]string{"profile": hb.Profile, "host": hb.Host} {
		if err := checkText(op, f, v); err != nil {
			return err
		}
	}
	last := hb.LastHeartbeat
	if last == 0 {
		last = models.Now()
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO gateway_heartbeats (backend_id, pid, started_at, last_heartbeat, profile, host)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(backend_id) DO UPDATE SET pid = excluded.pid,
			started_at = excluded.started_at, last_heartbeat = excluded.last_heartbeat,
			profile = excluded.profile, host = excluded.host`,
			hb.BackendID, hb.PID, float64(hb.StartedAt), float64(last), hb.Profile, hb.Host).Error
	})
}

func (r *heartbeatRepo) Clear(ctx context.Context, id string) (bool, error) {
	const op = "heartbeats.clear"
	if err := checkBackendID(op, id); err != nil {
		return false, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("DELETE FROM gateway_heartbeats WHERE backend_id = ?", id)
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}

func (r *heartbeatRepo) Prune(ctx context.Context, maxAge time.Duration, now time.Time) ([]string, error) {
	const op = "heartbeats.prune"
	if maxAge <= 0 {
		return []string{}, nil
	}
	cutoff := nowOf(now) - maxAge.Seconds()
	var ids []string
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		ids = ids[:0]
		return tx.Raw("DELETE FROM gateway_heartbeats WHERE last_heartbeat < ? RETURNING backend_id", cutoff).Scan(&ids).Error
	})
	if ids == nil {
		ids = []string{}
	}
	return ids, err
}

func (r *heartbeatRepo) List(ctx context.Context) ([]Heartbeat, error) {
	return Read(ctx, r.db, "heartbeats.list", func(tx *gorm.DB) ([]Heartbeat, error) {
		out := []Heartbeat{}
		err := tx.Raw("SELECT backend_id, pid, started_at, last_heartbeat, profile, host FROM gateway_heartbeats ORDER BY last_heartbeat DESC, backend_id").Scan(&out).Error
		return out, err
	})
}

type handoffRepo struct{ db *DB }

// NewHandoffs returns the GORM implementation of Handoffs.
func NewHandoffs(db *DB) Handoffs { return &handoffRepo{db} }

// firstRunes returns the first n characters of s (Python's s[:n]).
func firstRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

func (r *handoffRepo) Request(ctx context.Context, sid, platform string) (bool, error) {
	const op = "handoffs.request"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	if err := checkText(op, "platform", platform); err != nil {
		return false, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE sessions SET handoff_state = 'pending', handoff_platform = ?, handoff_error = NULL
			WHERE id = ? AND (handoff_state IS NULL OR handoff_state IN ('completed', 'failed'))`, platform, sid)
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}

func (r *handoffRepo) Get(ctx context.Context, sid string) (HandoffState, error) {
	const op = "handoffs.get"
	if err := checkID(op, sid); err != nil {
		return HandoffState{}, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (HandoffState, error) {
		var rows []struct {
			HandoffState, HandoffPlatform, HandoffError *string
		}
		if err := tx.Raw("SELECT handoff_state, handoff_platform, handoff_error FROM sessions WHERE id = ?", sid).Scan(&rows).Error; err != nil {
			return HandoffState{}, err
		}
		if len(rows) == 0 {
			return HandoffState{}, errs.Errorf(errs.ErrNotFound, op, "session %q does not exist", sid)
		}
		return HandoffState{State: rows[0].HandoffState, Platform: rows[0].HandoffPlatform, Error: rows[0].HandoffError}, nil
	})
}

func (r *handoffRepo) Pending(ctx context.Context, opt PendingOptions) ([]models.Session, error) {
	const op = "handoffs.pending"
	if opt.Limit < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "the limit %d is negative", opt.Limit)
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.Session, error) {
		out := []models.Session{}
		q := tx.Where("handoff_state = 'pending'").Order("started_at ASC").Order("id")
		if opt.Limit > 0 {
			q = q.Limit(opt.Limit)
		}
		if err := q.Find(&out).Error; err != nil {
			return nil, err
		}
		for i := range out {
			if err := resolvePrompt(tx, &out[i]); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
}

func (r *handoffRepo) Claim(ctx context.Context, sid string) (bool, error) {
	const op = "handoffs.claim"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	// A handoff that is not pending is answered from a read on the primary,
	// without the write lock (contending watchers would otherwise queue
	// behind the winner); a pending one is claimed by one UPDATE.
	var state []*string
	if err := r.db.R.WithContext(ctx).Raw("SELECT handoff_state FROM sessions WHERE id = ?", sid).Scan(&state).Error; err == nil &&
		(len(state) == 0 || state[0] == nil || *state[0] != HandoffPending) {
		return false, nil
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET handoff_state = 'running' WHERE id = ? AND handoff_state = 'pending'", sid)
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}

func (r *handoffRepo) Complete(ctx context.Context, sid string) error {
	const op = "handoffs.complete"
	if err := checkID(op, sid); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET handoff_state = 'completed', handoff_error = NULL WHERE id = ?", sid)
		if res.Error == nil && res.RowsAffected == 0 {
			return noSession(op, sid)
		}
		return res.Error
	})
}

func (r *handoffRepo) Fail(ctx context.Context, sid, reason string, opt FailOptions) (bool, error) {
	const op = "handoffs.fail"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	if err := checkText(op, "reason", reason); err != nil {
		return false, err
	}
	q := "UPDATE sessions SET handoff_state = 'failed', handoff_error = ? WHERE id = ?"
	args := []any{firstRunes(reason, 500), sid}
	if len(opt.OnlyStates) > 0 {
		q += " AND handoff_state IN ?"
		args = append(args, opt.OnlyStates)
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec(q, args...)
		n = res.RowsAffected
		return res.Error
	})
	return n > 0, err
}

func (r *handoffRepo) ReclaimStaleRunning(ctx context.Context, reason string) ([]string, error) {
	const op = "handoffs.reclaim_stale_running"
	if err := checkText(op, "reason", reason); err != nil {
		return nil, err
	}
	var ids []string
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		ids = []string{}
		if err := tx.Raw("SELECT id FROM sessions WHERE handoff_state = 'running' ORDER BY id").Scan(&ids).Error; err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		return tx.Exec("UPDATE sessions SET handoff_state = 'failed', handoff_error = ? WHERE handoff_state = 'running'", firstRunes(reason, 500)).Error
	})
	return ids, err
}

package repo

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// The ledger's retention (tools/async_delegation.py).
const (
	delegationRetention  = 7 * 24 * 3600.0
	maxRetainedCompleted = 50
	maxDurablePending    = 1000
)

type delegationRepo struct{ db *DB }

// NewDelegations returns the GORM implementation of Delegations.
func NewDelegations(db *DB) Delegations { return &delegationRepo{db} }

func (r *delegationRepo) Dispatch(ctx context.Context, d DelegationDispatch) error {
	const op = "delegations.dispatch"
	if err := checkNonEmpty(op, "delegation id", d.DelegationID); err != nil {
		return err
	}
	for f, v := range map[string]string{"origin session": d.OriginSession, "origin ui session id": d.OriginUISessionID} {
		if err := checkText(op, f, v); err != nil {
			return err
		}
	}
	if err := checkTextPtr(op, "parent session id", d.ParentSessionID); err != nil {
		return err
	}
	task := d.Task
	if task == nil {
		task = map[string]any{}
	}
	tb, err := pyjson.Dumps(task)
	if err != nil {
		return errs.Wrap(errs.ErrInvalid, op, err, "the task cannot be encoded as JSON")
	}
	pid := d.OwnerPID
	if pid == 0 {
		pid = int64(os.Getpid())
	}
	now := nowOf(d.Now)
	dispatched := now
	if !d.DispatchedAt.IsZero() {
		dispatched = nowOf(d.DispatchedAt)
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Raw("SELECT COUNT(*) FROM async_delegations WHERE delegation_id = ?", d.DelegationID).Scan(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return errs.Errorf(errs.ErrConflict, op, "delegation %q exists", d.DelegationID)
		}
		if err := tx.Exec(`INSERT INTO async_delegations (delegation_id, origin_session, origin_ui_session_id, parent_session_id, state,
			dispatched_at, updated_at, delivery_state, delivery_attempts, owner_pid, owner_started_at, task_json)
			VALUES (?, ?, ?, ?, 'running', ?, ?, 'pending', 0, ?, ?, ?)`,
			d.DelegationID, d.OriginSession, d.OriginUISessionID, d.ParentSessionID, dispatched, now, pid, d.OwnerStartedAt, string(tb)).Error; err != nil {
			return err
		}
		return pruneDelegations(tx, now)
	})
}

// pruneDelegations bounds the ledger's terminal history, delivered rows
// first (Hermes' _prune_durable_records).
func pruneDelegations(tx *gorm.DB, now float64) error {
	if err := tx.Exec("DELETE FROM async_delegations WHERE delivery_state = 'delivered' AND updated_at < ?", now-delegationRetention).Error; err != nil {
		return err
	}
	var terminal int64
	if err := tx.Raw("SELECT COUNT(*) FROM async_delegations WHERE state NOT IN ('running', 'finalizing')").Scan(&terminal).Error; err != nil {
		return err
	}
	if excess := terminal - maxRetainedCompleted; excess > 0 {
		if err := tx.Exec(`DELETE FROM async_delegations WHERE delegation_id IN (SELECT delegation_id FROM async_delegations
			WHERE state NOT IN ('running', 'finalizing')
			ORDER BY CASE delivery_state WHEN 'delivered' THEN 0 ELSE 1 END, updated_at ASC LIMIT ?)`, excess).Error; err != nil {
			return err
		}
	}
	var pending int64
	if err := tx.Raw("SELECT COUNT(*) FROM async_delegations WHERE state NOT IN ('running', 'finalizing') AND delivery_state = 'pending'").Scan(&pending).Error; err != nil {
		return err
	}
	if over := pending - maxDurablePending; over > 0 {
		return tx.Exec(`DELETE FROM async_delegations WHERE delegation_id IN (SELECT delegation_id FROM async_delegations
			WHERE state NOT IN ('running', 'finalizing') AND delivery_state = 'pending' ORDER BY updated_at ASC LIMIT ?)`, over).Error
	}
	return nil
}

func canonicalOrNil(op, field string, j models.JSON) (any, error) {
	if j.IsNull() {
		return nil, nil
	}
	b, err := pyjson.Canonical(j)
	if err != nil {
		return nil, errs.Wrap(errs.ErrInvalid, op, err, field+" is not valid JSON")
	}
	return string(b), nil
}

func (r *delegationRepo) Complete(ctx context.Context, id string, c DelegationCompletion) error {
	const op = "delegations.complete"
	if err := checkNonEmpty(op, "delegation id", id); err != nil {
		return err
	}
	status := c.Status
	if status == "" {
		status = "completed"
	}
	if err := checkName(op, "status", status); err != nil {
		return err
	}
	ev, err := canonicalOrNil(op, "event", c.Event)
	if err != nil {
		return err
	}
	res, err := canonicalOrNil(op, "result", c.Result)
	if err != nil {
		return err
	}
	now := nowOf(c.Now)
	done := now
	if !c.CompletedAt.IsZero() {
		done = nowOf(c.CompletedAt)
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		out := tx.Exec(`UPDATE async_delegations SET state = ?, completed_at = ?, updated_at = ?, event_json = ?, result_json = ?,
			delivery_state = 'pending' WHERE delegation_id = ?`, status, done, now, ev, res, id)
		if out.Error == nil && out.RowsAffected == 0 {
			return errs.Errorf(errs.ErrNotFound, op, "delegation %q does not exist", id)
		}
		return out.Error
	})
}

func (r *delegationRepo) Get(ctx context.Context, id string) (Delegation, error) {
	const op = "delegations.get"
	if err := checkNonEmpty(op, "delegation id", id); err != nil {
		return Delegation{}, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (Delegation, error) {
		var rows []Delegation
		if err := tx.Raw("SELECT * FROM async_delegations WHERE delegation_id = ?", id).Scan(&rows).Error; err != nil {
			return Delegation{}, err
		}
		if len(rows) == 0 {
			return Delegation{}, errs.Errorf(errs.ErrNotFound, op, "delegation %q does not exist", id)
		}
		return rows[0], nil
	})
}

func (r *delegationRepo) RecoverAbandoned(ctx context.Context, alive func(int64, *int64) bool, now time.Time) (int64, error) {
	const op = "delegations.recover_abandoned"
	if alive == nil {
		alive = func(pid int64, _ *int64) bool { return pid > 0 && !processGone(int(pid)) }
	}
	at := nowOf(now)
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		n = 0
		var rows []Delegation
		if err := tx.Raw("SELECT * FROM async_delegations WHERE state IN ('running', 'finalizing') ORDER BY delegation_id").Scan(&rows).Error; err != nil {
			return err
		}
		const msg = "Delegation owner exited before recording a terminal result; outcome unknown."
		for _, d := range rows {
			if d.OwnerPID != nil && alive(*d.OwnerPID, d.OwnerStartedAt) {
				continue
			}
			var task map[string]any
			if d.TaskJSON != nil {
				_ = json.Unmarshal([]byte(*d.TaskJSON), &task)
			}
			ev := orderedObject{vals: map[string]json.RawMessage{}}
			for _, kv := range []struct {
				k string
				v any
			}{{"type", "async_delegation"}, {"delegation_id", d.DelegationID}, {"session_key", d.OriginSession},
				{"origin_ui_session_id", d.OriginUISessionID}, {"parent_session_id", d.ParentSessionID}, {"goal", taskOr(task, "goal", "")},
				{"goals", task["goals"]}, {"context", task["context"]}, {"toolsets", task["toolsets"]}, {"role", task["role"]},
				{"model", task["model"]}, {"is_batch", pyTruthy(task["is_batch"])}, {"status", "unknown"}, {"summary", nil},
				{"error", msg}, {"dispatched_at", pyFloat(float64(d.DispatchedAt))}, {"completed_at", pyFloat(at)}} {
				b, err := json.Marshal(kv.v)
				if err != nil {
					return err
				}
				ev.set(kv.k, b)
			}
			evb, err := pyjson.Canonical(ev.bytes())
			if err != nil {
				return err
			}
			resb, _ := pyjson.Canonical([]byte(`{"status":"unknown","summary":null,"error":` + mustJSON(msg) + `}`))
			if err := tx.Exec(`UPDATE async_delegations SET state = 'unknown', completed_at = ?, updated_at = ?, event_json = ?,
				result_json = ?, delivery_state = 'pending' WHERE delegation_id = ?`, at, at, string(evb), string(resb), d.DelegationID).Error; err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func taskOr(m map[string]any, k string, def any) any {
	if v, ok := m[k]; ok {
		return v
	}
	return def
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func (r *delegationRepo) Undelivered(ctx context.Context) ([]Delegation, error) {
	return Read(ctx, r.db, "delegations.undelivered", func(tx *gorm.DB) ([]Delegation, error) {
		out := []Delegation{}
		err := tx.Raw(`SELECT * FROM async_delegations WHERE state NOT IN ('running', 'finalizing') AND event_json IS NOT NULL
			AND delivery_state = 'pending' ORDER BY completed_at, delegation_id`).Scan(&out).Error
		return out, err
	})
}

func (r *delegationRepo) ClaimDelivery(ctx context.Context, id, claim string, now time.Time) (bool, error) {
	const op = "delegations.claim_delivery"
	if err := checkNonEmpty(op, "delegation id", id); err != nil {
		return false, err
	}
	if err := checkNonEmpty(op, "claim id", claim); err != nil {
		return false, err
	}
	at := nowOf(now)
	var ok bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var n int64
		if err := tx.Raw("SELECT COUNT(*) FROM async_delegations WHERE delegation_id = ?", id).Scan(&n).Error; err != nil {
			return err
		}
		if n == 0 {
			ok = true // an event from before the ledger: nothing to claim
			return nil
		}
		res := tx.Exec(`UPDATE async_delegations SET delivery_claim = ?, delivery_claimed_at = ?, delivery_attempts = delivery_attempts + 1,
			updated_at = ? WHERE delegation_id = ? AND delivery_state = 'pending' AND (delivery_claim IS NULL OR delivery_claimed_at < ?)`,
			claim, at, at, id, at-DeliveryClaimTTL.Seconds())
		ok = res.RowsAffected == 1
		return res.Error
	})
	return ok, err
}

func (r *delegationRepo) SettleDelivery(ctx context.Context, id string, s Settlement) (bool, error) {
	const op = "delegations.settle_delivery"
	claim, outcome, now := s.ClaimID, s.Outcome, s.Now
	if err := checkNonEmpty(op, "delegation id", id); err != nil {
		return false, err
	}
	if claim == "" && outcome != DeliveryDelivered {
		return false, errs.Errorf(errs.ErrInvalid, op, "the claim id is empty")
	}
	at := nowOf(now)
	var ok bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var res *gorm.DB
		switch outcome {
		case DeliveryReleased:
			res = tx.Exec(`UPDATE async_delegations SET delivery_state = 'dropped', delivery_claim = NULL, delivery_claimed_at = NULL, updated_at = ?
				WHERE delegation_id = ? AND delivery_state = 'pending' AND delivery_claim = ? AND delivery_attempts >= ?`, at, id, claim, MaxDeliveryAttempts)
			if res.Error == nil && res.RowsAffected == 0 {
				res = tx.Exec(`UPDATE async_delegations SET delivery_claim = NULL, delivery_claimed_at = NULL, updated_at = ?
					WHERE delegation_id = ? AND delivery_state = 'pending' AND delivery_claim = ?`, at, id, claim)
			}
		case DeliveryDropped:
			res = tx.Exec(`UPDATE async_delegations SET delivery_state = 'dropped', updated_at = ?, delivery_claim = NULL, delivery_claimed_at = NULL
				WHERE delegation_id = ? AND delivery_state = 'pending' AND delivery_claim = ?`, at, id, claim)
		case DeliveryDelivered:
			if claim == "" {
				res = tx.Exec(`UPDATE async_delegations SET delivery_state = 'delivered', delivered_at = ?, updated_at = ?
					WHERE delegation_id = ? AND delivery_state != 'delivered'`, at, at, id)
			} else {
				res = tx.Exec(`UPDATE async_delegations SET delivery_state = 'delivered', delivered_at = ?, updated_at = ?, delivery_claim = NULL,
					delivery_claimed_at = NULL WHERE delegation_id = ? AND delivery_state = 'pending' AND delivery_claim = ?`, at, at, id, claim)
			}
		default:
			return errs.Errorf(errs.ErrInvalid, op, "unknown delivery outcome %q (released, dropped or delivered)", outcome)
		}
		ok = res.RowsAffected == 1
		return res.Error
	})
	return ok, err
}

func (r *delegationRepo) AppendDelivery(ctx context.Context, sid, content string, metadata models.JSON) (int64, error) {
	const op = "delegations.append_delivery"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	var meta map[string]any
	if metadata.IsNull() || json.Unmarshal(metadata, &meta) != nil || meta == nil {
		return 0, errs.Errorf(errs.ErrInvalid, op, "the delivery metadata must be a JSON object")
	}
	did, _ := meta["delegation_id"].(string)
	if did == "" {
		return 0, errs.Errorf(errs.ErrInvalid, op, "the delivery requires a stable delegation_id")
	}
	notice := ""
	if v, ok := meta["delivery_notice"].(string); ok {
		notice = v
	}
	row, err := (&MessageInput{Role: "user", Content: &content, DisplayKind: "async_delegation_complete", DisplayMetadata: metadata,
		Timestamp: models.Now()}).toRow(op, sid)
	if err != nil {
		return 0, err
	}
	var id int64
	err = r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		lineage, err := compressionParentsOf(tx, sid)
		if err != nil {
			return err
		}
		var ids []int64
		if err := tx.Raw("SELECT m.id FROM messages m WHERE m.session_id IN ? AND m.display_kind = 'async_delegation_complete' AND "+
			r.db.jsonMarker("m.display_metadata", "delegation_id")+" = ? AND COALESCE("+r.db.jsonMarker("m.display_metadata", "delivery_notice")+", '') = ? ORDER BY m.id LIMIT 1",
			lineage, did, notice).Scan(&ids).Error; err != nil {
			return err
		}
		if len(ids) > 0 {
			id = ids[0]
			return nil
		}
		if err := leaseGuard(tx, op, sid); err != nil {
			return err
		}
		fresh := *row
		fresh.ID = 0
		if err := insertFresh(tx, []*models.Message{&fresh}); err != nil {
			return err
		}
		id = fresh.ID
		return nil
	})
	return id, err
}

// compressionParentsOf returns sid and its ancestors reached through parents
// ended by compression (the lineage CTE of append_delegation_delivery).
func compressionParentsOf(tx *gorm.DB, sid string) ([]string, error) {
	out := []string{sid}
	seen := map[string]bool{sid: true}
	cur := sid
	for depth := 0; depth < maxLineageDepth; depth++ {
		s, err := getSession(tx, cur)
		if err != nil {
			if isNotFound(err) {
				break
			}
			return nil, err
		}
		pid := ptr.Deref(s.ParentSessionID)
		if pid == "" || seen[pid] {
			break
		}
		p, err := getSession(tx, pid)
		if err != nil {
			if isNotFound(err) {
				break
			}
			return nil, err
		}
		if ptr.Deref(p.EndReason) != "compression" {
			break
		}
		seen[pid] = true
		out = append(out, pid)
		cur = pid
	}
	return out, nil
}

// leaseGuard is Hermes' transcript guard with reject_active_turn_lease
// alone: another holder's live turn lease refuses (ErrConflict), a stale one
// is deleted; a session ended by compression refuses; a missing one is
// ErrNotFound.
func leaseGuard(tx *gorm.DB, op, sid string) error {
	if err := turnLeaseFence(tx, op, sid, "", 0); err != nil {
		return err
	}
	exists, compressed, err := endedByCompression(tx, sid)
	switch {
	case err != nil:
		return err
	case !exists:
		return noSession(op, sid)
	case compressed:
		return errs.Errorf(errs.ErrConflict, op, "session %q was ended by compression; deliver to its continuation", sid)
	}
	return nil
}

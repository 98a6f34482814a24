package repo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/pyjson"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// AutomaticEndReasons are the end stamps automatic cleanup writes (shutdown,
// orphan reapers, idle/LRU eviction): a writer that proves the session is
// still live may clear them (Hermes' _AUTOMATIC_END_REASONS).
var AutomaticEndReasons = []string{"agent_close", "ws_orphan_reap", "superseded_by_resume", "startup_orphan_reap",
	"tui_shutdown", "ws_disconnect", "idle_timeout", "lru_evict"}

// BoundaryEndReasons are the deliberate conversation boundaries: the reset
// reasons and CLI /new's new_session (Hermes' _BOUNDARY_END_REASONS).
var BoundaryEndReasons = append(append([]string{}, ResetEndReasons...), "new_session")

func isAutomaticEnd(r string) bool {
	for _, x := range AutomaticEndReasons {
		if x == r {
			return true
		}
	}
	return false
}

func isBoundaryEnd(r string) bool {
	for _, x := range BoundaryEndReasons {
		if x == r {
			return true
		}
	}
	return false
}

// nonContinuationFilter is Hermes' _NON_CONTINUATION_CHILD_FILTER_SQL for
// the child alias a (with a trailing dot, or "") and the parent id bound
// three times: branch, delegate and reset children naming the parent, and
// tool sessions, are not continuations.
func (d *DB) nonContinuationFilter(a string) string {
	var b strings.Builder
	for _, k := range []string{"_branched_from", "_delegate_from", "_reset_from"} {
		fmt.Fprintf(&b, " AND COALESCE(%s, '') != ?", d.jsonMarker(a+"model_config", k))
	}
	fmt.Fprintf(&b, " AND COALESCE(%ssource, '') != 'tool'", a)
	return b.String()
}

type compressorRepo struct{ db *DB }

// NewCompressor returns the GORM implementation of Compressor.
func NewCompressor(db *DB) Compressor { return &compressorRepo{db} }

// endedRow reads ended_at and end_reason; ok is false for a missing row.
func endedRow(tx *gorm.DB, sid string) (endedAt *float64, reason *string, ok bool, err error) {
	var rows []struct {
		EndedAt   *float64
		EndReason *string
	}
	if err := tx.Raw("SELECT ended_at, end_reason FROM sessions WHERE id = ?", sid).Scan(&rows).Error; err != nil || len(rows) == 0 {
		return nil, nil, false, err
	}
	return rows[0].EndedAt, rows[0].EndReason, true, nil
}

func (r *compressorRepo) PublishChild(ctx context.Context, in PublishChildInput) error {
	const op = "compressor.publish_child"
	for f, v := range map[string]string{"parent id": in.ParentID, "child id": in.ChildID} {
		if err := checkID(op, v); err != nil {
			return errs.Errorf(errs.ErrInvalid, op, "%s: %v", f, err)
		}
	}
	if err := checkName(op, "source", in.Source); err != nil {
		return err
	}
	if len(in.Messages) == 0 {
		return errs.Errorf(errs.ErrInvalid, op, "the compression child's handoff is empty")
	}
	for f, v := range map[string]string{"model": in.Model, "cwd": in.Cwd, "profile_name": in.ProfileName, "holder": in.LockHolder} {
		if err := checkText(op, f, v); err != nil {
			return err
		}
	}
	if in.SystemPrompt != nil {
		if err := checkText(op, "system_prompt", *in.SystemPrompt); err != nil {
			return err
		}
	}
	var cfg any
	if len(in.ModelConfig) > 0 {
		b, err := pyjson.Dumps(in.ModelConfig)
		if err != nil {
			return errs.Wrap(errs.ErrInvalid, op, err, "model_config cannot be encoded as JSON")
		}
		cfg = string(b)
	}
	ttl := in.LeaseTTL
	if ttl < 0 {
		return errs.Errorf(errs.ErrInvalid, op, "the lease TTL %s is negative", ttl)
	}
	if ttl == 0 {
		ttl = DefaultLeaseTTL
	}
	now := nowOf(in.Now)
	return r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, in.ParentID); err != nil {
			return err
		}
		if in.RefreshLease && in.LockHolder != "" {
			if err := tx.Exec("UPDATE compression_locks SET expires_at = ? WHERE session_id = ? AND holder = ?",
				now+ttl.Seconds(), in.ParentID, in.LockHolder).Error; err != nil {
				return err
			}
		}
		if !in.SkipLeaseCheck {
			row, ok, err := readLease(tx, lockTable, in.ParentID)
			if err != nil {
				return err
			}
			if !ok || in.LockHolder == "" || row.Holder != in.LockHolder || row.ExpiresAt <= now {
				return errs.Errorf(errs.ErrConflict, op, "the compression lease of session %q was lost before publication; nothing was written", in.ParentID)
			}
		}
		parent, err := getSession(tx, in.ParentID)
		if err != nil {
			return err
		}
		if parent.EndedAt != nil {
			if !isAutomaticEnd(ptr.Deref(parent.EndReason)) {
				return errs.Errorf(errs.ErrConflict, op, "the compression parent %q was already ended (%s)", in.ParentID, ptr.Deref(parent.EndReason))
			}
			if err := tx.Exec("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ?", in.ParentID).Error; err != nil {
				return err
			}
		}
		if exists, err := sessionExists(tx, in.ChildID); err != nil {
			return err
		} else if exists {
			return errs.Errorf(errs.ErrConflict, op, "session %q already exists", in.ChildID)
		}
		var hash *string
		if in.SystemPrompt != nil {
			h, err := storePrompt(tx, *in.SystemPrompt)
			if err != nil {
				return err
			}
			hash = &h
		}
		// The child's row copies the parent's columns as stored (INSERT ...
		// SELECT: the tools pin, origin JSON and routing bytes unchanged).
		if err := tx.Exec(`INSERT INTO sessions (id, source, model, model_config, system_prompt, system_prompt_hash, tool_names,
			parent_session_id, cwd, git_branch, git_repo_root, profile_name, user_id, session_key, chat_id, chat_type,
			thread_id, display_name, origin_json, pinned, started_at, archived)
			SELECT ?, ?, ?, ?, NULL, ?, p.tool_names, p.id, COALESCE(?, p.cwd), p.git_branch, p.git_repo_root,
			COALESCE(?, p.profile_name), p.user_id, p.session_key, p.chat_id, p.chat_type, p.thread_id, p.display_name,
			p.origin_json, COALESCE(p.pinned, 0), ?, COALESCE(p.archived, 0) FROM sessions p WHERE p.id = ?`,
			in.ChildID, in.Source, models.TextOrNil(in.Model), cfg, hash, models.TextOrNil(in.Cwd),
			models.TextOrNil(in.ProfileName), now, in.ParentID).Error; err != nil {
			return err
		}
		msgs, err := carryParentTimestamps(tx, in.ParentID, in.Messages)
		if err != nil {
			return err
		}
		rows, tools, err := freshRowsAt(op, in.ChildID, msgs, now)
		if err != nil {
			return err
		}
		if err := insertFresh(tx, rows); err != nil {
			return err
		}
		count := int64(len(rows))
		if in.Watermark != nil {
			var tail []models.Message
			q := tx.Select("id, tool_calls").Where("session_id = ? AND active = 1 AND id > ?", in.ParentID, *in.Watermark)
			if in.WatermarkCeiling != nil {
				q = q.Where("id <= ?", *in.WatermarkCeiling)
			}
			if err := q.Order("id").Find(&tail).Error; err != nil {
				return err
			}
			if len(tail) > 0 {
				ids := make([]int64, len(tail))
				for i := range tail {
					ids[i] = tail[i].ID
					tools += toolCallsLen(tail[i].ToolCalls)
				}
				cols := strings.TrimPrefix(cloneColumns, "session_id, ")
				list, args := int64List(ids)
				if err := tx.Exec(fmt.Sprintf("INSERT INTO messages (%[1]s, session_id, active, compacted) SELECT %[1]s, ?, 1, 0 FROM messages WHERE id IN (%[2]s) ORDER BY id",
					cols, list), append([]any{in.ChildID}, args...)...).Error; err != nil {
					return err
				}
				count += int64(len(tail))
			}
		}
		if err := tx.Exec("UPDATE sessions SET message_count = ?, tool_call_count = ? WHERE id = ?", count, tools, in.ChildID).Error; err != nil {
			return err
		}
		res := tx.Exec("UPDATE sessions SET ended_at = ?, end_reason = 'compression' WHERE id = ? AND ended_at IS NULL", now, in.ParentID)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return errs.Errorf(errs.ErrConflict, op, "the compression parent %q changed during publication", in.ParentID)
		}
		return nil
	})
}

// carryParentTimestamps gives a handoff message without a valid timestamp
// the timestamp of the parent's live row with the same role and content
// (the durable original it carries), so the two share a display identity.
func carryParentTimestamps(tx *gorm.DB, parentID string, msgs []MessageInput) ([]MessageInput, error) {
	var need bool
	for i := range msgs {
		if !msgs[i].Timestamp.Sane() {
			need = true
		}
	}
	if !need {
		return msgs, nil
	}
	var rows []models.Message
	if err := tx.Select("role, content, timestamp").Where("session_id = ? AND active = 1", parentID).Order("id").Find(&rows).Error; err != nil {
		return nil, err
	}
	out := append([]MessageInput(nil), msgs...)
	for i := range out {
		if out[i].Timestamp.Sane() || out[i].Content == nil {
			continue
		}
		for j := range rows {
			if rows[j].Role == out[i].Role && rows[j].Content != nil && *rows[j].Content == *out[i].Content {
				out[i].Timestamp = rows[j].Timestamp
				break
			}
		}
	}
	return out, nil
}

func (r *compressorRepo) ReopenIfExplicitlyClosed(ctx context.Context, sid string) (string, error) {
	const op = "compressor.reopen_if_explicitly_closed"
	if err := checkID(op, sid); err != nil {
		return "", err
	}
	var cleared string
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		cleared = ""
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		endedAt, reason, ok, err := endedRow(tx, sid)
		if err != nil {
			return err
		}
		if !ok {
			return noSession(op, sid)
		}
		rs := ptr.Deref(reason)
		if endedAt == nil || isAutomaticEnd(rs) || rs == "compression" || isBoundaryEnd(rs) {
			return nil
		}
		var n int64
		if err := tx.Raw("SELECT COUNT(*) FROM sessions WHERE parent_session_id = ?"+r.db.nonContinuationFilter(""),
			sid, sid, sid, sid).Scan(&n).Error; err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		q := "UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ? AND ended_at = ? AND end_reason = ?"
		res := tx.Exec(q, sid, *endedAt, rs)
		if res.Error == nil && res.RowsAffected == 1 {
			cleared = rs
		}
		return res.Error
	})
	return cleared, err
}

func (r *compressorRepo) LiveChild(ctx context.Context, parentID string) (*models.Session, error) {
	const op = "compressor.live_child"
	if err := checkID(op, parentID); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*models.Session, error) {
		endedAt, reason, ok, err := endedRow(tx, parentID)
		if err != nil || !ok || endedAt == nil || ptr.Deref(reason) != "compression" {
			return nil, err
		}
		var rows []models.Session
		if err := tx.Where("parent_session_id = ? AND ended_at IS NULL"+r.db.nonContinuationFilter(""),
			parentID, parentID, parentID, parentID).Order("started_at ASC").Limit(2).Find(&rows).Error; err != nil {
			return nil, err
		}
		if len(rows) != 1 {
			return nil, nil
		}
		if err := resolvePrompt(tx, &rows[0]); err != nil {
			return nil, err
		}
		return &rows[0], nil
	})
}

func (r *compressorRepo) ReopenOrphaned(ctx context.Context, sid string, now time.Time) (bool, error) {
	const op = "compressor.reopen_orphaned"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	at := nowOf(now)
	var reopened bool
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		reopened = false
		if err := lockSession(tx, sid); err != nil {
			return err
		}
		endedAt, reason, ok, err := endedRow(tx, sid)
		if err != nil {
			return err
		}
		if !ok {
			return noSession(op, sid)
		}
		if endedAt == nil || ptr.Deref(reason) != "compression" {
			return nil
		}
		var n int64
		if err := tx.Raw("SELECT COUNT(*) FROM sessions WHERE parent_session_id = ?"+r.db.nonContinuationFilter(""),
			sid, sid, sid, sid).Scan(&n).Error; err != nil || n > 0 {
			return err
		}
		if err := lockLeaseKey(tx, lockTable, sid); err != nil {
			return err
		}
		row, locked, err := readLease(tx, lockTable, sid)
		if err != nil {
			return err
		}
		if locked {
			if row.ExpiresAt >= at {
				return nil
			}
			res := tx.Exec("DELETE FROM compression_locks WHERE session_id = ? AND holder = ? AND expires_at = ?", sid, row.Holder, row.ExpiresAt)
			if res.Error != nil || res.RowsAffected != 1 {
				return res.Error
			}
		}
		res := tx.Exec("UPDATE sessions SET ended_at = NULL, end_reason = NULL WHERE id = ? AND ended_at IS NOT NULL AND end_reason = 'compression'", sid)
		reopened = res.RowsAffected == 1
		return res.Error
	})
	return reopened, err
}

func (r *compressorRepo) FinalizeOrphaned(ctx context.Context, now time.Time) (int64, error) {
	const op = "compressor.finalize_orphaned"
	at := nowOf(now)
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec(`UPDATE sessions SET ended_at = ?, end_reason = 'orphaned_compression'
			WHERE api_call_count = 0 AND end_reason IS NULL AND ended_at IS NULL AND started_at < ?
			  AND parent_session_id IS NOT NULL
			  AND EXISTS (SELECT 1 FROM sessions p WHERE p.id = sessions.parent_session_id
			              AND p.end_reason = 'compression' AND p.ended_at IS NOT NULL)
			  AND EXISTS (SELECT 1 FROM messages m WHERE m.session_id = sessions.id)`, at, at-604800)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// updateOne runs an UPDATE of one session row and maps a missing row to
// ErrNotFound.
func (r *compressorRepo) updateOne(ctx context.Context, op, sid, q string, args ...any) error {
	if err := checkID(op, sid); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec(q, args...)
		if res.Error == nil && res.RowsAffected == 0 {
			return noSession(op, sid)
		}
		return res.Error
	})
}

func (r *compressorRepo) RecordCooldown(ctx context.Context, sid string, until time.Time, errText *string) error {
	const op = "compressor.record_cooldown"
	if err := checkTextPtr(op, "error", errText); err != nil {
		return err
	}
	u := nowOf(until)
	return r.updateOne(ctx, op, sid, `UPDATE sessions SET compression_failure_cooldown_until = CASE
		WHEN compression_failure_cooldown_until IS NOT NULL AND compression_failure_cooldown_until > ?
		THEN compression_failure_cooldown_until ELSE ? END, compression_failure_error = ? WHERE id = ?`, u, u, errText, sid)
}

func readCooldown(tx *gorm.DB, sid string) (CooldownState, error) {
	var rows []struct {
		CompressionFailureCooldownUntil *float64
		CompressionFailureError         *string
	}
	if err := tx.Raw("SELECT compression_failure_cooldown_until, compression_failure_error FROM sessions WHERE id = ?", sid).Scan(&rows).Error; err != nil || len(rows) == 0 {
		return CooldownState{}, err
	}
	st := CooldownState{Exists: true, Error: rows[0].CompressionFailureError}
	if u := rows[0].CompressionFailureCooldownUntil; u != nil {
		e := models.Epoch(*u)
		st.Until = &e
	}
	return st, nil
}

func (r *compressorRepo) Cooldown(ctx context.Context, sid string) (CooldownState, error) {
	const op = "compressor.cooldown"
	if err := checkID(op, sid); err != nil {
		return CooldownState{}, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (CooldownState, error) { return readCooldown(tx, sid) })
}

func (r *compressorRepo) RestoreCooldown(ctx context.Context, sid string, snap CooldownState) error {
	const op = "compressor.restore_cooldown"
	if err := checkID(op, sid); err != nil {
		return err
	}
	if err := checkTextPtr(op, "error", snap.Error); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if !snap.Exists {
			cur, err := readCooldown(tx, sid)
			if err != nil {
				return err
			}
			if cur.Exists {
				return errs.Errorf(errs.ErrConflict, op, "cannot restore the cooldown of a missing session: session %q exists now", sid)
			}
			return nil
		}
		var until any
		if snap.Until != nil {
			until = float64(*snap.Until)
		}
		res := tx.Exec("UPDATE sessions SET compression_failure_cooldown_until = ?, compression_failure_error = ? WHERE id = ?", until, snap.Error, sid)
		if res.Error != nil || res.RowsAffected == 0 {
			return res.Error // a session that vanished: nothing to restore
		}
		got, err := readCooldown(tx, sid)
		if err != nil {
			return err
		}
		if !sameCooldown(got, snap) {
			return errs.Errorf(errs.ErrConflict, op, "the cooldown of session %q did not read back as restored", sid)
		}
		return nil
	})
}

func sameCooldown(a, b CooldownState) bool {
	eqE := (a.Until == nil) == (b.Until == nil) && (a.Until == nil || *a.Until == *b.Until)
	eqS := (a.Error == nil) == (b.Error == nil) && (a.Error == nil || *a.Error == *b.Error)
	return a.Exists == b.Exists && eqE && eqS
}

func (r *compressorRepo) ClearCooldown(ctx context.Context, sid string) error {
	return r.updateOne(ctx, "compressor.clear_cooldown", sid,
		"UPDATE sessions SET compression_failure_cooldown_until = NULL, compression_failure_error = NULL WHERE id = ?", sid)
}

func (r *compressorRepo) Counters(ctx context.Context, sid string) (CompressionCounters, error) {
	const op = "compressor.counters"
	if err := checkID(op, sid); err != nil {
		return CompressionCounters{}, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (CompressionCounters, error) {
		var rows []struct {
			CompressionFallbackStreak   *float64
			CompressionIneffectiveCount *float64
			CompressionOverloadStreak   *float64
			CompressionRecoveryDeadline *float64
		}
		if err := tx.Raw(`SELECT compression_fallback_streak, compression_ineffective_count, compression_overload_streak,
			compression_recovery_deadline FROM sessions WHERE id = ?`, sid).Scan(&rows).Error; err != nil {
			return CompressionCounters{}, err
		}
		if len(rows) == 0 {
			return CompressionCounters{}, noSession(op, sid)
		}
		n := func(p *float64) int64 {
			if p == nil || *p < 0 {
				return 0
			}
			return int64(*p)
		}
		var d float64
		if p := rows[0].CompressionRecoveryDeadline; p != nil && *p > 0 {
			d = *p
		}
		return CompressionCounters{FallbackStreak: n(rows[0].CompressionFallbackStreak), IneffectiveCount: n(rows[0].CompressionIneffectiveCount),
			OverloadStreak: n(rows[0].CompressionOverloadStreak), RecoveryDeadline: d}, nil
	})
}

func (r *compressorRepo) SetCounters(ctx context.Context, sid string, up CounterUpdate) error {
	const op = "compressor.set_counters"
	set := map[string]any{}
	nonneg := func(p *int64) int64 { return max(0, *p) }
	if up.FallbackStreak != nil {
		set["compression_fallback_streak"] = nonneg(up.FallbackStreak)
	}
	if up.IneffectiveCount != nil {
		set["compression_ineffective_count"] = nonneg(up.IneffectiveCount)
	}
	if up.OverloadStreak != nil {
		set["compression_overload_streak"] = nonneg(up.OverloadStreak)
	}
	if up.RecoveryDeadline != nil {
		if d := max(0, *up.RecoveryDeadline); d > 0 {
			set["compression_recovery_deadline"] = d
		} else {
			set["compression_recovery_deadline"] = nil
		}
	}
	if err := checkID(op, sid); err != nil {
		return err
	}
	if len(set) == 0 {
		return nil
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Model(&models.Session{}).Where("id = ?", sid).Updates(set)
		if res.Error == nil && res.RowsAffected == 0 {
			return noSession(op, sid)
		}
		return res.Error
	})
}

func (r *compressorRepo) IncrementOverloadStreak(ctx context.Context, sid string) (int64, error) {
	const op = "compressor.increment_overload_streak"
	if err := checkID(op, sid); err != nil {
		return 0, err
	}
	var v []int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		v = v[:0]
		if err := tx.Raw("UPDATE sessions SET compression_overload_streak = compression_overload_streak + 1 WHERE id = ? RETURNING compression_overload_streak", sid).Scan(&v).Error; err != nil {
			return err
		}
		if len(v) == 0 {
			return noSession(op, sid)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return v[0], nil
}

package repo

import (
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/models"
)

// turnLeaseFence is the turn-lease half of Hermes' transcript write guards
// (_check_transcript_write_guards, hermes_state_messages.py), run inside the
// write's transaction against the lease of sid's conversation (keyed by its
// compression root, turnLeaseKey).
//
// With a holder (Hermes' turn_lease_holder) the lease must be that
// holder's, expired or not; anything else refuses the write (ErrConflict:
// Hermes' SessionTurnLeaseLostError). An expired row still the holder's is
// renewed for ttl (0: DefaultLeaseTTL; at least 100 ms) in the same
// transaction: expiry makes a row reclaimable, not taken over.
//
// Without a holder (Hermes' reject_active_turn_lease) a live lease of any
// holder refuses the write; a stale one (expired, or a dead local holder)
// is deleted, which also fences a late write of its holder.
func turnLeaseFence(tx *gorm.DB, op, sid, holder string, ttl time.Duration) error {
	key, err := turnLeaseKey(tx, sid)
	if err != nil {
		return err
	}
	row, ok, err := readLease(tx, turnLeaseTable, key)
	if err != nil {
		return err
	}
	now := float64(models.Now())
	if holder != "" {
		if !ok || row.Holder != holder {
			return errs.Errorf(errs.ErrConflict, op, "the turn lease of session %q was lost; nothing was written", sid)
		}
		if row.ExpiresAt <= now {
			if ttl <= 0 {
				ttl = DefaultLeaseTTL
			}
			return tx.Exec("UPDATE session_turn_leases SET expires_at = ? WHERE conversation_id = ? AND holder = ?",
				now+max(0.1, ttl.Seconds()), key, holder).Error
		}
		return nil
	}
	if !ok {
		return nil
	}
	if row.ExpiresAt > now && !LocalHolderDead(row.Holder) {
		return errs.Errorf(errs.ErrConflict, op, "session %q has an active turn (lease held by %s)", sid, row.Holder)
	}
	return tx.Exec("DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?", key, row.Holder).Error
}

// batchLeaseHolder returns the turn-lease holder fencing a batch: the one
// its messages name (ErrInvalid when they name two).
func batchLeaseHolder(op string, ms []MessageInput) (string, time.Duration, error) {
	holder, ttl := "", time.Duration(0)
	for _, m := range ms {
		if m.TurnLeaseHolder == "" {
			continue
		}
		if holder != "" && m.TurnLeaseHolder != holder {
			return "", 0, errs.Errorf(errs.ErrInvalid, op, "a batch is fenced by one turn lease; its messages name %q and %q", holder, m.TurnLeaseHolder)
		}
		holder = m.TurnLeaseHolder
		ttl = max(ttl, m.TurnLeaseTTL)
	}
	if holder != "" {
		if err := checkText(op, "turn lease holder", holder); err != nil {
			return "", 0, err
		}
	}
	return holder, ttl, nil
}

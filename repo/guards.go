package repo

import (
	"encoding/json"
	"errors"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
)

// Admission checks Hermes runs inside the write transaction of a
// destructive transcript mutation (rewind, user rewrites):
// _check_transcript_write_guards with reject_active_turn_lease and
// reject_active_compression_lock. The lock and lease rows themselves are
// written by TurnLeases and CompressionLocks (leases.go); a mutation honours
// a live one and reclaims an expired one or one whose holder is a dead local
// process (LocalHolderDead), as Hermes' _stale_holder does.

// isExplicitForkChild reports whether s is a branch, delegate or tool child
// of its parent (with includeReset also a reset child): markers count only
// when they name parent_session_id, since a compression continuation
// inherits model_config verbatim (Hermes' _is_explicit_fork_child_row).
func isExplicitForkChild(s *models.Session, includeReset bool) bool {
	if s.Source == "tool" {
		return true
	}
	var cfg map[string]any
	if s.ModelConfig.IsNull() || json.Unmarshal(s.ModelConfig, &cfg) != nil || cfg == nil {
		return false
	}
	keys := []string{"_branched_from", "_delegate_from"}
	if includeReset {
		keys = append(keys, "_reset_from")
	}
	parent := ptr.Deref(s.ParentSessionID)
	for _, k := range keys {
		v, ok := cfg[k]
		if !ok || v == nil {
			continue
		}
		if parent == "" {
			return true
		}
		if str, ok := v.(string); ok && str == parent {
			return true
		}
	}
	return false
}

// turnLeaseKey walks compression parents up to the conversation a turn
// lease is keyed by (Hermes' _session_turn_lease_key_on_conn).
func turnLeaseKey(tx *gorm.DB, sid string) (string, error) {
	cur, err := getSession(tx, sid)
	if err != nil {
		if isNotFound(err) {
			return sid, nil
		}
		return "", err
	}
	seen := map[string]bool{sid: true}
	for depth := 0; depth < maxLineageDepth; depth++ {
		pid := ptr.Deref(cur.ParentSessionID)
		if pid == "" || seen[pid] || isExplicitForkChild(cur, true) {
			break
		}
		p, err := getSession(tx, pid)
		if err != nil {
			if isNotFound(err) {
				break
			}
			return "", err
		}
		if ptr.Deref(p.EndReason) != "compression" {
			break
		}
		seen[pid] = true
		cur = p
	}
	return cur.ID, nil
}

func isNotFound(err error) bool { return errors.Is(err, errs.ErrNotFound) }

// mutationGuards refuses (ErrConflict) a destructive mutation of sid while
// another writer holds its compression lock or its conversation's turn
// lease, reclaiming expired ones, and refuses a session ended by
// compression.
func mutationGuards(tx *gorm.DB, op, sid string) error {
	now := float64(models.Now())
	var locks []struct {
		Holder    string
		ExpiresAt float64
	}
	if err := tx.Raw("SELECT holder, expires_at FROM compression_locks WHERE session_id = ?", sid).Scan(&locks).Error; err != nil {
		return err
	}
	if len(locks) > 0 {
		if locks[0].ExpiresAt > now && !LocalHolderDead(locks[0].Holder) {
			return errs.Errorf(errs.ErrConflict, op, "session %q is being compressed by another writer", sid)
		}
		if err := tx.Exec("DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", sid, locks[0].Holder).Error; err != nil {
			return err
		}
	}
	key, err := turnLeaseKey(tx, sid)
	if err != nil {
		return err
	}
	var leases []struct {
		Holder    string
		ExpiresAt float64
	}
	if err := tx.Raw("SELECT holder, expires_at FROM session_turn_leases WHERE conversation_id = ?", key).Scan(&leases).Error; err != nil {
		return err
	}
	if len(leases) > 0 {
		if leases[0].ExpiresAt > now && !LocalHolderDead(leases[0].Holder) {
			return errs.Errorf(errs.ErrConflict, op, "session %q has an active turn (lease held by %s)", sid, strings.TrimSpace(leases[0].Holder))
		}
		if err := tx.Exec("DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?", key, leases[0].Holder).Error; err != nil {
			return err
		}
	}
	exists, compressed, err := endedByCompression(tx, sid)
	switch {
	case err != nil:
		return err
	case !exists:
		return noSession(op, sid)
	case compressed:
		return errs.Errorf(errs.ErrConflict, op, "session %q was ended by compression; change its continuation", sid)
	}
	return nil
}

// noSession is the error of an operation on a session id that is not in the
// store: ErrNotFound naming the operation and the id.
func noSession(op, id string) error {
	return errs.Errorf(errs.ErrNotFound, op, "session %q does not exist", id)
}

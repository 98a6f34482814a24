package repo

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// The gateway's storage operations of Hermes' SessionGatewayMixin and
// SessionSessionsMixin (hermes_state_gateway.py, hermes_state_sessions.py):
// the routing index as a whole, gateway session lookups, peer recovery and
// never-active keyed rows. Hermes fences peer recovery by the profile that
// owns the store, derived from the store's path inside a Hermes home;
// hermesstate has no such path, which is Hermes' "store outside the
// profile tree" case: no fence.

// GatewaySession is a session row with its last_active, as
// list_gateway_sessions returns it.
type GatewaySession struct {
	models.Session
	LastActive float64 `json:"last_active"`
}

// OriginQuery identifies a chat for Gateway.FindByOrigin.
type OriginQuery struct {
	// Platform is the session source (compared case-insensitively).
	Platform string
	ChatID   string
	// ThreadID, when set, must equal the row's thread_id (NULL counts as "").
	ThreadID *string
	// UserID prefers that sender's session.
	UserID string
}

// PeerQuery identifies a routing peer for Gateway.FindLatestForPeer.
// ChatID and ChatType are nil when unknown.
type PeerQuery struct {
	Source, UserID, SessionKey string
	ChatID, ChatType           *string
	ThreadID                   string
}

// NeverActiveSession is a keyed, open session with no sign of a turn.
type NeverActiveSession struct {
	ID         string       `json:"id"`
	SessionKey string       `json:"session_key"`
	Source     string       `json:"source"`
	ChatID     *string      `json:"chat_id"`
	ChatType   *string      `json:"chat_type"`
	UserID     *string      `json:"user_id"`
	StartedAt  models.Epoch `json:"started_at"`
}

// Gateway is the repository of the gateway's session routing.
type Gateway interface {
	// ReplaceRoutingEntries atomically replaces the routing index of scope
	// with entries (session_key → entry JSON object; empty keys or values
	// are skipped); other scopes are untouched. ErrInvalid when an entry is
	// not a JSON object.
	ReplaceRoutingEntries(ctx context.Context, scope string, entries map[string]string) error
	// RoutingEntryForSession returns the routing entry (any scope; the
	// oldest row when several) whose session_id is sessionID, and whether
	// there is one.
	RoutingEntryForSession(ctx context.Context, sessionID string) (models.JSON, bool, error)
	// ListSessions returns gateway sessions (rows with a session_key), the
	// newest row per key, optionally of one platform (case-insensitive
	// source) and only open ones, most recently active first.
	ListSessions(ctx context.Context, platform string, activeOnly bool) ([]GatewaySession, error)
	// FindByOrigin returns the newest open keyed session of a chat; with a
	// user id an exact sender match wins, and several distinct senders
	// without a match (or without a user id) give none, so one
	// participant never lands in another's session. "" when none.
	FindByOrigin(ctx context.Context, q OriginQuery) (string, error)
	// SetExpiryFinalized records the gateway's expiry_finalized flag.
	// ErrNotFound when the session does not exist.
	SetExpiryFinalized(ctx context.Context, sessionID string, finalized bool) error
	// FindLatestForPeer returns the latest recoverable session of a
	// routing peer (open, ended by a recoverable accident, or owned by a
	// completed handoff), by session_key, else by the full peer tuple
	// (with messages); a reset boundary of the peer that ended after a
	// candidate's last activity rules it out. nil when there is none.
	FindLatestForPeer(ctx context.Context, q PeerQuery) (*models.Session, error)
	// ListNeverActiveKeyed returns keyed, open, untitled, unpinned,
	// unarchived sessions without messages, tokens, calls or activity,
	// started before now - olderThan. ErrInvalid for a negative age.
	ListNeverActiveKeyed(ctx context.Context, olderThan time.Duration) ([]NeverActiveSession, error)
	// PruneNeverActiveKeyed deletes those sessions (as Cleanup.Delete:
	// delegate runs with them, children orphaned) and the routing entries
	// naming them, in one transaction; it returns how many of each went.
	PruneNeverActiveKeyed(ctx context.Context, olderThan time.Duration) (sessions, entries int, err error)
}

type gatewayRepo struct{ db *DB }

// NewGateway returns the GORM implementation of Gateway.
func NewGateway(db *DB) Gateway { return &gatewayRepo{db} }

func (r *gatewayRepo) ReplaceRoutingEntries(ctx context.Context, scope string, entries map[string]string) error {
	const op = "gateway.replace_routing_entries"
	if err := checkText(op, "scope", scope); err != nil {
		return err
	}
	now := models.Now()
	var rows []models.GatewayRouting
	for k, v := range entries {
		if k == "" || v == "" {
			continue
		}
		if err := checkRoutingKey(op, scope, k); err != nil {
			return err
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(v), &obj) != nil || obj == nil {
			return errs.Errorf(errs.ErrInvalid, op, "the entry of %q is not a JSON object", k)
		}
		if len(v) > MaxContentBytes {
			return errs.Errorf(errs.ErrInvalid, op, "the entry of %q is %d bytes; the limit is %d", k, len(v), MaxContentBytes)
		}
		rows = append(rows, models.GatewayRouting{Scope: scope, SessionKey: k, EntryJSON: models.JSON(v), UpdatedAt: now})
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := tx.Exec("DELETE FROM gateway_routing WHERE scope = ?", scope).Error; err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		return tx.CreateInBatches(rows, batchRows).Error
	})
}

// entrySessionID returns the session_id of a routing entry, if it has one.
func entrySessionID(entry string) (string, bool) {
	var obj map[string]any
	if json.Unmarshal([]byte(entry), &obj) != nil {
		return "", false
	}
	s, ok := obj["session_id"].(string)
	return s, ok
}

func (r *gatewayRepo) RoutingEntryForSession(ctx context.Context, sid string) (models.JSON, bool, error) {
	const op = "gateway.routing_entry_for_session"
	if err := checkID(op, sid); err != nil {
		return nil, false, err
	}
	type res struct {
		j  models.JSON
		ok bool
	}
	out, err := Read(ctx, r.db, op, func(tx *gorm.DB) (res, error) {
		// Table order, as Hermes' unordered scan returns it (the oldest
		// row first; PostgreSQL has no rowid, updated_at stands in).
		order := r.db.rowOrder("updated_at, scope, session_key")
		var rows []struct{ EntryJSON string }
		if err := tx.Raw("SELECT entry_json FROM gateway_routing ORDER BY " + order).Scan(&rows).Error; err != nil {
			return res{}, err
		}
		for _, row := range rows {
			if id, ok := entrySessionID(row.EntryJSON); ok && id == sid {
				return res{models.JSON(row.EntryJSON), true}, nil
			}
		}
		return res{}, nil
	})
	return out.j, out.ok, err
}

// sessionRows scans SELECT s.*, _prompt, _last_active rows into sessions.
func sessionRows(tx *gorm.DB, q string, args ...any) ([]GatewaySession, error) {
	var rows []richRow
	if err := tx.Raw(q, args...).Scan(&rows).Error; err != nil {
		return nil, err
	}
	out := make([]GatewaySession, len(rows))
	for i := range rows {
		s := rows[i].Session
		s.SystemPrompt = rows[i].PromptResolved
		s.LiftMarkers()
		out[i] = GatewaySession{Session: s}
		if rows[i].LastActive != nil {
			out[i].LastActive = *rows[i].LastActive
		}
	}
	return out, nil
}

func (r *gatewayRepo) ListSessions(ctx context.Context, platform string, activeOnly bool) ([]GatewaySession, error) {
	const op = "gateway.list_sessions"
	if err := checkText(op, "platform", platform); err != nil {
		return nil, err
	}
	q := fmt.Sprintf(`SELECT s.*, COALESCE(sp.prompt, s.system_prompt) AS _prompt, %s AS _last_active
		FROM sessions s LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash
		WHERE s.session_key IS NOT NULL
		AND s.started_at = (SELECT MAX(s2.started_at) FROM sessions s2 WHERE s2.session_key = s.session_key)`, lastActiveSQL("s"))
	var args []any
	if platform != "" {
		q += " AND LOWER(s.source) = LOWER(?)"
		args = append(args, platform)
	}
	if activeOnly {
		q += " AND s.ended_at IS NULL"
	}
	q += " ORDER BY _last_active DESC"
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]GatewaySession, error) { return sessionRows(tx, q, args...) })
}

func (r *gatewayRepo) FindByOrigin(ctx context.Context, oq OriginQuery) (string, error) {
	const op = "gateway.find_by_origin"
	if oq.Platform == "" || oq.ChatID == "" {
		return "", nil
	}
	for f, v := range map[string]string{"platform": oq.Platform, "chat_id": oq.ChatID, "user_id": oq.UserID, "thread_id": ptr.Deref(oq.ThreadID)} {
		if err := checkText(op, f, v); err != nil {
			return "", err
		}
	}
	q := `SELECT id, user_id FROM sessions WHERE LOWER(source) = LOWER(?) AND session_key IS NOT NULL AND chat_id = ? AND ended_at IS NULL`
	args := []any{oq.Platform, oq.ChatID}
	if oq.ThreadID != nil {
		q += " AND COALESCE(thread_id, '') = ?"
		args = append(args, *oq.ThreadID)
	}
	q += " ORDER BY started_at DESC"
	return Read(ctx, r.db, op, func(tx *gorm.DB) (string, error) {
		var rows []struct {
			ID     string
			UserID *string
		}
		if err := tx.Raw(q, args...).Scan(&rows).Error; err != nil {
			return "", err
		}
		if len(rows) == 0 {
			return "", nil
		}
		if oq.UserID != "" {
			for _, row := range rows {
				if ptr.Deref(row.UserID) == oq.UserID {
					return row.ID, nil
				}
			}
			if len(rows) > 1 {
				return "", nil
			}
		} else {
			users := map[string]bool{}
			for _, row := range rows {
				if u := strings.TrimSpace(ptr.Deref(row.UserID)); u != "" {
					users[u] = true
				}
			}
			if len(users) > 1 {
				return "", nil
			}
		}
		return rows[0].ID, nil
	})
}

func (r *gatewayRepo) SetExpiryFinalized(ctx context.Context, sid string, finalized bool) error {
	const op = "gateway.set_expiry_finalized"
	if err := checkID(op, sid); err != nil {
		return err
	}
	v := 0
	if finalized {
		v = 1
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET expiry_finalized = ? WHERE id = ?", v, sid)
		if res.Error == nil && res.RowsAffected == 0 {
			return noSession(op, sid)
		}
		return res.Error
	})
}

// peerRecoverable is the shared recoverability predicate of peer recovery
// (alias s): open, ended by a recoverable accident, or owned by a
// completed handoff.
const peerRecoverable = "(s.ended_at IS NULL OR s.end_reason IN (" + recoverableReasonsSQL + ") OR s.handoff_state = 'completed')"

func (r *gatewayRepo) FindLatestForPeer(ctx context.Context, pq PeerQuery) (*models.Session, error) {
	const op = "gateway.find_latest_for_peer"
	if pq.SessionKey == "" {
		return nil, nil
	}
	for f, v := range map[string]string{"source": pq.Source, "user_id": pq.UserID, "session_key": pq.SessionKey,
		"chat_id": ptr.Deref(pq.ChatID), "chat_type": ptr.Deref(pq.ChatType), "thread_id": pq.ThreadID} {
		if err := checkText(op, f, v); err != nil {
			return nil, err
		}
	}
	head := `SELECT s.*, COALESCE(sp.prompt, s.system_prompt) AS _prompt, NULL AS _last_active
		FROM sessions s LEFT JOIN system_prompts sp ON sp.hash = s.system_prompt_hash `
	hasMsgs := "(COALESCE(s.message_count, 0) > 0 OR EXISTS (SELECT 1 FROM messages WHERE messages.session_id = s.id))"
	byKey := head + `WHERE s.session_key = ? AND s.source = ? AND ` + peerRecoverable + `
		AND NOT EXISTS (SELECT 1 FROM sessions b WHERE b.session_key = s.session_key AND b.source = s.source
			AND b.ended_at IS NOT NULL AND b.end_reason IN (` + resetReasonsSQL + `)
			AND b.ended_at > COALESCE(s.last_activity_at, s.started_at))
		ORDER BY CASE WHEN ` + hasMsgs + ` THEN 1 ELSE 0 END DESC, COALESCE(s.last_activity_at, s.started_at) DESC LIMIT 1`
	tuple := `COALESCE(%[1]s.user_id, '') = %[2]s AND COALESCE(%[1]s.chat_id, '') = %[3]s AND COALESCE(%[1]s.chat_type, '') = %[4]s
		AND COALESCE(%[1]s.thread_id, '') = %[5]s`
	byTuple := head + `WHERE s.source = ? AND ` + fmt.Sprintf(tuple, "s", "?", "?", "?", "?") + ` AND ` + peerRecoverable + ` AND ` + hasMsgs + `
		AND NOT EXISTS (SELECT 1 FROM sessions b WHERE b.source = s.source AND ` +
		fmt.Sprintf(tuple, "b", "COALESCE(s.user_id, '')", "COALESCE(s.chat_id, '')", "COALESCE(s.chat_type, '')", "COALESCE(s.thread_id, '')") + `
			AND b.ended_at IS NOT NULL AND b.end_reason IN (` + resetReasonsSQL + `)
			AND b.ended_at > COALESCE(s.last_activity_at, s.started_at))
		ORDER BY COALESCE(s.last_activity_at, s.started_at) DESC LIMIT 1`
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*models.Session, error) {
		rows, err := sessionRows(tx, byKey, pq.SessionKey, pq.Source)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 && pq.ChatID != nil && pq.ChatType != nil {
			rows, err = sessionRows(tx, byTuple, pq.Source, pq.UserID, *pq.ChatID, *pq.ChatType, pq.ThreadID)
			if err != nil {
				return nil, err
			}
		}
		if len(rows) == 0 {
			return nil, nil
		}
		return &rows[0].Session, nil
	})
}

// neverActiveSQL selects keyed, open sessions with no sign of a turn,
// started before the bound cutoff.
var neverActiveSQL = query("gateway_never_active")

func neverActiveCutoff(op string, olderThan time.Duration) (float64, error) {
	if olderThan < 0 {
		return 0, errs.Errorf(errs.ErrInvalid, op, "older-than must not be negative (a future cutoff would match every never-active keyed session)")
	}
	return float64(models.EpochOf(time.Now().Add(-olderThan))), nil
}

func (r *gatewayRepo) ListNeverActiveKeyed(ctx context.Context, olderThan time.Duration) ([]NeverActiveSession, error) {
	const op = "gateway.list_never_active_keyed"
	cutoff, err := neverActiveCutoff(op, olderThan)
	if err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]NeverActiveSession, error) {
		out := []NeverActiveSession{}
		return out, tx.Raw(neverActiveSQL, cutoff).Scan(&out).Error
	})
}

func (r *gatewayRepo) PruneNeverActiveKeyed(ctx context.Context, olderThan time.Duration) (int, int, error) {
	const op = "gateway.prune_never_active_keyed"
	cutoff, err := neverActiveCutoff(op, olderThan)
	if err != nil {
		return 0, 0, err
	}
	var sessions, entries int
	err = r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		sessions, entries = 0, 0
		var cands []NeverActiveSession
		if err := tx.Raw(neverActiveSQL, cutoff).Scan(&cands).Error; err != nil {
			return err
		}
		if len(cands) == 0 {
			return nil
		}
		doomed := map[string]bool{}
		ids := make([]string, 0, len(cands))
		for _, c := range cands {
			doomed[c.ID] = true
			ids = append(ids, c.ID)
		}
		// Routing entries first: a stale entry outliving its target would
		// have the gateway resume a session that no longer exists.
		var routes []struct {
			Scope, SessionKey, EntryJSON string
		}
		if err := tx.Raw("SELECT scope, session_key, entry_json FROM gateway_routing").Scan(&routes).Error; err != nil {
			return err
		}
		for _, rt := range routes {
			if id, ok := entrySessionID(rt.EntryJSON); ok && doomed[id] {
				if err := tx.Exec("DELETE FROM gateway_routing WHERE scope = ? AND session_key = ?", rt.Scope, rt.SessionKey).Error; err != nil {
					return err
				}
				entries++
			}
		}
		kids, err := r.db.delegateChildren(tx, ids)
		if err != nil {
			return err
		}
		if err := deleteSessions(tx, append(kids, ids...)); err != nil {
			return err
		}
		sessions = len(ids)
		return deleteUnreferencedPrompts(tx)
	})
	return sessions, entries, err
}

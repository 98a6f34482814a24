package repo

import (
	"context"
	"time"

	"github.com/hermesstate/hermesstate/models"
)

// The gateway's liveness and handover state (hermes_state_gateway.py):
// backend heartbeats (gateway_heartbeats) and cross-platform handoffs (the
// handoff_state, handoff_platform and handoff_error columns of sessions).

// Heartbeat is one gateway_heartbeats row.
type Heartbeat struct {
	BackendID string `json:"backend_id"`
	PID       int64  `json:"pid" gorm:"column:pid"`
	// StartedAt is when the backend process started (not this row).
	StartedAt     models.Epoch `json:"started_at"`
	LastHeartbeat models.Epoch `json:"last_heartbeat"`
	Profile       string       `json:"profile"`
	Host          string       `json:"host"`
}

// Heartbeats is the repository of gateway_heartbeats. Methods return
// ErrInvalid for an empty backend id or text that cannot be stored.
type Heartbeats interface {
	// Register upserts the backend's row (Hermes' register_backend_heartbeat);
	// a zero LastHeartbeat is stamped with now. BackendID must be stable for
	// the process's life and StartedAt its start, so a respawn never
	// inherits a dead predecessor's row.
	Register(ctx context.Context, hb Heartbeat) error
	// Clear deletes the backend's row and reports whether there was one.
	Clear(ctx context.Context, backendID string) (bool, error)
	// Prune deletes the rows whose last heartbeat is older than maxAge
	// before now (zero = time.Now()) and returns their backend ids; a
	// maxAge <= 0 deletes nothing.
	Prune(ctx context.Context, maxAge time.Duration, now time.Time) ([]string, error)
	// List returns every row, most recent heartbeat first.
	List(ctx context.Context) ([]Heartbeat, error)
}

// Handoff states (sessions.handoff_state).
const (
	HandoffPending   = "pending"
	HandoffRunning   = "running"
	HandoffCompleted = "completed"
	HandoffFailed    = "failed"
)

// HandoffState is a session's handoff record.
type HandoffState struct {
	State    *string `json:"state"`
	Platform *string `json:"platform"`
	Error    *string `json:"error"`
}

// PendingOptions tunes Handoffs.Pending.
type PendingOptions struct {
	// Limit caps the rows (0 = all). Hermes' has_pending_handoffs is
	// Pending with Limit 1 returning a row.
	Limit int
}

// FailOptions tunes Handoffs.Fail.
type FailOptions struct {
	// OnlyStates makes the write a compare-and-swap: the row changes only
	// from one of these states (a waiter that gives up passes
	// []string{HandoffPending}, so it never overrides the watcher's claim).
	OnlyStates []string
}

// Handoffs moves conversations between platforms: request → pending, the
// gateway watcher claims (pending → running, one statement: exactly one
// claimer wins), then completes or fails it. Methods return ErrInvalid for
// an empty session id or bad text.
type Handoffs interface {
	// Request marks the session pending handoff to platform unless a
	// handoff is in flight (state pending or running); it reports whether it
	// did (false for a missing session too).
	Request(ctx context.Context, sessionID, platform string) (bool, error)
	// Get returns the session's handoff record (all nil when it never had
	// one). ErrNotFound when the session does not exist.
	Get(ctx context.Context, sessionID string) (HandoffState, error)
	// Pending returns the sessions in state pending, oldest first.
	Pending(ctx context.Context, opt PendingOptions) ([]models.Session, error)
	// Claim moves a pending handoff to running and reports whether this
	// caller did.
	Claim(ctx context.Context, sessionID string) (bool, error)
	// Complete marks the handoff completed (error cleared), whatever its
	// state. ErrNotFound when the session does not exist.
	Complete(ctx context.Context, sessionID string) error
	// Fail marks the handoff failed with the reason (its first 500
	// characters) and reports whether a row changed.
	Fail(ctx context.Context, sessionID, reason string, opt FailOptions) (bool, error)
	// ReclaimStaleRunning fails every handoff left running (by a gateway
	// that died mid-dispatch) with the reason and returns their session
	// ids, in one transaction.
	ReclaimStaleRunning(ctx context.Context, reason string) ([]string, error)
}

package repo

import (
	"context"
	"time"

	"github.com/hermesstate/hermesstate/models"
)

// Background delegations (async_delegations; the delegation tool's durable
// ledger) and their delivery into the spawning conversation (Hermes'
// append_delegation_delivery). A completion is delivered by one consumer:
// ClaimDelivery is one UPDATE, so of N gateway processes exactly one wins.

// Delegation is one async_delegations row.
type Delegation struct {
	DelegationID      string        `json:"delegation_id"`
	OriginSession     string        `json:"origin_session"`
	OriginUISessionID string        `json:"origin_ui_session_id"`
	OriginSessionID   string        `json:"origin_session_id"`
	ParentSessionID   *string       `json:"parent_session_id"`
	State             string        `json:"state"`
	DispatchedAt      models.Epoch  `json:"dispatched_at"`
	CompletedAt       *models.Epoch `json:"completed_at"`
	UpdatedAt         models.Epoch  `json:"updated_at"`
	EventJSON         *string       `json:"event_json"`
	ResultJSON        *string       `json:"result_json"`
	TaskJSON          *string       `json:"task_json"`
	DeliveryState     string        `json:"delivery_state"`
	DeliveryAttempts  int64         `json:"delivery_attempts"`
	DeliveredAt       *models.Epoch `json:"delivered_at"`
	OwnerPID          *int64        `json:"owner_pid" gorm:"column:owner_pid"`
	OwnerStartedAt    *int64        `json:"owner_started_at"`
	DeliveryClaim     *string       `json:"delivery_claim"`
	DeliveryClaimedAt *models.Epoch `json:"delivery_claimed_at"`
}

// DelegationDispatch records a dispatched delegation (state running,
// delivery pending).
type DelegationDispatch struct {
	DelegationID string
	// OriginSession is the gateway session key the completion routes back
	// to ("" for the CLI).
	OriginSession, OriginUISessionID string
	ParentSessionID                  *string
	// Task is stored as task_json (Python's json.dumps).
	Task map[string]any
	// OwnerPID is the dispatching process (0 = this process) and
	// OwnerStartedAt its start time as the caller measures it (nil: unknown).
	OwnerPID       int64
	OwnerStartedAt *int64
	// DispatchedAt and Now default to time.Now().
	DispatchedAt, Now time.Time
}

// DelegationCompletion records a delegation's terminal state.
type DelegationCompletion struct {
	// Status is the terminal state ("" = "completed").
	Status        string
	Event, Result models.JSON
	// CompletedAt and Now default to time.Now().
	CompletedAt, Now time.Time
}

// Delivery outcomes of Delegations.SettleDelivery.
const (
	// DeliveryReleased gives a failed claim back (after
	// MaxDeliveryAttempts claims the completion is dropped instead).
	DeliveryReleased = "released"
	// DeliveryDropped drops a completion that can never be delivered.
	DeliveryDropped = "dropped"
	// DeliveryDelivered acknowledges the delivery.
	DeliveryDelivered = "delivered"
)

// Settlement is how Delegations.SettleDelivery ends a delivery claim.
type Settlement struct {
	// ClaimID is the claim being ended ("" only with DeliveryDelivered).
	ClaimID string
	// Outcome is DeliveryReleased, DeliveryDropped or DeliveryDelivered.
	Outcome string
	// Now stamps updated_at / delivered_at (zero: time.Now()).
	Now time.Time
}

// MaxDeliveryAttempts caps the claims of one completion (Hermes'
// _MAX_DELIVERY_ATTEMPTS).
const MaxDeliveryAttempts = 8

// DeliveryClaimTTL is how long a delivery claim is honoured before another
// consumer may take it over (Hermes' 300 s).
const DeliveryClaimTTL = 300 * time.Second

// Delegations is the repository of async_delegations. Methods return
// ErrInvalid for an empty id or bad input.
type Delegations interface {
	// Dispatch inserts a running delegation, then prunes the ledger as
	// Hermes does (delivered rows older than 7 days; at most 50 terminal
	// rows and 1000 terminal pending ones). ErrConflict when the id exists.
	Dispatch(ctx context.Context, d DelegationDispatch) error
	// Complete records the terminal state, the event and the result, and
	// makes the delivery pending. ErrNotFound for an unknown id.
	Complete(ctx context.Context, delegationID string, c DelegationCompletion) error
	// Get returns one delegation; ErrNotFound when there is none.
	Get(ctx context.Context, delegationID string) (Delegation, error)
	// RecoverAbandoned marks running delegations whose owner process is
	// gone (ownerAlive false; nil = the pid does not exist) as state
	// 'unknown' with an event and result saying so, delivery pending, and
	// returns how many.
	RecoverAbandoned(ctx context.Context, ownerAlive func(pid int64, startedAt *int64) bool, now time.Time) (int64, error)
	// Undelivered returns the terminal delegations whose delivery is
	// pending (with an event), by completion time: what a restarted
	// consumer replays.
	Undelivered(ctx context.Context) ([]Delegation, error)
	// ClaimDelivery claims a pending delivery for claimID unless another
	// claim younger than DeliveryClaimTTL holds it (one UPDATE; the attempt
	// is counted) and reports whether it did. An unknown id is claimable
	// (true), as Hermes treats an event older than the ledger.
	ClaimDelivery(ctx context.Context, delegationID, claimID string, now time.Time) (bool, error)
	// SettleDelivery ends s.ClaimID's claim with s.Outcome
	// (DeliveryReleased, DeliveryDropped or DeliveryDelivered) and reports
	// whether this claim held the row. DeliveryDelivered with an empty
	// ClaimID acknowledges an unclaimed delivery (Hermes'
	// mark_completion_delivered).
	SettleDelivery(ctx context.Context, delegationID string, s Settlement) (bool, error)
	// AppendDelivery records a detached result in the spawning session once
	// (Hermes' append_delegation_delivery): when a row of the session's
	// compression lineage already carries metadata's delegation_id and
	// delivery_notice it returns that row's id; else it appends a user row
	// (display_kind 'async_delegation_complete', display_metadata =
	// metadata) and returns its id. ErrInvalid when metadata has no
	// delegation_id; ErrConflict under another holder's live turn lease or
	// for a session ended by compression; ErrNotFound for a missing
	// session.
	AppendDelivery(ctx context.Context, sessionID, content string, metadata models.JSON) (int64, error)
}

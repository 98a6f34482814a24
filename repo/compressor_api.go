package repo

import (
	"context"
	"time"

	"github.com/hermesstate/hermesstate/models"
)

// The compressor's storage (hermes_state_compression.py): the rotation that
// publishes a compression child, recovery of interrupted rotations, the
// failure cooldown and the anti-thrash counters kept on the session row.

// PublishChildInput describes Compressor.PublishChild (Hermes'
// publish_compression_child keyword arguments).
type PublishChildInput struct {
	ParentID, ChildID string
	// Source is the child's source.
	Source string
	// Messages is the handoff: the child's first live rows (not empty).
	// A message without a timestamp that repeats a live row of the parent
	// (same role and content) takes that row's timestamp, so both keep one
	// display identity.
	Messages []MessageInput
	Model    string
	// ModelConfig is stored as Python's json.dumps of it (nil or empty:
	// NULL).
	ModelConfig map[string]any
	// SystemPrompt, when set, is stored (deduplicated by hash) for the
	// child.
	SystemPrompt *string
	// Cwd and ProfileName override the parent's.
	Cwd, ProfileName string
	// LockHolder must hold the parent's unexpired compression lock (unless
	// SkipLeaseCheck); with RefreshLease its lock is first extended by
	// LeaseTTL in the same transaction.
	LockHolder     string
	SkipLeaseCheck bool
	RefreshLease   bool
	LeaseTTL       time.Duration
	// Watermark, when set, is the parent's Watermark at compression start:
	// its live rows above it (up to WatermarkCeiling when set) arrived
	// during the summary and are cloned into the child after the handoff.
	Watermark, WatermarkCeiling *int64
	// Now is the time stamped on the rows (zero = time.Now()).
	Now time.Time
}

// CooldownState is the compression-failure cooldown of a session as stored.
type CooldownState struct {
	// Exists is false when the session does not exist.
	Exists bool          `json:"session_exists"`
	Until  *models.Epoch `json:"cooldown_until"`
	Error  *string       `json:"error"`
}

// Active reports whether the cooldown runs at now (Hermes'
// get_compression_failure_cooldown: a stored deadline after now).
func (c CooldownState) Active(now time.Time) bool {
	return c.Until != nil && float64(*c.Until) > nowOf(now)
}

// CompressionCounters are the compressor's persisted anti-thrash counters
// (never negative; a NULL or bad cell reads as 0).
type CompressionCounters struct {
	FallbackStreak   int64 `json:"compression_fallback_streak"`
	IneffectiveCount int64 `json:"compression_ineffective_count"`
	OverloadStreak   int64 `json:"compression_overload_streak"`
	// RecoveryDeadline is epoch seconds, 0 when not armed.
	RecoveryDeadline float64 `json:"compression_recovery_deadline"`
}

// CounterUpdate sets the given counters (nil fields are left as they are);
// negative values are stored as 0, a RecoveryDeadline of 0 as NULL.
type CounterUpdate struct {
	FallbackStreak, IneffectiveCount, OverloadStreak *int64
	RecoveryDeadline                                 *float64
}

// Compressor is the repository of the compressor's state. Methods return
// ErrInvalid for an empty session id or bad input, and ErrNotFound, unless
// they say otherwise, when the session does not exist.
type Compressor interface {
	// PublishChild atomically closes the parent (end_reason
	// 'compression') and publishes its child: the child row copied from the
	// parent (workspace, tools pin, gateway routing, pin and archive flags),
	// the handoff, the concurrent tail after the watermark, the child's
	// counters — all in one transaction, so readers see the live parent or
	// a complete child. ErrConflict (nothing written) when the lease was
	// lost, the parent was ended deliberately or changed meanwhile, or the
	// child id exists; an automatic end stamp of the parent (tui_shutdown,
	// ws_orphan_reap, ...) is cleared. ErrInvalid for an empty handoff.
	PublishChild(ctx context.Context, in PublishChildInput) error
	// ReopenIfExplicitlyClosed clears a deliberate close stamp (cli_close,
	// tui_close, ...) from a session its host proves is still routed to it,
	// and returns the reason cleared ("" when none: open, automatic,
	// compression or boundary reasons, or a published continuation).
	ReopenIfExplicitlyClosed(ctx context.Context, sessionID string) (string, error)
	// LiveChild returns the unique open continuation of a session ended by
	// compression, or nil (none, several, or the parent not ended by
	// compression).
	LiveChild(ctx context.Context, parentID string) (*models.Session, error)
	// ReopenOrphaned reopens a session ended by compression that has no
	// continuation and no live compression lock (an expired lock is
	// deleted); it reports whether it did.
	ReopenOrphaned(ctx context.Context, sessionID string, now time.Time) (bool, error)
	// FinalizeOrphaned ends, as 'orphaned_compression', the open
	// continuations of compression-ended parents that have messages, no API
	// call and started over 7 days before now; it returns how many.
	FinalizeOrphaned(ctx context.Context, now time.Time) (int64, error)
	// RecordCooldown stores the failure cooldown, keeping a later deadline
	// already stored, and the error text (nil: NULL).
	RecordCooldown(ctx context.Context, sessionID string, until time.Time, errText *string) error
	// Cooldown returns the stored cooldown (Exists false for a missing
	// session, no error).
	Cooldown(ctx context.Context, sessionID string) (CooldownState, error)
	// RestoreCooldown writes back a Cooldown snapshot exactly and verifies
	// it. A snapshot of a missing session is a no-op while the session is
	// still missing and ErrConflict once it exists; a session that vanished
	// meanwhile is not an error.
	RestoreCooldown(ctx context.Context, sessionID string, snap CooldownState) error
	// ClearCooldown clears the cooldown and its error.
	ClearCooldown(ctx context.Context, sessionID string) error
	// Counters returns the compressor's counters.
	Counters(ctx context.Context, sessionID string) (CompressionCounters, error)
	// SetCounters writes the given counters.
	SetCounters(ctx context.Context, sessionID string, up CounterUpdate) error
	// IncrementOverloadStreak adds one to the overload streak in one
	// statement (concurrent agents never lose a strike) and returns the new
	// value.
	IncrementOverloadStreak(ctx context.Context, sessionID string) (int64, error)
}

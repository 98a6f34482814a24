package repo

import (
	"context"
	"time"

	"github.com/hermesstate/hermesstate/models"
)

// The gateway's remaining per-chat state (hermes_state_gateway.py,
// hermes_state_messages.py): hygiene failure streaks, the accepted-input
// marker, the routing peer of a session, sessions that lost their routing
// identity, and profile renames and deletes.

// PeerRecord is the routing identity Peers.Record writes (Hermes'
// record_gateway_session_peer). SessionKey and Source are written as given,
// UserID, ChatID, ChatType and ThreadID too (nil = NULL); DisplayName,
// OriginJSON and TransportProfile only when not nil.
type PeerRecord struct {
	Source, SessionKey                 string
	UserID, ChatID, ChatType, ThreadID *string
	DisplayName, TransportProfile      *string
	OriginJSON                         models.JSON
	// IncludeCompressionAncestors writes the identity on the session's
	// compression ancestors too (an explicit resume moving a lineage's tip
	// to another lane).
	IncludeCompressionAncestors bool
	// Now stamps started_at of a row the call has to create (zero =
	// time.Now()).
	Now time.Time
}

// OrphanRecord is one session that lost its routing identity (Hermes'
// find_orphaned_gateway_sessions record).
type OrphanRecord struct {
	OrphanID     string        `json:"orphan_id"`
	Source       string        `json:"source"`
	MessageCount int64         `json:"message_count"`
	StartedAt    models.Epoch  `json:"started_at"`
	LastActive   *models.Epoch `json:"last_active"`
	// DonorID and SessionKey name the keyed predecessor whose identity the
	// orphan can take (nil when none).
	DonorID    *string `json:"donor_id"`
	SessionKey *string `json:"session_key"`
	// Evidence is "lineage" (the parent is the donor) or "contiguity"
	// (the one keyed row that fell quiet near the orphan's start), "" when
	// there is no donor.
	Evidence  string `json:"evidence"`
	Adoptable bool   `json:"adoptable"`
	Reason    string `json:"reason"`
}

// DefaultOrphanGap is Hermes' widest gap between a keyed predecessor going
// quiet and its unkeyed successor (_ORPHAN_ADOPTION_MAX_GAP_S).
const DefaultOrphanGap = 900 * time.Second

// Peers is the repository of the gateway's per-chat state. Methods return
// ErrInvalid for empty ids or keys and bad text.
type Peers interface {
	// IncrementHygieneStreak adds one to the chat's hygiene failure streak
	// (created at 1) in one statement and returns it.
	IncrementHygieneStreak(ctx context.Context, sessionKey string) (int64, error)
	// ResetHygieneStreak forgets the chat's streak.
	ResetHygieneStreak(ctx context.Context, sessionKey string) error
	// HasInputOwner reports whether the session holds an unobserved user
	// row (live or compaction-archived) marked accepted by owner
	// (display_metadata.gateway_input_owner).
	HasInputOwner(ctx context.Context, sessionID, owner string) (bool, error)
	// Record writes the routing identity of a session (and, when asked,
	// of its compression ancestors); a session that does not exist is
	// created with it (source and created_source = Source).
	Record(ctx context.Context, sessionID string, p PeerRecord) error
	// Orphans reports the sessions with messages but no session_key (not
	// branches, delegates or tool sessions), oldest first, each with the one
	// keyed predecessor that can be named (maxGap 0 = DefaultOrphanGap);
	// ambiguity is reported, never guessed.
	Orphans(ctx context.Context, maxGap time.Duration) ([]OrphanRecord, error)
	// Adopt gives the orphan the donor's routing identity (keeping the
	// orphan's non-NULL columns, parent = donor when it has none) and
	// retires the donor (end_reason 'superseded_by_repair'), after checking
	// the pair again in the same transaction; it reports whether it did.
	Adopt(ctx context.Context, orphanID, donorID string, now time.Time) (bool, error)
	// RekeyProfile rewrites a profile's identity from old to new in one
	// transaction (sessions' profile_name, agent:<old>: session keys and
	// origin JSON, heartbeats, routing keys and entries, Telegram topic rows
	// and delivery obligations when those tables exist) and returns the rows
	// changed per place, keyed as Hermes' rekey_profile_state. Nothing
	// happens for empty or equal names. ErrConflict when a renamed routing
	// key or topic row would collide with one of new.
	RekeyProfile(ctx context.Context, oldName, newName string) (map[string]int64, error)
	// PurgeProfile deletes a profile's routing rows, heartbeats and Telegram
	// topic rows and abandons its pending delivery obligations (sessions are
	// kept), in one transaction, and returns the counts per table.
	PurgeProfile(ctx context.Context, name string, now time.Time) (map[string]int64, error)
}

// RuntimeLock is a Browser / API runtime lock (Hermes'
// update_session_runtime_lock), stored as model_config.browser_model_lock.
type RuntimeLock struct {
	Model, Provider, RouteSource string
	ModelOptions                 map[string]any
	Confirmed                    bool
	// Now stamps updated_at (zero = time.Now()).
	Now time.Time
}

// BillingRoute is the billing route Routes.SetBillingRoute stores.
type BillingRoute struct {
	Provider, BaseURL string
	// Mode is billing_mode; nil leaves it as it is.
	Mode *string
}

// Routes writes the runtime route a resume restores (model_config's
// browser_model_lock and yolo_mode, the billing route columns). Methods
// return ErrInvalid for an empty id or bad text and ErrNotFound when the
// session does not exist.
type Routes interface {
	// SetRuntimeLock merges the lock into model_config, sets model when
	// given, and drops the stored system prompt (so cached footers cannot
	// lie); unreferenced prompts are removed.
	SetRuntimeLock(ctx context.Context, sessionID string, lock RuntimeLock) error
	// SetYolo records the per-session YOLO flag in model_config.
	SetYolo(ctx context.Context, sessionID string, enabled bool) error
	// SetBillingRoute sets billing_provider and billing_base_url, and
	// billing_mode when route.Mode is not nil (Hermes'
	// update_session_billing_route).
	SetBillingRoute(ctx context.Context, sessionID string, route BillingRoute) error
}

package repo

import (
	"context"
	"time"

	"github.com/hermesstate/hermesstate/models"
)

// Turn leases and compression locks: the rows Hermes' processes use to take
// turns on one store (hermes_state_compression.py; docs/hermes-coordination.md
// has every statement). A turn lease (session_turn_leases) says which process
// answers in a conversation, keyed by the conversation's compression root; a
// compression lock (compression_locks) says who summarises one session.
// Every acquisition is one transaction (BEGIN IMMEDIATE on SQLite, an
// advisory lock on the key on PostgreSQL): N contenders get exactly one
// winner, Go and Hermes processes alike.

// DefaultLeaseTTL is Hermes' lease lifetime (ttl_seconds=300) used when an
// option's TTL is zero.
const DefaultLeaseTTL = 300 * time.Second

// Lease is one turn-lease or compression-lock row.
type Lease struct {
	// Key is the row's key: the conversation id (the compression root of
	// the session asked about) of a turn lease, the session id of a lock.
	Key        string       `json:"key"`
	Holder     string       `json:"holder"`
	AcquiredAt models.Epoch `json:"acquired_at"`
	ExpiresAt  models.Epoch `json:"expires_at"`
	// Live reports whether the row was unexpired at the query's time
	// (a turn lease: expires_at > now; a lock: expires_at >= now, Hermes'
	// get_compression_lock_holder).
	Live bool `json:"live"`
}

// LeaseOptions tunes an acquisition or refresh.
type LeaseOptions struct {
	// TTL is the lease's lifetime from Now (0 = DefaultLeaseTTL; a turn
	// lease gets at least 100 ms, as Hermes' max(0.1, ttl)).
	TTL time.Duration
	// Now is the time the call reads (zero = time.Now()); the row stores
	// it as REAL epoch seconds.
	Now time.Time
	// HolderDead reports whether a holder's process is provably gone, so
	// its unexpired row may be reclaimed (nil = LocalHolderDead, Hermes'
	// rule: a `pid=N:pidns=…` holder of this PID namespace whose process
	// does not exist). Return false to rely on the TTL alone.
	HolderDead func(holder string) bool
}

// AcquireOptions tunes TurnLeases.Acquire.
type AcquireOptions struct {
	LeaseOptions
	// Poll is the wait between attempts while another holder has the
	// lease (0 = 1 s, Hermes' poll_interval_seconds).
	Poll time.Duration
	// OnWait, when set, is called when another holder has the lease and
	// then about every NoticeEvery while waiting, with the time waited.
	OnWait func(waited time.Duration)
	// NoticeEvery spaces OnWait calls (0 = 15 s).
	NoticeEvery time.Duration
}

// TurnLeases is the repository of session_turn_leases. Holders are opaque
// strings (HolderID builds Hermes' structured form); the lease of any
// segment of a compression lineage is the lineage's one lease. Methods
// return ErrInvalid for an empty session id or holder, a bad option, or text
// that cannot be stored.
type TurnLeases interface {
	// Get returns the lease of the session's conversation and whether there
	// is one, Live as of now (zero = time.Now()). It only reads.
	Get(ctx context.Context, sessionID string, now time.Time) (Lease, bool, error)
	// TryAcquire takes the conversation's lease for holder unless another
	// holder has a live one (Hermes' try_acquire_session_turn_lease): in one
	// transaction rows expired for over a day are swept, an expired row
	// (expires_at <= now) or one whose holder is dead is deleted, and the
	// holder's row is inserted; it reports whether holder holds the lease
	// now (a holder that already holds it keeps its expiry). ErrBusy when
	// the database stayed locked for the write budget.
	TryAcquire(ctx context.Context, sessionID, holder string, opt LeaseOptions) (bool, error)
	// Acquire waits for the lease (Hermes' acquire_session_turn_lease):
	// TryAcquire every opt.Poll while another holder has it, at once again
	// when the database was busy. It returns nil once acquired, or an error
	// wrapping the context's error when ctx ends first (cancel ctx to stop
	// waiting: Hermes' should_abort). The clock is read at each attempt.
	Acquire(ctx context.Context, sessionID, holder string, opt AcquireOptions) error
	// Refresh extends the lease to now + TTL while holder owns the row,
	// even an expired row nobody took (Hermes' refresh_session_turn_lease);
	// it reports whether holder owned it. A non-holder's refresh is refused
	// (false), never an error.
	Refresh(ctx context.Context, sessionID, holder string, opt LeaseOptions) (bool, error)
	// Release deletes the lease if holder owns it and reports whether it
	// did; a non-holder's release changes nothing.
	Release(ctx context.Context, sessionID, holder string) (bool, error)
	// List returns every lease row, Live as of now (zero = time.Now()),
	// ordered by expiry.
	List(ctx context.Context, now time.Time) ([]Lease, error)
}

// CompressionLocks is the repository of compression_locks (Hermes'
// try_acquire/refresh/release_compression_lock and
// get_compression_lock_holder). Methods return ErrInvalid for an empty
// session id or holder or a bad option.
type CompressionLocks interface {
	// Get returns the session's lock row and whether there is one, Live
	// (expires_at >= now) as of now (zero = time.Now()). Hermes'
	// get_compression_lock_holder is the holder of a live row.
	Get(ctx context.Context, sessionID string, now time.Time) (Lease, bool, error)
	// TryAcquire takes the session's lock for holder unless another holder
	// has an unexpired one: in one transaction a row expired before now, or
	// whose holder is dead, is deleted and the holder's inserted; it reports
	// whether holder holds the lock now. ErrBusy when the database stayed
	// locked for the write budget (Hermes answers false there: the caller
	// must not compress either way).
	TryAcquire(ctx context.Context, sessionID, holder string, opt LeaseOptions) (bool, error)
	// Refresh extends the lock to now + TTL while holder owns the row (an
	// expired row nobody took included); it reports whether it did.
	Refresh(ctx context.Context, sessionID, holder string, opt LeaseOptions) (bool, error)
	// Release deletes the lock if holder owns it and reports whether it did.
	Release(ctx context.Context, sessionID, holder string) (bool, error)
	// List returns every lock row, Live as of now, ordered by expiry.
	List(ctx context.Context, now time.Time) ([]Lease, error)
}

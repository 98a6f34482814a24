package hermesstate

import (
	"context"
	"time"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/repo"
)

// HousekeepOptions selects the steps of Store.Housekeep (Hermes' startup
// housekeeping, opt-in step by step). The zero value does nothing.
type HousekeepOptions struct {
	// Now is the reference time of every step (zero = time.Now()).
	Now time.Time
	// SweepOrphans, when set, closes open sessions orphaned by a dead
	// process (repo.Housekeeping.SweepOrphans; its Now is this Now).
	SweepOrphans *repo.SweepOptions
	// ArchiveStale, when set, archives idle conversations
	// (repo.Housekeeping.ArchiveStale).
	ArchiveStale *repo.ArchiveStaleOptions
	// Ghosts deletes the TUI's empty ghost sessions.
	Ghosts bool
	// StaleHeartbeats > 0 deletes gateway heartbeats older than this.
	StaleHeartbeats time.Duration
	// StaleHandoffs fails the handoffs left running (do it only when no
	// gateway watcher runs: a running handoff is then a dead gateway's).
	StaleHandoffs bool
	// ExpiredLeases deletes expired turn leases and compression locks.
	ExpiredLeases bool
	// OrphanedCompression ends week-old orphaned compression continuations.
	OrphanedCompression bool
}

// HousekeepReport says what Store.Housekeep did.
type HousekeepReport struct {
	Swept               []string                 `json:"swept"`
	Archived            *repo.ArchiveStaleResult `json:"archived,omitempty"`
	Ghosts              int                      `json:"ghosts"`
	Heartbeats          []string                 `json:"heartbeats"`
	Handoffs            []string                 `json:"handoffs"`
	ExpiredLeases       int64                    `json:"expired_leases"`
	ExpiredLocks        int64                    `json:"expired_locks"`
	OrphanedCompression int64                    `json:"orphaned_compression"`
}

// StaleHandoffReason is the error Housekeep records on a handoff it
// reclaims.
const StaleHandoffReason = "the gateway that claimed this handoff is gone (reclaimed by housekeeping); request it again"

// Housekeep runs the housekeeping steps opts selects, in this order: expired
// leases and locks, stale heartbeats, stale running handoffs, the orphan
// sweep, orphaned compression continuations, the stale-session archive and
// the ghost sessions. Nothing runs unless asked: hermesstate never
// housekeeps on open or on a read. It returns the report of the steps that
// completed and the failing step's error (ErrInvalid for bad options).
func (s *Store) Housekeep(ctx context.Context, opts HousekeepOptions) (*HousekeepReport, error) {
	rep := &HousekeepReport{Swept: []string{}, Heartbeats: []string{}, Handoffs: []string{}}
	hk := s.Housekeeping()
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	if opts.StaleHeartbeats < 0 {
		return rep, errs.Errorf(ErrInvalid, "housekeep", "the heartbeat age must not be negative")
	}
	var err error
	if opts.ExpiredLeases {
		if rep.ExpiredLeases, rep.ExpiredLocks, err = hk.ClearExpired(ctx, now); err != nil {
			return rep, err
		}
	}
	if opts.StaleHeartbeats > 0 {
		if rep.Heartbeats, err = s.Heartbeats().Prune(ctx, opts.StaleHeartbeats, now); err != nil {
			return rep, err
		}
	}
	if opts.StaleHandoffs {
		if rep.Handoffs, err = s.Handoffs().ReclaimStaleRunning(ctx, StaleHandoffReason); err != nil {
			return rep, err
		}
	}
	if opts.SweepOrphans != nil {
		so := *opts.SweepOrphans
		so.Now = now
		if rep.Swept, err = hk.SweepOrphans(ctx, so); err != nil {
			return rep, err
		}
	}
	if opts.OrphanedCompression {
		if rep.OrphanedCompression, err = s.Compressor().FinalizeOrphaned(ctx, now); err != nil {
			return rep, err
		}
	}
	if opts.ArchiveStale != nil {
		ao := *opts.ArchiveStale
		ao.Now = now
		res, err := hk.ArchiveStale(ctx, ao)
		if err != nil {
			return rep, err
		}
		rep.Archived = &res
	}
	if opts.Ghosts {
		if rep.Ghosts, err = hk.PruneGhosts(ctx, now); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

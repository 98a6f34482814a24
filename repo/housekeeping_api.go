package repo

import (
	"context"
	"time"
)

// Hermes' housekeeping (hermes_state_maintenance.py, hermes_state_sessions.py,
// hermes_state.py): the sweeps its entry points run at startup and the
// one-off repairs of its CLI. hermesstate never runs them on its own, on
// open or on a read: each is an explicit call (and Store.Housekeep, `hermes-state
// maintain` steps).

// SweepOptions tunes Housekeeping.SweepOrphans (Hermes'
// sweep_orphaned_sessions).
type SweepOptions struct {
	// MaxIdle: open sessions whose start and last activity are both older
	// are closed (required, > 0).
	MaxIdle time.Duration
	// Sources are the sources swept (nil = tui, desktop, subagent). Pass
	// only sources whose lifecycle the caller owns, never messaging
	// platforms.
	Sources []string
	// ExcludeIDs are sessions this process still holds.
	ExcludeIDs []string
	// ExcludePinned spares pinned conversations.
	ExcludePinned bool
	// IgnoreHeartbeats sweeps without the gateway-heartbeat gate (state-owned
	// sources). Otherwise a row is spared while a backend whose heartbeat
	// is younger than HeartbeatStaleness (0 = 2 × MaxIdle) and that started
	// no later than the row plus HeartbeatGrace (0 = the staleness) could
	// own it.
	IgnoreHeartbeats                   bool
	HeartbeatStaleness, HeartbeatGrace time.Duration
	Now                                time.Time
}

// ArchiveStaleOptions tunes Housekeeping.ArchiveStale (Hermes'
// archive_stale_sessions and maybe_auto_archive).
type ArchiveStaleOptions struct {
	// IdleFor: lineage tips untouched for longer are archived with their
	// lineage (0 = 3 days, maybe_auto_archive's default).
	IdleFor time.Duration
	// IncludePinned archives pinned conversations too.
	IncludePinned bool
	// MinInterval, when > 0, skips the run when the previous one (state_meta
	// last_auto_archive) is younger, and records this run.
	MinInterval time.Duration
	Now         time.Time
}

// ArchiveStaleResult says what ArchiveStale did.
type ArchiveStaleResult struct {
	Archived int  `json:"archived"`
	Skipped  bool `json:"skipped"`
}

// MarkerPurge is the result of Housekeeping.PurgeStaleToolCallMarkers.
type MarkerPurge struct {
	DryRun bool    `json:"dry_run"`
	RowIDs []int64 `json:"row_ids"`
	// BackupPath is the VACUUM INTO copy taken before writing ("" when none
	// was taken: a dry run, nothing to change, NoBackup, or PostgreSQL).
	BackupPath string `json:"backup_path"`
}

// Housekeeping is the repository of Hermes' housekeeping. Methods return
// ErrInvalid for a bad option.
type Housekeeping interface {
	// SweepOrphans closes, as 'startup_orphan_reap', open sessions orphaned
	// by a dead process (see SweepOptions); a live turn lease or
	// compression lock spares a row (expired ones are deleted). The
	// selection and the update share one transaction. It returns the ids
	// closed.
	SweepOrphans(ctx context.Context, opt SweepOptions) ([]string, error)
	// ArchiveStale archives, lineage by lineage, the unarchived lineage tips
	// whose last activity is older than IdleFor (the hidden canonical "Bot
	// Chat" excepted; pinned ones unless IncludePinned).
	ArchiveStale(ctx context.Context, opt ArchiveStaleOptions) (ArchiveStaleResult, error)
	// PruneGhosts deletes empty ghost sessions of the TUI (source 'tui',
	// untitled, ended, started over a day before now, no messages) and
	// returns how many.
	PruneGhosts(ctx context.Context, now time.Time) (int, error)
	// ClearExpired deletes the turn leases expired at now (expires_at <=
	// now) and the compression locks expired before now, and returns how
	// many of each. A holder that still runs loses its row (it would have
	// lost it to the next claimer, as Hermes' reclaim does).
	ClearExpired(ctx context.Context, now time.Time) (leases, locks int64, err error)
	// RetagKanban retags the cli sessions whose cwd is under root as
	// source 'kanban', once per root (gated by state_meta
	// kanban_worker_source_retagged:<root>), and returns how many.
	RetagKanban(ctx context.Context, root string) (int64, error)
	// BackfillRepoRoots sets git_repo_root from cwd → root for sessions of
	// that cwd without one, in one transaction, and returns the rows set.
	BackfillRepoRoots(ctx context.Context, cwdToRoot map[string]string) (int64, error)
	// BackfillNullProfiles stamps profile (trimmed) on sessions whose
	// profile_name is NULL or blank and returns how many; "" stamps nothing.
	BackfillNullProfiles(ctx context.Context, profile string) (int64, error)
	// PurgeStaleToolCallMarkers blanks the content of assistant tool-call
	// rows whose whole content is a bare marker such as "[memory]" (replay
	// already hides them), after a VACUUM INTO backup beside the file
	// (unless noBackup), and returns the rows; dryRun only lists them.
	PurgeStaleToolCallMarkers(ctx context.Context, dryRun, noBackup bool) (MarkerPurge, error)
	// OptimizeFTS merges each FTS5 index's segments ('optimize') and returns
	// how many indexes it optimized (0 on PostgreSQL, which has none).
	OptimizeFTS(ctx context.Context) (int, error)
}

// CountBySourceOptions tunes Inventory.CountBySource.
type CountBySourceOptions struct {
	IncludeArchived, ArchivedOnly bool
	// ExcludeChildren counts only listed sessions (roots and branch/reset
	// children, no delegates).
	ExcludeChildren bool
}

// PruneCountOptions tunes Inventory.PruneCount (Hermes' count_prune_matches
// and count_open_prune_matches).
type PruneCountOptions struct {
	// OlderThan bounds the last activity (0 = any age).
	OlderThan time.Duration
	Sources   []string
	// Open counts the open sessions a matching prune skips instead of the
	// ended ones it deletes.
	Open bool
	// IncludePinned counts pinned conversations too; PinnedOnly counts only
	// rows carrying a pin (with IncludePinned).
	IncludePinned, PinnedOnly bool
	Now                       time.Time
}

// Inventory answers classification questions about the store. Methods
// return ErrInvalid for an empty id or a bad option; they only read.
type Inventory interface {
	// CountBySource returns the sessions per source, archived ones left out
	// unless asked, an empty source counted as "cli".
	CountBySource(ctx context.Context, opt CountBySourceOptions) (map[string]int64, error)
	// PruneCount counts the sessions a prune with these filters matches.
	PruneCount(ctx context.Context, opt PruneCountOptions) (int64, error)
	// IsKanbanOwned reports whether the session or a segment of its resume
	// lineage belongs to the Kanban dispatcher (source or created_source
	// 'kanban'); false for a missing session.
	IsKanbanOwned(ctx context.Context, sessionID string) (bool, error)
	// DeclaredScope returns whether the session is an explicit fork child
	// (branch, delegate or tool child of its parent) and its trimmed source,
	// from one read; false and "" for a missing session.
	DeclaredScope(ctx context.Context, sessionID string) (forkChild bool, source string, err error)
}

package repo

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/querytext"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// DefaultSweepSources are the sources Hermes' gateway sweeps at startup.
var DefaultSweepSources = []string{"tui", "desktop", "subagent"}

// StateOwnedSources are the sources whose stale open rows Hermes' automatic
// maintenance closes at the retention age (_AUTO_PRUNE_STALE_OPEN_SOURCES).
var StateOwnedSources = []string{"cli", "cron", "kanban", "acp", "api_server", "subagent", "tool", "recovered"}

// canonicalBotChatTitle is the title of Bot Mode's hidden canonical chat.
const canonicalBotChatTitle = "Bot Chat"

var staleMarkerRe = regexp.MustCompile(`^\[[A-Za-z_][A-Za-z0-9_.-]*\]$`)

type housekeepingRepo struct{ db *DB }

// NewHousekeeping returns the GORM implementation of Housekeeping.
func NewHousekeeping(db *DB) Housekeeping { return &housekeepingRepo{db} }

// guardedRow is Hermes' _write_guards_reject for a session: true while
// another writer's live compression lock or the conversation's live turn
// lease protects it; expired (or dead-holder) rows are deleted.
func guardedRow(tx *gorm.DB, sid string, now float64) (bool, error) {
	if row, ok, err := readLease(tx, lockTable, sid); err != nil {
		return false, err
	} else if ok {
		if row.ExpiresAt > now && !LocalHolderDead(row.Holder) {
			return true, nil
		}
		if err := tx.Exec("DELETE FROM compression_locks WHERE session_id = ? AND holder = ?", sid, row.Holder).Error; err != nil {
			return false, err
		}
	}
	key, err := turnLeaseKey(tx, sid)
	if err != nil {
		return false, err
	}
	if row, ok, err := readLease(tx, turnLeaseTable, key); err != nil {
		return false, err
	} else if ok {
		if row.ExpiresAt > now && !LocalHolderDead(row.Holder) {
			return true, nil
		}
		if err := tx.Exec("DELETE FROM session_turn_leases WHERE conversation_id = ? AND holder = ?", key, row.Holder).Error; err != nil {
			return false, err
		}
	}
	return false, nil
}

// pinnedTailSQL is the set of continuations of pinned conversations.
func (d *DB) pinnedTailSQL() string {
	return query("cleanup_pinned_tail", "edge", d.continuationEdge("p", "c"), "max_depth", maxDepthSQL)
}

func (r *housekeepingRepo) SweepOrphans(ctx context.Context, opt SweepOptions) ([]string, error) {
	const op = "housekeeping.sweep_orphans"
	if opt.MaxIdle <= 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "the idle age must be positive")
	}
	srcs := []string{}
	in := opt.Sources
	if in == nil {
		in = DefaultSweepSources
	}
	for _, s := range in {
		if s != "" {
			srcs = append(srcs, s)
		}
	}
	if len(srcs) == 0 {
		return []string{}, nil
	}
	now := nowOf(opt.Now)
	cutoff := now - opt.MaxIdle.Seconds()
	stale, grace := opt.HeartbeatStaleness, opt.HeartbeatGrace
	if stale <= 0 {
		stale = 2 * opt.MaxIdle
	}
	if grace <= 0 {
		grace = stale
	}
	scope := " AND source IN ?"
	args := []any{srcs}
	if opt.ExcludePinned {
		scope += " AND COALESCE(pinned, 0) = 0 AND sessions.id NOT IN (" + r.db.pinnedTailSQL() + ")"
	}
	scope += " AND started_at < ? AND " + lastActiveSQL("sessions") + " < ?"
	args = append(args, cutoff, cutoff)
	if !opt.IgnoreHeartbeats {
		scope += " AND NOT EXISTS (SELECT 1 FROM gateway_heartbeats h WHERE h.last_heartbeat >= ? AND h.started_at <= sessions.started_at + ?)"
		args = append(args, now-stale.Seconds(), grace.Seconds())
	}
	excluded := map[string]bool{}
	for _, x := range opt.ExcludeIDs {
		excluded[x] = true
	}
	var victims []string
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		victims = []string{}
		var ids []string
		if err := tx.Raw("SELECT id FROM sessions WHERE ended_at IS NULL"+scope+" ORDER BY id", args...).Scan(&ids).Error; err != nil {
			return err
		}
		for _, id := range ids {
			if excluded[id] {
				continue
			}
			g, err := guardedRow(tx, id, now)
			if err != nil {
				return err
			}
			if !g {
				victims = append(victims, id)
			}
		}
		if len(victims) == 0 {
			return nil
		}
		return tx.Exec("UPDATE sessions SET ended_at = ?, end_reason = 'startup_orphan_reap' WHERE id IN ? AND ended_at IS NULL"+scope,
			append([]any{now, victims}, args...)...).Error
	})
	return victims, err
}

func (r *housekeepingRepo) ArchiveStale(ctx context.Context, opt ArchiveStaleOptions) (ArchiveStaleResult, error) {
	const op = "housekeeping.archive_stale"
	if opt.IdleFor < 0 || opt.MinInterval < 0 {
		return ArchiveStaleResult{}, errs.Errorf(errs.ErrInvalid, op, "negative durations")
	}
	idle := opt.IdleFor
	if idle == 0 {
		idle = 3 * 24 * time.Hour
	}
	now := nowOf(opt.Now)
	var res ArchiveStaleResult
	lr := &lineageRepo{r.db}
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res = ArchiveStaleResult{}
		if opt.MinInterval > 0 {
			var vals []string
			if err := tx.Raw("SELECT value FROM state_meta WHERE key = 'last_auto_archive'").Scan(&vals).Error; err != nil {
				return err
			}
			if len(vals) > 0 {
				if last, err := strconv.ParseFloat(strings.TrimSpace(vals[0]), 64); err == nil && last != 0 && now-last < opt.MinInterval.Seconds() {
					res.Skipped = true
					return nil
				}
			}
		}
		where := "s.archived = 0 AND COALESCE(s.end_reason, '') <> 'compression'"
		if !opt.IncludePinned {
			where += " AND COALESCE(s.pinned, 0) = 0 AND s.id NOT IN (" + r.db.pinnedTailSQL() + ")"
		}
		where += " AND NOT (COALESCE(s.hidden, 0) <> 0 AND COALESCE(s.title, '') = ?) AND " + lastActiveSQL("s") + " < ?"
		var ids []string
		if err := tx.Raw("SELECT s.id FROM sessions s WHERE "+where+" ORDER BY s.started_at ASC, s.id", canonicalBotChatTitle, now-idle.Seconds()).Scan(&ids).Error; err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := lr.setLineageColumn(tx, "archived", id, 1); err != nil {
				return err
			}
		}
		res.Archived = len(ids)
		if opt.MinInterval > 0 {
			return tx.Exec("INSERT INTO state_meta (key, value) VALUES ('last_auto_archive', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
				PyFloat(now)).Error
		}
		return nil
	})
	return res, err
}

func (r *housekeepingRepo) PruneGhosts(ctx context.Context, now time.Time) (int, error) {
	const op = "housekeeping.prune_ghosts"
	cutoff := nowOf(now) - 86400
	var n int
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Raw(`SELECT id FROM sessions WHERE source = 'tui' AND title IS NULL AND ended_at IS NOT NULL AND started_at < ?
			AND NOT EXISTS (SELECT 1 FROM messages WHERE messages.session_id = sessions.id) ORDER BY id`, cutoff).Scan(&ids).Error; err != nil {
			return err
		}
		n = len(ids)
		for start := 0; start < len(ids); start += 900 {
			chunk := ids[start:min(start+900, len(ids))]
			if err := tx.Exec("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN ?", chunk).Error; err != nil {
				return err
			}
			if err := tx.Exec("DELETE FROM sessions WHERE id IN ?", chunk).Error; err != nil {
				return err
			}
		}
		if n > 0 {
			return deleteUnreferencedPrompts(tx)
		}
		return nil
	})
	return n, err
}

func (r *housekeepingRepo) ClearExpired(ctx context.Context, now time.Time) (int64, int64, error) {
	const op = "housekeeping.clear_expired"
	at := nowOf(now)
	var leases, locks int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("DELETE FROM session_turn_leases WHERE expires_at <= ?", at)
		if res.Error != nil {
			return res.Error
		}
		leases = res.RowsAffected
		res = tx.Exec("DELETE FROM compression_locks WHERE expires_at < ?", at)
		locks = res.RowsAffected
		return res.Error
	})
	return leases, locks, err
}

func (r *housekeepingRepo) RetagKanban(ctx context.Context, root string) (int64, error) {
	const op = "housekeeping.retag_kanban"
	prefix := strings.TrimRight(root, `/\`)
	if prefix == "" {
		return 0, nil
	}
	if err := checkText(op, "root", prefix); err != nil {
		return 0, err
	}
	gate := "kanban_worker_source_retagged:" + prefix
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		n = 0
		var vals []string
		if err := tx.Raw("SELECT value FROM state_meta WHERE key = ?", gate).Scan(&vals).Error; err != nil {
			return err
		}
		if len(vals) > 0 && vals[0] == "1" {
			return nil
		}
		esc := EscapeLike(prefix)
		like := r.db.likeCI()
		res := tx.Exec(fmt.Sprintf(`UPDATE sessions SET source = 'kanban' WHERE source = 'cli'
			AND (cwd = ? OR cwd %[1]s ? ESCAPE '\' OR cwd %[1]s ? ESCAPE '\')`, like), prefix, esc+"/%", esc+`\\%`)
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		return tx.Exec("INSERT INTO state_meta (key, value) VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = excluded.value", gate).Error
	})
	return n, err
}

func (r *housekeepingRepo) BackfillRepoRoots(ctx context.Context, pairs map[string]string) (int64, error) {
	const op = "housekeeping.backfill_repo_roots"
	for cwd, root := range pairs {
		if err := checkText(op, "cwd", cwd); err != nil {
			return 0, err
		}
		if err := checkText(op, "repo root", root); err != nil {
			return 0, err
		}
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		n = 0
		for cwd, root := range pairs {
			if cwd == "" || root == "" {
				continue
			}
			res := tx.Exec("UPDATE sessions SET git_repo_root = ? WHERE cwd = ? AND COALESCE(git_repo_root, '') = ''", root, cwd)
			if res.Error != nil {
				return res.Error
			}
			n += res.RowsAffected
		}
		return nil
	})
	return n, err
}

func (r *housekeepingRepo) BackfillNullProfiles(ctx context.Context, profile string) (int64, error) {
	const op = "housekeeping.backfill_null_profiles"
	stamp := querytext.Strip(profile)
	if stamp == "" {
		return 0, nil
	}
	if err := checkText(op, "profile", stamp); err != nil {
		return 0, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE sessions SET profile_name = ? WHERE profile_name IS NULL OR TRIM(profile_name) = ''", stamp)
		n = res.RowsAffected
		return res.Error
	})
	return n, err
}

// staleMarkerIDs returns the assistant tool-call rows whose content,
// stripped, is a bare marker.
func staleMarkerIDs(tx *gorm.DB) ([]int64, error) {
	var rows []struct {
		ID      int64
		Content *string
	}
	if err := tx.Raw("SELECT id, content FROM messages WHERE role = 'assistant' AND tool_calls IS NOT NULL AND tool_calls != '' ORDER BY id").Scan(&rows).Error; err != nil {
		return nil, err
	}
	ids := []int64{}
	for _, row := range rows {
		if row.Content != nil && staleMarkerRe.MatchString(querytext.Strip(*row.Content)) {
			ids = append(ids, row.ID)
		}
	}
	return ids, nil
}

func (r *housekeepingRepo) PurgeStaleToolCallMarkers(ctx context.Context, dryRun, noBackup bool) (MarkerPurge, error) {
	const op = "housekeeping.purge_stale_tool_call_markers"
	ids, err := Read(ctx, r.db, op, staleMarkerIDs)
	if err != nil {
		return MarkerPurge{}, err
	}
	out := MarkerPurge{DryRun: dryRun, RowIDs: ids}
	if dryRun || len(ids) == 0 {
		return out, nil
	}
	if !noBackup && r.db.Dialect == SQLite && r.db.Path != "" {
		path := r.db.Path + ".pre-clean-markers-backup-" + time.Now().Format("20060102_150405")
		if _, err := os.Lstat(path); err == nil {
			return out, errs.Errorf(errs.ErrConflict, op, "the backup %s exists; run again in a second", path)
		}
		if err := NewCleanup(r.db).Backup(ctx, path); err != nil {
			return out, err
		}
		out.BackupPath = path
	}
	err = r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		ids, err := staleMarkerIDs(tx)
		if err != nil {
			return err
		}
		out.RowIDs = ids
		for start := 0; start < len(ids); start += 900 {
			if err := tx.Exec("UPDATE messages SET content = '' WHERE id IN ?", ids[start:min(start+900, len(ids))]).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

func (r *housekeepingRepo) OptimizeFTS(ctx context.Context) (int, error) {
	const op = "housekeeping.optimize_fts"
	if r.db.Dialect != SQLite {
		return 0, nil
	}
	tables, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
		var names []string
		err := tx.Raw(`SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%' AND sql LIKE '%fts5%' ORDER BY name`).Scan(&names).Error
		return names, err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range tables {
		werr := r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
			return tx.Exec(fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES('optimize')", quoteIdent(t))).Error
		})
		if werr != nil {
			// An index this build cannot load (another tokenizer) is skipped,
			// as Hermes skips what does not answer.
			r.db.logger().Warn("hermesstate: FTS optimize failed", "table", t, "err", werr)
			continue
		}
		n++
	}
	return n, nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

type inventoryRepo struct{ db *DB }

// NewInventory returns the GORM implementation of Inventory.
func NewInventory(db *DB) Inventory { return &inventoryRepo{db} }

func (r *inventoryRepo) CountBySource(ctx context.Context, opt CountBySourceOptions) (map[string]int64, error) {
	const op = "inventory.count_by_source"
	var where []string
	if opt.ExcludeChildren {
		where = append(where, r.db.listableChildSQL())
	}
	switch {
	case opt.ArchivedOnly:
		where = append(where, "s.archived = 1")
	case !opt.IncludeArchived:
		where = append(where, "s.archived = 0")
	}
	q := "SELECT COALESCE(NULLIF(s.source, ''), 'cli') AS source, COUNT(*) AS count FROM sessions s"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " GROUP BY COALESCE(NULLIF(s.source, ''), 'cli')"
	return Read(ctx, r.db, op, func(tx *gorm.DB) (map[string]int64, error) {
		var rows []struct {
			Source string
			Count  int64
		}
		if err := tx.Raw(q).Scan(&rows).Error; err != nil {
			return nil, err
		}
		out := make(map[string]int64, len(rows))
		for _, x := range rows {
			out[x.Source] = x.Count
		}
		return out, nil
	})
}

func (r *inventoryRepo) PruneCount(ctx context.Context, opt PruneCountOptions) (int64, error) {
	const op = "inventory.prune_count"
	if opt.OlderThan < 0 {
		return 0, errs.Errorf(errs.ErrInvalid, op, "older-than must not be negative")
	}
	where := []string{"s.ended_at IS NOT NULL"}
	if opt.Open {
		where[0] = "s.ended_at IS NULL"
	}
	var args []any
	if opt.OlderThan > 0 {
		cutoff := nowOf(opt.Now) - opt.OlderThan.Seconds()
		where = append(where, lastActiveSQL("s")+" < ?", "(COALESCE(s.end_reason, '') != 'startup_orphan_reap' OR s.ended_at < ?)")
		args = append(args, cutoff, cutoff)
	}
	if len(opt.Sources) > 0 {
		where = append(where, "s.source IN ?")
		args = append(args, opt.Sources)
	}
	if !opt.IncludePinned {
		where = append(where, "COALESCE(s.pinned, 0) = 0 AND s.id NOT IN ("+r.db.pinnedTailSQL()+")")
	}
	if opt.PinnedOnly {
		where = append(where, "COALESCE(s.pinned, 0) = 1")
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (int64, error) {
		var n int64
		err := tx.Raw("SELECT COUNT(*) FROM sessions s WHERE "+strings.Join(where, " AND "), args...).Scan(&n).Error
		return n, err
	})
}

func (r *inventoryRepo) IsKanbanOwned(ctx context.Context, sid string) (bool, error) {
	const op = "inventory.is_kanban_owned"
	if err := checkID(op, sid); err != nil {
		return false, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (bool, error) {
		ids, err := resumeLineage(tx, sid)
		if err != nil || len(ids) == 0 {
			return false, err
		}
		var n int64
		err = tx.Raw("SELECT COUNT(*) FROM sessions WHERE id IN ? AND (source = 'kanban' OR created_source = 'kanban')", ids).Scan(&n).Error
		return n > 0, err
	})
}

func (r *inventoryRepo) DeclaredScope(ctx context.Context, sid string) (bool, string, error) {
	const op = "inventory.declared_scope"
	if err := checkID(op, sid); err != nil {
		return false, "", err
	}
	type res struct {
		fork   bool
		source string
	}
	out, err := Read(ctx, r.db, op, func(tx *gorm.DB) (res, error) {
		s, err := getSession(tx, sid)
		if err != nil {
			if isNotFound(err) {
				return res{}, nil
			}
			return res{}, err
		}
		return res{isExplicitForkChild(s, false), querytext.Strip(s.Source)}, nil
	})
	return out.fork, out.source, err
}

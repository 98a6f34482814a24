package repo

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// DefaultRetention is Hermes' prune retention (90 days).
const DefaultRetention = 90 * 24 * time.Hour

// VacuumMinFreelistRatio: a VACUUM is worthwhile only when more than this
// fraction of the file's pages is free.
const VacuumMinFreelistRatio = 0.25

// idChunk bounds the ids bound in one IN (...) list.
const idChunk = 900

// PruneOptions selects what Cleanup.Prune deletes.
type PruneOptions struct {
	// OlderThan: sessions whose last activity is older than this (0 means
	// DefaultRetention). Only ended sessions are candidates.
	OlderThan time.Duration
	// Source keeps the prune to one source.
	Source string
	// DryRun lists the candidates without deleting.
	DryRun bool
	// Now is the reference time (zero = time.Now()).
	Now time.Time
	// Progress is told about deleted sessions.
	Progress Progress
}

// PruneResult lists the sessions a prune deleted (or would delete).
type PruneResult struct {
	IDs     []string `json:"ids"`
	Deleted int64    `json:"deleted"`
	DryRun  bool     `json:"dry_run"`
}

// VacuumResult says whether VACUUM ran and the file's free pages before.
type VacuumResult struct {
	Ran           bool    `json:"ran"`
	PageCount     int64   `json:"page_count"`
	FreelistCount int64   `json:"freelist_count"`
	FreeRatio     float64 `json:"free_ratio"`
}

// Cleanup deletes data: whole sessions, their messages, old sessions in
// bulk, and compacts or copies the file.
type Cleanup interface {
	// Delete removes a session, its messages and usage rows, and every
	// delegate (subagent) run below it recursively; other children
	// (compression, branch, reset, untagged) are orphaned (parent set
	// NULL). System prompts no longer referenced are removed. It returns
	// the ids deleted; ErrNotFound when the session does not exist.
	Delete(ctx context.Context, id string) ([]string, error)
	// ClearMessages deletes every message and usage row of a session but
	// keeps the row, resetting message/tool-call/token/api-call counters
	// (costs untouched) and stamping last_activity_at; system prompts no
	// longer referenced are removed. It returns the number of messages
	// deleted; ErrNotFound when the session is missing.
	ClearMessages(ctx context.Context, id string) (int64, error)
	// Prune deletes ended sessions whose last activity is older than the
	// cutoff, except pinned ones (and continuations of a pinned chain); a
	// compression ancestor goes only together with all its continuations.
	// Children of deleted rows are orphaned.
	Prune(ctx context.Context, opt PruneOptions) (PruneResult, error)
	// Vacuum rebuilds the file when more than VacuumMinFreelistRatio of it
	// is free (or force), with a PASSIVE checkpoint before and a TRUNCATE
	// after in WAL mode, and records last_vacuum. ErrUnsupported on
	// PostgreSQL.
	Vacuum(ctx context.Context, force bool) (VacuumResult, error)
	// Backup writes a consistent copy of the database to path with VACUUM
	// INTO, never leaving a partial or readable-by-others file: the copy is
	// written to a 0600 temporary file in path's directory (named
	// BackupTempPrefix + pid + ...; those of dead processes are removed
	// first), synced, checked (whole, schema readable) and only then given its name,
	// which is never overwritten. On any failure (a full disk included)
	// nothing is left. ErrConflict when path exists; ErrUnsupported on
	// PostgreSQL; ErrStorage (saying why) when it cannot be written.
	Backup(ctx context.Context, path string) error
	// DeleteTargets returns what Delete(id) would remove: id, then its
	// delegate runs (sorted); empty when id does not exist
	// (cleanup_bulk.go).
	DeleteTargets(ctx context.Context, id string) ([]string, error)
	// DeleteMany deletes several sessions as Delete does, in one
	// transaction; unknown ids are skipped. It returns how many of the
	// given sessions existed and were deleted (delegate runs not counted).
	DeleteMany(ctx context.Context, ids []string) (int, error)
	// DeleteIfEmpty deletes the session only when it has no messages, no
	// title and no children, and reports whether it did.
	DeleteIfEmpty(ctx context.Context, id string) (bool, error)
	// DeleteEmpty deletes every ended, unarchived session without
	// messages (what Listing.CountEmpty counts), orphaning their children,
	// and returns how many went.
	DeleteEmpty(ctx context.Context) (int, error)
}

type cleanupRepo struct{ db *DB }

// NewCleanup returns the GORM implementation of Cleanup.
func NewCleanup(db *DB) Cleanup { return &cleanupRepo{db} }

func chunks(ids []string) [][]string { return chunksOf(ids, idChunk) }

func chunksOf(ids []string, size int) [][]string {
	var out [][]string
	for len(ids) > 0 {
		n := min(len(ids), size)
		out = append(out, ids[:n])
		ids = ids[n:]
	}
	return out
}

// delegateChildren collects the delegate runs below parents, recursively
// (a row carrying $._delegate_from naming a collected id, or a child of a
// collected id carrying any _delegate_from). Parents are never returned.
func (d *DB) delegateChildren(tx *gorm.DB, parents []string) ([]string, error) {
	marker := d.jsonMarker("model_config", "_delegate_from")
	found := map[string]bool{}
	for _, p := range parents {
		found[p] = true
	}
	var out []string
	frontier := parents
	for depth := 0; len(frontier) > 0 && depth < maxLineageDepth; depth++ {
		var next []string
		for _, ch := range chunksOf(frontier, idChunk/2) { // each id is bound twice
			var ids []string
			ph := placeholders(len(ch))
			args := append(anySlice(ch), anySlice(ch)...)
			if err := tx.Raw(fmt.Sprintf(`SELECT id FROM sessions WHERE %[1]s IN (%[2]s) OR (parent_session_id IN (%[2]s) AND %[1]s IS NOT NULL)`,
				marker, ph), args...).Scan(&ids).Error; err != nil {
				return nil, err
			}
			for _, id := range ids {
				if !found[id] {
					found[id] = true
					out = append(out, id)
					next = append(next, id)
				}
			}
		}
		frontier = next
	}
	return out, nil
}

// deleteSessions removes the rows of ids (orphaning their children), their
// messages and usage rows.
func deleteSessions(tx *gorm.DB, ids []string) error {
	for _, ch := range chunks(ids) {
		a := anySlice(ch)
		ph := placeholders(len(ch))
		for _, q := range []string{
			"UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IN (" + ph + ")",
			"DELETE FROM messages WHERE session_id IN (" + ph + ")",
			"DELETE FROM session_model_usage WHERE session_id IN (" + ph + ")",
			"DELETE FROM sessions WHERE id IN (" + ph + ")",
		} {
			if err := tx.Exec(q, a...).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

// deleteUnreferencedPrompts removes the system_prompts rows no session
// references, by system_prompt_hash or by tool_names (Hermes dedupes the
// tools[] pin through the same table).
func deleteUnreferencedPrompts(tx *gorm.DB) error {
	// NOT IN over each column is computed once (an ephemeral index on
	// SQLite, a hashed subplan on PostgreSQL); tool_names has no index.
	return tx.Exec(`DELETE FROM system_prompts WHERE
		hash NOT IN (SELECT system_prompt_hash FROM sessions WHERE system_prompt_hash IS NOT NULL)
		AND hash NOT IN (SELECT tool_names FROM sessions WHERE tool_names IS NOT NULL)`).Error
}

func (r *cleanupRepo) Delete(ctx context.Context, id string) ([]string, error) {
	const op = "cleanup.delete"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	var removed []string
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		removed = nil
		ok, err := sessionExists(tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return noSession(op, id)
		}
		kids, err := r.db.delegateChildren(tx, []string{id})
		if err != nil {
			return err
		}
		if err := deleteSessions(tx, append(kids, id)); err != nil {
			return err
		}
		removed = append([]string{id}, kids...)
		return deleteUnreferencedPrompts(tx)
	})
	return removed, err
}

func (r *cleanupRepo) ClearMessages(ctx context.Context, id string) (int64, error) {
	const op = "cleanup.clear_messages"
	if err := checkID(op, id); err != nil {
		return 0, err
	}
	var n int64
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		ok, err := sessionExists(tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return noSession(op, id)
		}
		res := tx.Exec("DELETE FROM messages WHERE session_id = ?", id)
		if res.Error != nil {
			return res.Error
		}
		n = res.RowsAffected
		if err := tx.Exec("DELETE FROM session_model_usage WHERE session_id = ?", id).Error; err != nil {
			return err
		}
		if err := tx.Model(&models.Session{}).Where("id = ?", id).Updates(map[string]any{
			"message_count": 0, "tool_call_count": 0, "input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0,
			"cache_write_tokens": 0, "reasoning_tokens": 0, "api_call_count": 0, "last_activity_at": models.Now(),
		}).Error; err != nil {
			return err
		}
		return deleteUnreferencedPrompts(tx)
	})
	return n, err
}

// pruneWhere is the candidate predicate over alias s (bind cutoff twice,
// then source when given).
func (d *DB) pruneWhere(source string) string {
	edge := d.continuationEdge("p", "c")
	cand := fmt.Sprintf(`s.ended_at IS NOT NULL AND %s < ?
		AND (COALESCE(s.end_reason, '') <> 'startup_orphan_reap' OR s.ended_at < ?)`, lastActiveSQL("s"))
	if source != "" {
		cand += " AND s.source = ?"
	}
	pinnedTail := query("cleanup_pinned_tail", "edge", edge, "max_depth", maxDepthSQL)
	cand += " AND COALESCE(s.pinned, 0) = 0 AND s.id NOT IN (" + pinnedTail + ")"
	return cand
}

func (r *cleanupRepo) Prune(ctx context.Context, opt PruneOptions) (PruneResult, error) {
	const op = "cleanup.prune"
	if opt.OlderThan < 0 {
		return PruneResult{}, errs.Errorf(errs.ErrInvalid, op, "older-than must not be negative")
	}
	if opt.OlderThan == 0 {
		opt.OlderThan = DefaultRetention
	}
	if opt.Source != "" {
		if err := checkName(op, "source", opt.Source); err != nil {
			return PruneResult{}, err
		}
	}
	now := opt.Now
	if now.IsZero() {
		now = time.Now()
	}
	cutoff := float64(models.EpochOf(now.Add(-opt.OlderThan)))
	cand := r.db.pruneWhere(opt.Source)
	args := []any{cutoff, cutoff}
	if opt.Source != "" {
		args = append(args, opt.Source)
	}
	edge := r.db.continuationEdge("p", "c")
	// A compression ancestor stays while any continuation after it stays.
	kept := query("cleanup_kept_ancestors", "edge", edge, "candidates", cand, "max_depth", maxDepthSQL)
	q := fmt.Sprintf(`SELECT s.id FROM sessions s WHERE %s AND s.id NOT IN (%s) ORDER BY s.started_at, s.id`, cand, kept)
	qargs := append(append([]any{}, args...), args...)
	res := PruneResult{DryRun: opt.DryRun, IDs: []string{}}
	if opt.DryRun {
		ids, err := Read(ctx, r.db, op, func(tx *gorm.DB) ([]string, error) {
			out := []string{}
			return out, tx.Raw(q, qargs...).Scan(&out).Error
		})
		res.IDs = ids
		return res, err
	}
	err := r.db.Write(ctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		var ids []string
		if err := tx.Raw(q, qargs...).Scan(&ids).Error; err != nil {
			return err
		}
		for i, ch := range chunks(ids) {
			if err := deleteSessions(tx, ch); err != nil {
				return err
			}
			if opt.Progress != nil {
				opt.Progress(int64(min(len(ids), (i+1)*idChunk)), int64(len(ids)))
			}
		}
		if len(ids) > 0 {
			if err := deleteUnreferencedPrompts(tx); err != nil {
				return err
			}
		}
		res.IDs = append([]string{}, ids...)
		res.Deleted = int64(len(ids))
		return nil
	})
	return res, err
}

func (r *cleanupRepo) pages(ctx context.Context) (VacuumResult, error) {
	var v VacuumResult
	w := r.db.W.WithContext(ctx)
	if err := w.Raw("PRAGMA page_count").Scan(&v.PageCount).Error; err != nil {
		return v, err
	}
	if err := w.Raw("PRAGMA freelist_count").Scan(&v.FreelistCount).Error; err != nil {
		return v, err
	}
	if v.PageCount > 0 {
		v.FreeRatio = float64(v.FreelistCount) / float64(v.PageCount)
	}
	return v, nil
}

func (r *cleanupRepo) Vacuum(ctx context.Context, force bool) (VacuumResult, error) {
	const op = "cleanup.vacuum"
	if r.db.Dialect != SQLite {
		return VacuumResult{}, errs.Errorf(errs.ErrUnsupported, op, "VACUUM is managed by the PostgreSQL server")
	}
	if err := r.db.CheckWritable(op); err != nil {
		return VacuumResult{}, err
	}
	v, err := r.pages(ctx)
	if err != nil {
		return v, mapErr(op, err)
	}
	if !force && v.FreeRatio <= VacuumMinFreelistRatio {
		return v, nil
	}
	w := r.db.W.WithContext(ctx)
	var mode string
	_ = w.Raw("PRAGMA journal_mode").Scan(&mode).Error
	wal := mode == "wal"
	if wal {
		_ = w.Exec("PRAGMA wal_checkpoint(PASSIVE)").Error
	}
	_, err = sqlitex.Retry(ctx, r.db.budget(sqlitex.Routine), func() error { return w.Exec("VACUUM").Error })
	if err != nil {
		return v, mapErr(op, err)
	}
	if wal {
		_ = w.Exec("PRAGMA wal_checkpoint(TRUNCATE)").Error
	}
	v.Ran = true
	err = r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		return setMeta(tx, "last_vacuum", PyFloat(float64(models.Now())))
	})
	return v, err
}

// BackupTempPrefix starts the name of a backup being written.
const BackupTempPrefix = ".hermesstate-backup-"

func (r *cleanupRepo) Backup(ctx context.Context, path string) error {
	const op = "cleanup.backup"
	if r.db.Dialect != SQLite {
		return errs.Errorf(errs.ErrUnsupported, op, "use pg_dump to back up a PostgreSQL store")
	}
	if path == "" {
		return errs.Errorf(errs.ErrInvalid, op, "backup path is empty")
	}
	if err := checkText(op, "path", path); err != nil {
		return err
	}
	if err := sqlitex.CheckRegular(op, path); err != nil {
		return err
	}
	if _, err := os.Lstat(path); err == nil {
		return errs.Errorf(errs.ErrConflict, op, "%s already exists; choose a new file", path)
	}
	dir := filepath.Dir(path)
	safefile.RemoveStale(dir, BackupTempPrefix)
	tmp, err := safefile.CreateTemp(dir, BackupTempPrefix)
	if err != nil {
		return errs.Wrap(errs.ErrStorage, op, err, "cannot write in "+dir+": "+sqlitex.Describe(err))
	}
	done := false
	defer func() {
		if !done {
			safefile.Remove(tmp)
		}
	}()
	_, err = sqlitex.Retry(ctx, r.db.budget(sqlitex.Routine), func() error {
		return vacuumInto(ctx, r.db.W, tmp)
	})
	if err != nil {
		return mapErr(op, err)
	}
	if err := checkBackup(ctx, r.db.Engine, tmp); err != nil {
		return errs.Wrap(errs.ErrStorage, op, err, "the backup written to "+dir+" does not read back whole: "+err.Error())
	}
	if err := safefile.Publish(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return errs.Errorf(errs.ErrConflict, op, "%s already exists; choose a new file", path)
		}
		return errs.Wrap(errs.ErrStorage, op, err, "cannot name the backup "+path+": "+sqlitex.Describe(err))
	}
	done = true
	return nil
}

// checkBackup checks that a finished backup is whole: its header is valid
// and the file holds every page the header declares
// (safefile.CompleteSQLite), and SQLite reads its schema. (Not
// quick_check: its FTS5 part would report the source's own index
// inconsistencies, e.g. the trigram indexes of old Hermes files, which the
// copy carries faithfully.)
// vacuumInto writes a snapshot of the main database of g to path (VACUUM
// INTO) on one connection. A read-only store's connection may carry PRAGMA
// query_only (it opened the file for writing so that SQLite removes the
// side files it makes, see the root's openReadOnlyPool), which refuses
// VACUUM INTO although it only reads the database, and TEMP views named
// like the tables (an older Hermes file read as it is, package asis),
// which VACUUM's own CREATE INDEX statements would resolve to: both are
// lifted on that connection, which is then closed rather than reused.
func vacuumInto(ctx context.Context, g *gorm.DB, path string) error {
	pool, err := g.DB()
	if err != nil {
		return err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var qo int
	if err := conn.QueryRowContext(ctx, "PRAGMA query_only").Scan(&qo); err != nil {
		return err
	}
	views, err := tempViews(ctx, conn)
	if err != nil {
		return err
	}
	if qo != 0 || len(views) > 0 {
		// Never hand this connection to another user: it lost its
		// query_only or its views.
		defer func() { _ = conn.Raw(func(any) error { return driver.ErrBadConn }) }()
	}
	if qo != 0 {
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
			return err
		}
	}
	for _, v := range views {
		if _, err := conn.ExecContext(ctx, `DROP VIEW temp."`+strings.ReplaceAll(v, `"`, `""`)+`"`); err != nil {
			return err
		}
	}
	_, err = conn.ExecContext(ctx, "VACUUM INTO ?", path)
	return err
}

// tempViews lists the TEMP views of conn.
func tempViews(ctx context.Context, conn *sql.Conn) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT name FROM sqlite_temp_master WHERE type = 'view'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

func checkBackup(ctx context.Context, e *sqlitex.Engine, path string) error {
	if !safefile.CompleteSQLite(path) {
		return errors.New("the file is shorter than its header says")
	}
	if e == nil {
		e = sqlitex.GoEngine
	}
	uri, err := e.URI(sqlitex.ConnConfig{Path: path, BusyTimeout: time.Second, ReadOnly: true})
	if err != nil {
		return err
	}
	db, err := e.OpenDB(uri)
	if err != nil {
		return err
	}
	defer db.Close()
	var n int64
	return db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n)
}

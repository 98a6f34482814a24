package doctor

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"

	hfts "github.com/hermesstate/hermesstate/internal/ftsql"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/repo"
)

// repairMarkerPrefix + table is the state_meta key holding the last message
// id an interrupted FTS repopulation reached.
const repairMarkerPrefix = "hermesstate_repair_fts:"

// RepairOptions configures Repair.
type RepairOptions struct {
	Path string
	// JournalMode is the configured mode; empty means not configured (the
	// file's mode is left as it is).
	JournalMode string
	// DryRun lists the steps without running them.
	DryRun bool
	// ChunkRows bounds each transaction of a long step; default 5000.
	ChunkRows int
	// Progress, when set, is called as long steps advance.
	Progress func(step string, done, total int64)
	// Engine is the SQLite engine (see Options.Engine).
	Engine string
}

// Action is one repair step, done or (dry run) planned.
type Action struct {
	Step   string `json:"step"`
	Object string `json:"object,omitempty"`
	Detail string `json:"detail"`
	Rows   int64  `json:"rows,omitempty"`
}

// RepairReport says what Repair did.
type RepairReport struct {
	DryRun  bool     `json:"dry_run"`
	Before  *Report  `json:"before"`
	After   *Report  `json:"after,omitempty"`
	Actions []Action `json:"actions"`
	// Unfixable are the problems repair does not fix (recover does).
	Unfixable []Finding `json:"unfixable"`
}

// Repair fixes what is safe to fix in place, in bounded steps that each
// commit on their own, never deleting a row: journal mode, missing tables,
// columns, indexes and triggers, damaged FTS tables (rebuilt), indexes that
// disagree with their table (REINDEX), orphan references (a placeholder
// session is added, or a dangling parent/system-prompt reference cleared),
// counters, and FTS optimisation. Running it again after it finished
// changes nothing; an interrupted run is finished by the next one.
//
// It returns an error wrapping errs.ErrCorrupt (and changes nothing) when
// the file has page-level damage: run Recover; errs.ErrStorage (and
// changes nothing) when the file cannot be opened or written where it lies
// (a full disk, a read-only mount: doctor's CheckPlace), except that a
// file with nothing to fix is left alone without error. Other failures wrap
// errs.ErrStorage or errs.ErrBusy; the report then lists the steps that
// committed.
func Repair(ctx context.Context, opts RepairOptions) (*RepairReport, error) {
	if opts.ChunkRows <= 0 {
		opts.ChunkRows = 5000
	}
	// The full integrity_check runs before anything is written: an index
	// that disagrees with its table is found (quick_check does not compare
	// index entries with rows), and page-level damage, which quick_check
	// misses too (pages "never used" when another store's -wal lies beside
	// the file), stops repair before its first write.
	before, err := Check(ctx, Options{Path: opts.Path, JournalMode: opts.JournalMode, Full: true, Engine: opts.Engine})
	if err != nil {
		return nil, err
	}
	rep := &RepairReport{DryRun: opts.DryRun, Before: before, Actions: []Action{}, Unfixable: []Finding{}}
	for _, f := range before.Findings {
		if f.Severity != Info && f.Fix != FixRepair && f.Fix != "" {
			rep.Unfixable = append(rep.Unfixable, f)
		}
	}
	if before.SchemaVersion > migrations.HermesSchemaVersion {
		return rep, errs.Errorf(errs.ErrUnsupported, "repair", "%s has Hermes schema version %d, newer than %d, the newest this hermes-state knows: it is never repaired by this build (nothing was changed); upgrade hermes-state",
			opts.Path, before.SchemaVersion, migrations.HermesSchemaVersion)
	}
	if why := before.state.place; why != "" {
		return rep, errs.Errorf(errs.ErrStorage, "repair", "%s cannot be repaired here: %s; that is where the file lies, not damage to it, and nothing was changed (%s)",
			opts.Path, why, placeFix(why, opts.Path))
	}
	if before.state.hotJournal {
		rep.Actions = append(rep.Actions, Action{Step: "rollback", Object: opts.Path + "-journal",
			Detail: "roll back the interrupted transaction its -journal holds (the file keeps its journal mode)"})
		if opts.DryRun {
			return rep, nil // nothing else can be read before the rollback
		}
		if err := rollbackHotJournal(ctx, opts.Engine, opts.Path); err != nil {
			return rep, err
		}
		rest, err := Repair(ctx, opts)
		if rest != nil {
			rest.Before = before
			rest.Actions = append(rep.Actions, rest.Actions...)
		}
		return rest, err
	}
	if before.state.unreadable {
		return rep, errs.Errorf(errs.ErrCorrupt, "repair", "%s has page-level damage that repair must not write over; salvage it with `hermes-state recover --from %s --to NEW`", opts.Path, sqlitex.ShellQuote(opts.Path))
	}
	if why := sqlitex.Place(opts.Path); why != "" {
		// Nothing can be written here: nothing to fix is "nothing to
		// repair" (the optional FTS optimisation is left out); fixes wait
		// for a writable place.
		if !needsRepair(before) {
			return rep, nil
		}
		return rep, errs.Errorf(errs.ErrStorage, "repair", "%s cannot be written here (%s), and nothing was changed: run repair where the file can be written (%s)",
			opts.Path, why, placeFix(why, opts.Path))
	}
	eng, err := engineFor("repair", opts.Engine)
	if err != nil {
		return rep, err
	}
	var db *sql.DB
	if opts.DryRun {
		// A dry run only reads: a writable connection would checkpoint
		// the -wal into the file, and remove it, when it closes.
		db, err = openReadOnly(ctx, eng, opts.Path)
	} else {
		db, err = eng.OpenDB(eng.DSN(sqlitex.ConnConfig{Path: opts.Path, BusyTimeout: 5 * time.Second, Immediate: true}))
	}
	if err != nil {
		return rep, errtext.Storage("repair", err, "cannot open "+opts.Path, opts.Path)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	g, err := gormOn(eng, db)
	if err != nil {
		return rep, errtext.Storage("repair", err, "cannot open "+opts.Path, opts.Path)
	}
	rp := &repairer{ctx: ctx, db: db, g: g.WithContext(ctx), opts: opts, st: before.state, rep: rep}
	if err := rp.run(); err != nil {
		return rep, err
	}
	if !opts.DryRun {
		db.Close()
		after, err := Check(ctx, Options{Path: opts.Path, JournalMode: opts.JournalMode, Full: true, Engine: opts.Engine})
		if err != nil {
			return rep, err
		}
		rep.After = after
	}
	return rep, nil
}

// needsRepair reports whether the report holds a problem that repair fixes.
func needsRepair(r *Report) bool {
	for _, f := range r.Findings {
		if f.Severity != Info && f.Fix == FixRepair {
			return true
		}
	}
	return false
}

type repairer struct {
	ctx  context.Context
	db   *sql.DB
	g    *gorm.DB // the same connection, for package fts
	opts RepairOptions
	st   *state
	rep  *RepairReport
}

func (rp *repairer) act(step, object, detail string, rows int64) {
	rp.rep.Actions = append(rp.rep.Actions, Action{Step: step, Object: object, Detail: detail, Rows: rows})
}

// tx runs fn in one BEGIN IMMEDIATE transaction, retrying lock errors for
// up to 20 s.
func (rp *repairer) tx(op string, fn func(tx *sql.Tx) error) error {
	res, err := sqlitex.Retry(rp.ctx, 20*time.Second, func() error {
		tx, err := rp.db.BeginTx(rp.ctx, nil)
		if err != nil {
			return err
		}
		if err := fn(tx); err != nil {
			tx.Rollback()
			return err
		}
		return tx.Commit()
	})
	return rp.mapErr(op, res, err)
}

// gtx is tx for package fts' helpers, which take a *gorm.DB.
func (rp *repairer) gtx(op string, fn func(tx *gorm.DB) error) error {
	res, err := sqlitex.Retry(rp.ctx, 20*time.Second, func() error {
		return rp.g.Transaction(fn)
	})
	return rp.mapErr(op, res, err)
}

func (rp *repairer) mapErr(op string, res sqlitex.RetryResult, err error) error {
	if err != nil {
		switch {
		case sqlitex.IsLock(err):
			return errs.Wrap(errs.ErrBusy, "repair", err, fmt.Sprintf("%s: the file stayed locked for %s", op, res.Waited.Round(time.Millisecond)))
		case sqlitex.IsCorrupt(err):
			return errs.Wrap(errs.ErrCorrupt, "repair", err, fmt.Sprintf("%s: %s is damaged; salvage it with `hermes-state recover --from %s --to NEW`", op, rp.opts.Path, sqlitex.ShellQuote(rp.opts.Path)))
		}
		return errtext.Storage("repair", err, op+" failed", rp.opts.Path)
	}
	return nil
}

// run applies the repair as a list of steps, in this order; each acts on
// what the check found (rp.st) and records what it does (or, dry, would do).
func (rp *repairer) run() error {
	for _, step := range []func() error{
		rp.fixJournalMode,     // 1. journal mode
		rp.fixSchema,          // 2. tables, columns, indexes, display triggers
		rp.fixOrphans,         // 3. orphan references (before FTS)
		rp.fixFTSObjects,      // 4. FTS triggers, then views
		rp.fixFTSTables,       // 5. FTS tables found damaged, the CJK index
		rp.fixIndexes,         // 6. indexes that disagree with their tables
		rp.fixJSON,            // 7. JSON columns holding text that is not JSON
		rp.fixLoops,           // 8. parents that form a loop
		rp.fixCounters,        // 9. session counters
		rp.fixActivity,        // 10. the session activity table
		rp.fixTrigramFeed,     // 11. the trigram index fed up to U+0000
		rp.optimizeFTSIndexes, // 12. FTS indexes of more than one segment
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// execAll runs stmts in one transaction; name(s) says which failed.
func (rp *repairer) execAll(op string, stmts []string, name func(string) string) error {
	return rp.tx(op, func(tx *sql.Tx) error {
		for _, s := range stmts {
			if _, err := tx.ExecContext(rp.ctx, s); err != nil {
				if name == nil {
					return err
				}
				return fmt.Errorf("%s: %w", name(s), err)
			}
		}
		return nil
	})
}

// fixJournalMode switches the file to the wanted journal mode.
func (rp *repairer) fixJournalMode() error {
	if !rp.st.journalWrong {
		return nil
	}
	want := strings.ToLower(rp.opts.JournalMode)
	rp.act("journal_mode", "", "switch the file to journal mode "+want, 0)
	if rp.opts.DryRun {
		return nil
	}
	var got string
	if err := rp.db.QueryRowContext(rp.ctx, "PRAGMA journal_mode="+strings.ToUpper(want)).Scan(&got); err != nil {
		return errs.Wrap(errs.ErrBusy, "repair", err, "cannot switch the journal mode (another process has the file open?)")
	}
	return nil
}

// fixSchema creates the missing tables, columns, indexes and display
// triggers.
func (rp *repairer) fixSchema() error {
	st := rp.st
	if st.unadopted {
		return nil // adoption (migrate, or any writable open) adds the v30 schema
	}
	if len(st.missingTabs)+len(st.missingCols)+len(st.missingIdx) == 0 && !hasDisplayTrigger(st.missingTrig) {
		return nil
	}
	var stmts []string
	var details []string
	for _, t := range st.missingTabs {
		stmts = append(stmts, t.SQL)
		details = append(details, "create table "+t.Name)
	}
	for table, cols := range st.missingCols {
		for _, col := range cols {
			stmts = append(stmts, "ALTER TABLE "+schemaref.QuoteIdent(table)+" ADD COLUMN "+col.Decl())
			details = append(details, "add column "+table+"."+col.Name)
		}
	}
	for _, ix := range st.missingIdx {
		stmts = append(stmts, ix.SQL)
		details = append(details, "create index "+ix.Name)
	}
	for _, tg := range st.missingTrig {
		if tg.Table == "" {
			stmts = append(stmts, tg.SQL)
			details = append(details, "create trigger "+tg.Name)
		}
	}
	for _, d := range details {
		rp.act("schema", "", d, 0)
	}
	if rp.opts.DryRun {
		return nil
	}
	return rp.execAll("schema", stmts, firstLine)
}

// fixOrphans repairs orphan references. It runs before FTS: a placeholder
// session changes what the current layout's trigram view holds.
func (rp *repairer) fixOrphans() error {
	st := rp.st
	added, err := rp.orphans()
	if err != nil {
		return err
	}
	if added > 0 && st.layout == LayoutCurrent {
		if _, ok := st.ftsByName[hfts.TrigramTable]; ok {
			st.badFTS[hfts.TrigramTable] = "placeholder sessions added"
		}
	}
	return nil
}

// fixFTSObjects creates the missing FTS triggers first (new writes are
// indexed from now on), then the missing views.
func (rp *repairer) fixFTSObjects() error {
	st := rp.st
	dry := rp.opts.DryRun
	var ftsTrig []triggerDef
	for _, tg := range st.missingTrig {
		if tg.Table != "" {
			ftsTrig = append(ftsTrig, tg)
			rp.act("fts", tg.Name, "create trigger "+tg.Name, 0)
		}
	}
	if len(ftsTrig) > 0 && !dry {
		if err := rp.tx("fts triggers", func(tx *sql.Tx) error {
			for _, tg := range ftsTrig {
				if _, err := tx.ExecContext(rp.ctx, tg.SQL); err != nil {
					return fmt.Errorf("create trigger %s: %w", tg.Name, err)
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	if len(st.missingViews) == 0 {
		return nil
	}
	for _, v := range st.missingViews {
		rp.act("fts", "", firstLine(v), 0)
	}
	if dry {
		return nil
	}
	return rp.execAll("fts views", st.missingViews, nil)
}

// fixFTSTables rebuilds every FTS table found damaged or fed by a missing
// trigger (the current layout as a whole), then resets the CJK index when
// asked.
func (rp *repairer) fixFTSTables() error {
	st := rp.st
	if st.layout == LayoutCurrent && (len(st.badFTS) > 0 || st.backfill) {
		if err := rp.rebuildCurrent(); err != nil {
			return err
		}
	} else {
		for _, name := range sortedKeys(st.badFTS) {
			t, ok := st.ftsByName[name]
			if !ok {
				continue
			}
			if err := rp.rebuildFTS(t, st.badFTS[name]); err != nil {
				return err
			}
		}
	}
	if st.cjkReset {
		return rp.resetCJK()
	}
	return nil
}

// fixIndexes rebuilds the indexes that disagree with their tables.
func (rp *repairer) fixIndexes() error {
	for _, ix := range sortedKeys(rp.st.badIndexes) {
		rp.act("reindex", ix, "rebuild index "+ix+" from its table", 0)
		if rp.opts.DryRun {
			continue
		}
		if err := rp.tx("reindex "+ix, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(rp.ctx, "REINDEX "+schemaref.QuoteIdent(ix))
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// fixCounters recomputes the session counters found wrong.
func (rp *repairer) fixCounters() error {
	if rp.st.counterRows == 0 {
		return nil
	}
	return rp.counters()
}

// fixActivity recreates the triggers of the session activity table and
// recomputes its rows.
func (rp *repairer) fixActivity() error {
	if !rp.st.activity {
		return nil
	}
	rp.act("activity", repo.ActivityTable, "recreate the triggers of "+repo.ActivityTable+" and recompute every session's last activity", 0)
	if rp.opts.DryRun {
		return nil
	}
	return rp.execAll("activity", repo.SessionActivityStatements(), nil)
}

// fixTrigramFeed makes the trigram view and triggers feed each text up to
// its first U+0000 (ftsql.TrigramWithoutNUL) on an adopted file, checking
// the file again (repair may have recreated a trigger from Hermes' text).
func (rp *repairer) fixTrigramFeed() error {
	if rp.st.unadopted {
		return nil // adoption's work
	}
	if !rp.opts.DryRun {
		feeds, err := hfts.TrigramFeedsNUL(rp.g)
		if err != nil || !feeds {
			return err
		}
	} else if !rp.st.trigramFeed {
		return nil
	}
	rp.act("fts", hfts.TrigramTable, "feed "+hfts.TrigramTable+" each text up to its first U+0000, as every SQLite indexes it alike", 0)
	if rp.opts.DryRun {
		return nil
	}
	return rp.gtx("trigram feed", func(tx *gorm.DB) error {
		_, err := hfts.TrigramWithoutNUL(tx)
		return err
	})
}

// optimizeFTSIndexes merges the segments of every FTS index that holds
// more than one.
func (rp *repairer) optimizeFTSIndexes() error {
	if rp.st.unadopted {
		return nil // a Hermes file as Hermes left it: nothing to fix, nothing written
	}
	if rp.rep.Before != nil && !rp.rep.Before.Complete() {
		// Another process kept the file busy while it was checked: the
		// optional merge waits for a run when it is idle (the report says
		// to run again then), rather than for the lock.
		return nil
	}
	for name, t := range rp.st.ftsByName {
		if strings.Contains(t.Tokenize, cjkTokenizer) {
			continue
		}
		n, err := ftsSegments(rp.ctx, rp.db, name)
		if err != nil || n <= 1 {
			continue
		}
		rp.act("fts_optimize", name, fmt.Sprintf("merge the %d segments of %s into one", n, name), 0)
		if rp.opts.DryRun {
			continue
		}
		if err := rp.tx("optimize "+name, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(rp.ctx, fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES ('optimize')", schemaref.QuoteIdent(name)))
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func hasDisplayTrigger(ts []triggerDef) bool {
	for _, t := range ts {
		if t.Table == "" {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func (rp *repairer) exists(typ, name string) bool {
	var n int
	_ = rp.db.QueryRowContext(rp.ctx, "SELECT count(*) FROM sqlite_master WHERE type = ? AND name = ?", typ, name).Scan(&n)
	return n > 0
}

// rebuildFTS rebuilds one FTS table. An external-content table is rebuilt
// from its content with FTS5 'rebuild' (recreated first when its shadow
// tables are gone). An inline (legacy) table whose own content is intact is
// rebuilt the same way; otherwise it is recreated empty and refilled from
// messages in id chunks, each its own transaction, the last id reached kept
// in state_meta so that an interrupted repair resumes there.
func (rp *repairer) rebuildFTS(t ftsTable, reason string) error {
	dry := rp.opts.DryRun
	marker := repairMarkerPrefix + t.Name
	var resumeFrom sql.NullInt64
	_ = rp.db.QueryRowContext(rp.ctx, "SELECT CAST(value AS INTEGER) FROM state_meta WHERE key = ?", marker).Scan(&resumeFrom)
	shadowsOK := true
	for _, sh := range t.shadows() {
		if !rp.exists("table", sh) {
			shadowsOK = false
		}
	}
	if t.external() {
		if !rp.exists("table", t.Content) && !rp.exists("view", t.Content) {
			rp.act("fts", t.Name, fmt.Sprintf("cannot rebuild %s: its content source %s is missing", t.Name, t.Content), 0)
			return nil
		}
		rp.act("fts_rebuild", t.Name, fmt.Sprintf("rebuild %s from %s (%s)", t.Name, t.Content, reason), 0)
		if dry {
			return nil
		}
		return rp.tx("rebuild "+t.Name, func(tx *sql.Tx) error {
			if !shadowsOK {
				if err := recreate(execOn(rp.ctx, tx), t); err != nil {
					return err
				}
			}
			_, err := tx.ExecContext(rp.ctx, fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES ('rebuild')", schemaref.QuoteIdent(t.Name)))
			return err
		})
	}
	if len(t.Columns) != 1 {
		rp.act("fts", t.Name, fmt.Sprintf("cannot rebuild inline FTS table %s of an unknown shape (%d columns)", t.Name, len(t.Columns)), 0)
		return nil
	}
	// Inline table with intact content whose rows match messages: 'rebuild'
	// re-tokenizes its own content.
	if shadowsOK && !resumeFrom.Valid && reason != "row count differs" && reason != "trigger missing" {
		rp.act("fts_rebuild", t.Name, fmt.Sprintf("rebuild the index of %s from its stored content (%s)", t.Name, reason), 0)
		if dry {
			return nil
		}
		return rp.tx("rebuild "+t.Name, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(rp.ctx, fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES ('rebuild')", schemaref.QuoteIdent(t.Name)))
			return err
		})
	}
	var maxID int64
	_ = rp.db.QueryRowContext(rp.ctx, "SELECT COALESCE(MAX(id), 0) FROM messages").Scan(&maxID)
	if resumeFrom.Valid {
		rp.act("fts_rebuild", t.Name, fmt.Sprintf("resume refilling %s from messages after id %d", t.Name, resumeFrom.Int64), 0)
	} else {
		rp.act("fts_rebuild", t.Name, fmt.Sprintf("recreate %s and refill it from messages (%s)", t.Name, reason), 0)
	}
	if dry {
		return nil
	}
	from := resumeFrom.Int64
	if !resumeFrom.Valid {
		if err := rp.tx("recreate "+t.Name, func(tx *sql.Tx) error {
			if err := recreate(execOn(rp.ctx, tx), t); err != nil {
				return err
			}
			_, err := tx.ExecContext(rp.ctx, "INSERT OR REPLACE INTO state_meta (key, value) VALUES (?, '0')", marker)
			return err
		}); err != nil {
			return err
		}
	}
	ins := fmt.Sprintf(`INSERT INTO %[1]s(rowid, %[2]s) SELECT m.id, %[3]s FROM messages AS m
		WHERE m.id > ? AND m.id <= ? AND NOT EXISTS (SELECT 1 FROM %[4]s AS c WHERE c.id = m.id)`,
		schemaref.QuoteIdent(t.Name), schemaref.QuoteIdent(t.Columns[0]), fmt.Sprintf(legacyExpr, "m"), schemaref.QuoteIdent(t.Name+"_content"))
	var total int64
	for from < maxID {
		to := from + int64(rp.opts.ChunkRows)
		var n int64
		if err := rp.tx("refill "+t.Name, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(rp.ctx, ins, from, to)
			if err != nil {
				return err
			}
			n, _ = res.RowsAffected()
			_, err = tx.ExecContext(rp.ctx, "UPDATE state_meta SET value = ? WHERE key = ?", fmt.Sprint(to), marker)
			return err
		}); err != nil {
			return err
		}
		total += n
		from = to
		if rp.opts.Progress != nil {
			rp.opts.Progress("fts "+t.Name, min(from, maxID), maxID)
		}
	}
	rp.rep.Actions[len(rp.rep.Actions)-1].Rows = total
	return rp.tx("finish "+t.Name, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(rp.ctx, "DELETE FROM state_meta WHERE key = ?", marker)
		return err
	})
}

// rebuildCurrent rebuilds both FTS tables of the current layout with
// package fts' chunked rebuild: Hermes' markers (fts_rebuild_high_water /
// _progress) gate the triggers meanwhile and let an interrupted repair (or
// Hermes itself) resume where it stopped. A table whose shadow tables are
// gone is recreated from its own DDL first.
func (rp *repairer) rebuildCurrent() error {
	var reasons []string
	for _, n := range sortedKeys(rp.st.badFTS) {
		reasons = append(reasons, n+": "+rp.st.badFTS[n])
	}
	if rp.st.backfill && len(reasons) == 0 {
		reasons = append(reasons, "finish the FTS backfill in progress")
	}
	rp.act("fts_rebuild", hfts.WordTable+", "+hfts.TrigramTable, "rebuild the current-layout FTS tables in chunks ("+strings.Join(reasons, "; ")+")", 0)
	if rp.opts.DryRun {
		return nil
	}
	if err := rp.gtx("fts rebuild start", func(tx *gorm.DB) error {
		for _, name := range []string{hfts.WordTable, hfts.TrigramTable} {
			t, ok := rp.st.ftsByName[name]
			if !ok {
				continue
			}
			for _, sh := range t.shadows() {
				var n int64
				tx.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", sh).Scan(&n)
				if n == 0 {
					if err := recreate(func(q string) error { return tx.Exec(q).Error }, t); err != nil {
						return err
					}
					break
				}
			}
		}
		_, err := hfts.StartRebuild(tx)
		return err
	}); err != nil {
		return err
	}
	var rows int64
	for {
		var more bool
		var p, hw, before int64
		if err := rp.gtx("fts rebuild step", func(tx *gorm.DB) error {
			tx.Raw("SELECT COALESCE(CAST(value AS INTEGER), 0) FROM state_meta WHERE key = 'fts_rebuild_progress'").Scan(&before)
			var err error
			p, hw, more, err = hfts.RebuildStep(tx, rp.opts.ChunkRows)
			return err
		}); err != nil {
			return err
		}
		rows += p - before
		if rp.opts.Progress != nil {
			rp.opts.Progress("fts rebuild", p, hw)
		}
		if !more {
			break
		}
	}
	rp.rep.Actions[len(rp.rep.Actions)-1].Rows = rows
	return rp.gtx("fts rebuild finish", func(tx *gorm.DB) error { return hfts.FinishRebuild(tx) })
}

// resetCJK recreates hermesstate's CJK posting index (package fts): empty,
// every message queued, then the queue drained in chunks.
func (rp *repairer) resetCJK() error {
	rp.act("fts", hfts.CJKIndexTable, "recreate the CJK posting index and index every message again", 0)
	if rp.opts.DryRun {
		return nil
	}
	if err := rp.gtx("cjk reset", func(tx *gorm.DB) error { return hfts.ResetCJKIndex(tx) }); err != nil {
		return err
	}
	var total int64
	for {
		var n int
		if err := rp.gtx("cjk index", func(tx *gorm.DB) error {
			var err error
			n, err = hfts.IndexPending(tx, rp.opts.ChunkRows)
			return err
		}); err != nil {
			return err
		}
		total += int64(n)
		if n == 0 {
			break
		}
	}
	rp.rep.Actions[len(rp.rep.Actions)-1].Rows = total
	return nil
}

// recreate drops t (and whatever shadow tables remain) and creates it again,
// empty, from its own DDL.
func recreate(exec func(string) error, t ftsTable) error {
	// FTS5 cannot open (nor so drop) a table whose shadow tables are gone:
	// put empty ones back first, then drop the table with all of them.
	for _, sh := range shadowDDL(t) {
		if err := exec(sh); err != nil {
			return fmt.Errorf("stub shadow of %s: %w", t.Name, err)
		}
	}
	if err := exec("DROP TABLE IF EXISTS " + schemaref.QuoteIdent(t.Name)); err != nil {
		return fmt.Errorf("drop %s: %w", t.Name, err)
	}
	for _, sh := range t.shadows() {
		if err := exec("DROP TABLE IF EXISTS " + schemaref.QuoteIdent(sh)); err != nil {
			return fmt.Errorf("drop %s: %w", sh, err)
		}
	}
	if err := exec(t.SQL); err != nil {
		return fmt.Errorf("create %s: %w", t.Name, err)
	}
	return nil
}

// shadowDDL returns CREATE TABLE IF NOT EXISTS statements of the shadow
// tables FTS5 keeps for t, with an empty configuration (version 4).
func shadowDDL(t ftsTable) []string {
	q := func(s string) string { return schemaref.QuoteIdent(t.Name + s) }
	out := []string{
		"CREATE TABLE IF NOT EXISTS " + q("_data") + "(id INTEGER PRIMARY KEY, block BLOB)",
		"CREATE TABLE IF NOT EXISTS " + q("_idx") + "(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID",
		"CREATE TABLE IF NOT EXISTS " + q("_config") + "(k PRIMARY KEY, v) WITHOUT ROWID",
		"INSERT OR IGNORE INTO " + q("_config") + "(k, v) VALUES ('version', 4)",
	}
	if !t.NoSize {
		out = append(out, "CREATE TABLE IF NOT EXISTS "+q("_docsize")+"(id INTEGER PRIMARY KEY, sz BLOB)")
	}
	if !t.external() {
		cols := []string{"id INTEGER PRIMARY KEY"}
		for i := range t.Columns {
			cols = append(cols, fmt.Sprintf("c%d", i))
		}
		out = append(out, "CREATE TABLE IF NOT EXISTS "+q("_content")+"("+strings.Join(cols, ", ")+")")
	}
	return out
}

func execOn(ctx context.Context, tx *sql.Tx) func(string) error {
	return func(q string) error {
		_, err := tx.ExecContext(ctx, q)
		return err
	}
}

// orphans restores the references PRAGMA foreign_key_check found broken,
// adding rows or clearing a dangling reference, never deleting.
func (rp *repairer) orphans() (placeholders int64, err error) {
	o := rp.st.orphans
	if len(o) == 0 {
		return 0, nil
	}
	type fix struct{ key, detail, sql string }
	var fixes []fix
	if o["messages.session_id"]+o["session_model_usage.session_id"] > 0 {
		fixes = append(fixes, fix{"messages.session_id", "add a placeholder session (source 'recovered', ended) for every session id that messages or usage rows reference but no session row holds",
			`INSERT INTO sessions (id, source, started_at, ended_at, end_reason, message_count, tool_call_count)
			 SELECT sid, 'recovered', MIN(ts), MAX(ts), 'recovered_orphans', 0, 0 FROM (
			   SELECT session_id AS sid, timestamp AS ts FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)
			   UNION ALL
			   SELECT session_id, COALESCE(first_seen, last_seen, 0) FROM session_model_usage WHERE session_id NOT IN (SELECT id FROM sessions)
			 ) GROUP BY sid`})
	}
	if o["sessions.parent_session_id"] > 0 {
		fixes = append(fixes, fix{"sessions.parent_session_id", "clear parent_session_id where the parent session is gone (as Hermes does when it deletes a parent)",
			`UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id IS NOT NULL AND parent_session_id NOT IN (SELECT id FROM sessions)`})
	}
	if o["sessions.system_prompt_hash"] > 0 {
		fixes = append(fixes, fix{"sessions.system_prompt_hash", "clear system_prompt_hash where the system_prompts row is gone",
			`UPDATE sessions SET system_prompt_hash = NULL WHERE system_prompt_hash IS NOT NULL AND system_prompt_hash NOT IN (SELECT hash FROM system_prompts)`})
	}
	for _, f := range fixes {
		rp.act("foreign_keys", f.key, f.detail, 0)
		if rp.opts.DryRun {
			continue
		}
		var n int64
		if err := rp.tx("foreign keys", func(tx *sql.Tx) error {
			res, err := tx.ExecContext(rp.ctx, f.sql)
			if err == nil {
				n, _ = res.RowsAffected()
			}
			return err
		}); err != nil {
			return placeholders, err
		}
		rp.rep.Actions[len(rp.rep.Actions)-1].Rows = n
		if f.key == "messages.session_id" && n > 0 {
			rp.st.counterRows += n // placeholders need their counters
			placeholders = n
		}
	}
	return placeholders, nil
}

// counters recomputes message_count and tool_call_count of the sessions
// whose counters disagree with their active rows, in rowid chunks, as
// Hermes counts them (_active_transcript_counts: the active rows, and the
// tool calls their tool_calls hold).
func (rp *repairer) counters() error {
	active := ""
	if rp.st.activeCol {
		active = " AND COALESCE(m.active, 1) = 1"
	}
	upd := `UPDATE sessions SET
	  message_count = (SELECT count(*) FROM messages AS m WHERE m.session_id = sessions.id` + active + `),
	  tool_call_count = (SELECT COALESCE(SUM(CASE WHEN m.tool_calls IS NULL OR m.tool_calls = '' THEN 0
	       WHEN json_valid(m.tool_calls) AND json_type(m.tool_calls) = 'array' THEN json_array_length(m.tool_calls) ELSE 1 END), 0)
	     FROM messages AS m WHERE m.session_id = sessions.id` + active + `)
	WHERE rowid > ? AND rowid <= ? AND id IN (SELECT id FROM (` + counterSQL(rp.st.activeCol) + `))`
	rp.act("counters", "sessions", fmt.Sprintf("recompute message_count and tool_call_count of %d sessions from their active rows", rp.st.counterRows), 0)
	if rp.opts.DryRun {
		return nil
	}
	var maxRow int64
	_ = rp.db.QueryRowContext(rp.ctx, "SELECT COALESCE(MAX(rowid), 0) FROM sessions").Scan(&maxRow)
	var total int64
	step := int64(rp.opts.ChunkRows)
	for from := int64(0); from < maxRow; from += step {
		var n int64
		if err := rp.tx("counters", func(tx *sql.Tx) error {
			res, err := tx.ExecContext(rp.ctx, upd, from, from+step)
			if err == nil {
				n, _ = res.RowsAffected()
			}
			return err
		}); err != nil {
			return err
		}
		total += n
		if rp.opts.Progress != nil {
			rp.opts.Progress("counters", min(from+step, maxRow), maxRow)
		}
	}
	rp.rep.Actions[len(rp.rep.Actions)-1].Rows = total
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// rollbackHotJournal opens path with a write-capable connection and reads
// it, which makes SQLite roll the hot journal back (the journal mode in the
// file header is left as it is).
func rollbackHotJournal(ctx context.Context, engine, path string) error {
	eng, err := engineFor("repair", engine)
	if err != nil {
		return err
	}
	db, err := eng.OpenDB(eng.DSN(sqlitex.ConnConfig{Path: path, BusyTimeout: 5 * time.Second}))
	if err != nil {
		return errtext.Storage("repair", err, "cannot open "+path, path)
	}
	defer db.Close()
	var n int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		if sqlitex.IsLock(err) {
			return errs.Wrap(errs.ErrBusy, "repair", err, path+" is locked by another process")
		}
		return errtext.Storage("repair", err, "rolling back the interrupted transaction of "+path+" failed", path)
	}
	return nil
}

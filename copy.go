package hermesstate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/repo"
)

// CopyOptions tunes Copy.
type CopyOptions struct {
	// BatchRows is the number of rows per INSERT; default 500.
	BatchRows int
	// Progress, when set, is called after every batch with the table being
	// copied, the rows copied so far over all tables, and the total.
	Progress func(table string, done, total int64)
}

// CopyStats reports what Copy copied: rows per table (equal in source and
// target, verified before the commit) and the time taken.
type CopyStats struct {
	Rows    map[string]int64
	Total   int64
	Elapsed time.Duration
}

// bookkeeping tables are replaced, not required empty: a freshly migrated
// target holds its own schema_version row and adoption marker.
var copyBookkeeping = map[string]bool{"schema_version": true, "state_meta": true}

// Copy copies every row of every Hermes v30 table of src into dst, which
// must be a PostgreSQL store whose tables are empty (schema_version and
// state_meta excepted: they are replaced by the source's). It runs in ONE
// target transaction: rows go in batches of multi-row INSERTs with the
// source's values (message ids included; the id sequence is advanced past
// the source's highest id and its AUTOINCREMENT counter), foreign keys are
// checked at commit, the display-order trigger stands aside during the
// load so display columns are copied as they are, and the row count of every table
// is compared with the source before committing. src is only read, from
// one consistent snapshot (a read-only repeatable-read transaction on
// PostgreSQL; on SQLite use OpenSnapshot to leave the file untouched).
//
// Errors: ErrUnsupported when src (or dst) has a Hermes schema version
// newer than this build knows (nothing is copied: its unknown tables and
// columns would be lost), ErrInvalid when dst is not PostgreSQL or is src
// itself,
// ErrConflict when the target is not empty, ErrCorrupt when the counts
// differ (nothing is committed), ErrStorage for failures of either side.
func Copy(ctx context.Context, src, dst *Store, opt CopyOptions) (CopyStats, error) {
	const op = "copy"
	start := time.Now()
	if dst.cfg.Driver != DriverPostgres {
		return CopyStats{}, errs.Errorf(ErrInvalid, op, "the copy target must be a PostgreSQL store")
	}
	if src.cfg.Driver == DriverPostgres && src.cfg.DSN == dst.cfg.DSN && src.cfg.Schema == dst.cfg.Schema {
		return CopyStats{}, errs.Errorf(ErrInvalid, op, "source and target are the same schema")
	}
	// A source of a newer Hermes holds tables and columns this build does
	// not know: a copy would drop them and stamp the target with the newer
	// version, so it is refused, as migrate refuses to touch such a file.
	for _, st := range []*Store{src, dst} {
		v, err := st.SchemaVersion(ctx)
		if err != nil {
			return CopyStats{}, err
		}
		if v > HermesSchemaVersion || st.newer > 0 {
			return CopyStats{}, errs.Errorf(ErrUnsupported, op, "%s has Hermes schema version %d, newer than %d, the newest this hermes-state knows: a copy would drop the tables and columns this build does not know, so nothing was copied; upgrade hermes-state to copy it",
				st.Location(), max(v, st.newer), HermesSchemaVersion)
		}
	}
	if opt.BatchRows <= 0 {
		opt.BatchRows = 500
	}
	ref, err := schemaref.ReferenceColumns()
	if err != nil {
		return CopyStats{}, errs.Wrap(ErrStorage, op, err, "")
	}
	c := &copier{op: op, src: src, dst: dst, opt: opt, ref: ref, stats: CopyStats{Rows: map[string]int64{}}}
	readOpts := &sql.TxOptions{ReadOnly: true}
	if src.cfg.Driver == DriverPostgres {
		readOpts.Isolation = sql.LevelRepeatableRead
	} else {
		readOpts = nil // SQLite: a transaction is a snapshot already
	}
	err = src.db.R.WithContext(ctx).Transaction(func(stx *gorm.DB) error {
		seq, err := c.readSource(stx)
		if err != nil {
			return err
		}
		return dst.db.W.WithContext(ctx).Transaction(func(dtx *gorm.DB) error {
			return c.load(stx, dtx, seq)
		})
	}, readOpts)
	if err == nil {
		// Statistics for the planner now, not when autovacuum gets to it
		// (never, where it is off): right after a copy a search would
		// otherwise run without them, seconds instead of milliseconds.
		err = dst.db.W.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return repo.AnalyzePostgres(tx, append(Tables(), repo.AnalyzedTables...))
		})
		if err != nil {
			err = fmt.Errorf("the rows were copied and committed, but ANALYZE failed (run ANALYZE on the schema): %w", err)
		}
	}
	c.stats.Elapsed = time.Since(start)
	if err != nil {
		return c.stats, mapCopyErr(op, err)
	}
	return c.stats, nil
}

// copier is one Copy: the two stores, the v30 columns, what was counted.
type copier struct {
	op       string
	src, dst *Store
	opt      CopyOptions
	ref      map[string][]schemaref.Column
	stats    CopyStats
}

// readSource counts the rows of every table in the source snapshot and
// returns the messages id counter to continue from: SQLite's AUTOINCREMENT
// counter can be past MAX(id) (deleted rows); ids are never reused, so the
// target sequence starts past both.
func (c *copier) readSource(stx *gorm.DB) (int64, error) {
	for _, t := range Tables() {
		var n int64
		if err := stx.Table(t).Count(&n).Error; err != nil {
			return 0, fmt.Errorf("count source %s: %w", t, err)
		}
		c.stats.Rows[t] = n
		c.stats.Total += n
	}
	var seq int64
	if c.src.cfg.Driver == DriverSQLite {
		var v []int64
		if stx.Raw("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'").Scan(&v).Error == nil && len(v) == 1 && v[0] > 0 {
			var sv []sql.NullInt64
			if err := stx.Raw("SELECT seq FROM sqlite_sequence WHERE name = 'messages'").Scan(&sv).Error; err != nil {
				return 0, err
			}
			if len(sv) == 1 {
				seq = sv[0].Int64
			}
		}
	} else {
		var sv []sql.NullInt64
		if err := stx.Raw("SELECT last_value FROM pg_sequences WHERE schemaname = current_schema() AND sequencename = 'messages_id_seq'").Scan(&sv).Error; err == nil && len(sv) == 1 {
			seq = sv[0].Int64
		}
	}
	return seq, nil
}

// load fills the target in its transaction: take the schema's migration
// lock, check it is empty, copy every table, advance the id sequence past
// seq, compare the counts.
func (c *copier) load(stx, dtx *gorm.DB, seq int64) error {
	if err := dtx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", pgsql.LockClassMigrate, c.dst.cfg.Schema).Error; err != nil {
		return err
	}
	if err := c.checkEmpty(dtx); err != nil {
		return err
	}
	for _, q := range []string{"SET CONSTRAINTS ALL DEFERRED", "SET LOCAL hermesstate.copying = 'on'",
		"DELETE FROM schema_version", "DELETE FROM state_meta"} {
		if err := dtx.Exec(q).Error; err != nil {
			return err
		}
	}
	if err := c.copyTables(stx, dtx); err != nil {
		return err
	}
	if err := dtx.Exec("SET LOCAL hermesstate.copying = 'off'").Error; err != nil {
		return err
	}
	// The activity table's triggers stood aside: fill it in one pass.
	for _, q := range repo.SessionActivityRebuildPostgres() {
		if err := dtx.Exec(q).Error; err != nil {
			return err
		}
	}
	if err := dtx.Exec(`SELECT setval(pg_get_serial_sequence('messages', 'id'),
		GREATEST(COALESCE((SELECT MAX(id) FROM messages), 0), ?, 1),
		COALESCE((SELECT MAX(id) FROM messages), 0) > 0 OR ? > 0)`, seq, seq).Error; err != nil {
		return err
	}
	for _, t := range Tables() {
		var n int64
		if err := dtx.Table(t).Count(&n).Error; err != nil {
			return err
		}
		if n != c.stats.Rows[t] {
			return errs.Errorf(ErrCorrupt, c.op, "table %s: the target holds %d rows, the source %d; nothing was committed", t, n, c.stats.Rows[t])
		}
	}
	return dtx.Exec("SET CONSTRAINTS ALL IMMEDIATE").Error
}

// checkEmpty refuses a target whose tables hold rows (bookkeeping tables
// excepted).
func (c *copier) checkEmpty(dtx *gorm.DB) error {
	for _, t := range Tables() {
		if copyBookkeeping[t] {
			continue
		}
		var one []int
		if err := dtx.Raw("SELECT 1 FROM " + pgsql.QuoteIdent(t) + " LIMIT 1").Scan(&one).Error; err != nil {
			return err
		}
		if len(one) > 0 {
			return errs.Errorf(ErrConflict, c.op, "the target schema %s is not empty (table %s has rows); copy only into an empty store", c.dst.cfg.Schema, t)
		}
	}
	return nil
}

// copyTables copies table by table, reporting progress, and checks that
// each read as many rows as the source counted.
func (c *copier) copyTables(stx, dtx *gorm.DB) error {
	var done int64
	for _, t := range Tables() {
		n, err := copyTable(stx, dtx, t, c.ref[t], c.opt, func(k int64) {
			done += k
			if c.opt.Progress != nil {
				c.opt.Progress(t, done, c.stats.Total)
			}
		})
		if err != nil {
			return fmt.Errorf("copy %s: %w", t, err)
		}
		if n != c.stats.Rows[t] {
			return errs.Errorf(ErrCorrupt, c.op, "table %s: read %d rows from the source, which counted %d", t, n, c.stats.Rows[t])
		}
	}
	return nil
}

func mapCopyErr(op string, err error) error {
	var me *Error
	if asModelsError(err, &me) {
		return err
	}
	if pgsql.IsConstraint(err) {
		return errs.Wrap(ErrConflict, op, err, "the source rows break a key of the target (a dangling parent, prompt or session reference?); nothing was committed")
	}
	return errs.Wrap(ErrStorage, op, err, "copy failed; nothing was committed: "+errtext.FirstLine(err))
}

// copyTable streams table t of the source into the target with the v30
// column list, in batches. It returns the number of rows copied.
func copyTable(stx, dtx *gorm.DB, t string, cols []schemaref.Column, opt CopyOptions, progress func(int64)) (int64, error) {
	names := make([]string, len(cols))
	bytea := make([]bool, len(cols))
	for i, c := range cols {
		names[i] = pgsql.QuoteIdent(c.Name)
		bytea[i] = strings.EqualFold(c.Type, "BLOB")
	}
	list := strings.Join(names, ", ")
	order := "rowid"
	if stx.Dialector.Name() == "postgres" {
		order = "1"
	}
	rows, err := stx.Raw("SELECT " + list + " FROM " + pgsql.QuoteIdent(t) + " ORDER BY " + order).Rows()
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	batch := opt.BatchRows
	if max := 60000 / len(cols); batch > max {
		batch = max
	}
	rowSQL := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	var n int64
	args := make([]any, 0, batch*len(cols))
	pending := 0
	flush := func() error {
		if pending == 0 {
			return nil
		}
		q := "INSERT INTO " + pgsql.QuoteIdent(t) + " (" + list + ") VALUES " + strings.TrimSuffix(strings.Repeat(rowSQL+", ", pending), ", ")
		if err := dtx.Exec(q, args...).Error; err != nil {
			return err
		}
		progress(int64(pending))
		args, pending = args[:0], 0
		return nil
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok && !bytea[i] {
				// A BLOB in a text column (SQLite's loose typing).
				if !utf8.Valid(b) {
					return n, errs.Errorf(ErrInvalid, "copy", "%s.%s holds bytes that are not UTF-8 text; PostgreSQL cannot store them as text", t, cols[i].Name)
				}
				v = string(b)
			}
			args = append(args, v)
		}
		pending++
		n++
		if pending == batch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, flush()
}

// snapshotInto writes g's database to path with VACUUM INTO on one
// connection, with PRAGMA query_only lifted there (the pool is closed
// right after, so the connection is never reused).
func snapshotInto(ctx context.Context, g *gorm.DB, path string) error {
	pool, err := g.DB()
	if err != nil {
		return err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "VACUUM INTO ?", path)
	return err
}

// snapshotPrefix starts the name of OpenSnapshot's temporary directory.
const snapshotPrefix = "hermesstate-snapshot-"

// OpenSnapshot opens a private copy of the SQLite file at path for reading
// without touching the file: a consistent snapshot is written with VACUUM
// INTO (a read of the source) to a temporary file, which is then opened
// (and migrated to v30, as Open does for every Hermes file); its Location
// is path, the file the user named. Call the
// returned cleanup to close the store and remove the copy. Errors:
// ErrNotFound when there is no file at path, ErrCorrupt when it is not a
// database, ErrStorage otherwise.
func OpenSnapshot(ctx context.Context, path string, cfg Config) (*Store, func(), error) {
	const op = "snapshot"
	if err := sqlitex.CheckStoreFile(op, path); err != nil {
		return nil, nil, err
	}
	// The snapshot is a plaintext copy of every conversation: it lives in
	// a 0700 directory whose name carries this process's id, and the
	// directories of processes that died before cleaning up are removed.
	safefile.RemoveStale(os.TempDir(), snapshotPrefix)
	dir, err := os.MkdirTemp("", safefile.TempName(snapshotPrefix)+"-")
	if err != nil {
		return nil, nil, errs.Wrap(ErrStorage, op, err, "cannot create a temporary directory: "+sqlitex.Describe(err))
	}
	cleanupDir := func() { _ = os.RemoveAll(dir) }
	tmp, err := safefile.CreateTemp(dir, "state-")
	if err != nil {
		cleanupDir()
		return nil, nil, errs.Wrap(ErrStorage, op, err, "cannot create the snapshot file: "+sqlitex.Describe(err))
	}
	eng, err := cfg.withDefaults().engine()
	if err != nil {
		cleanupDir()
		return nil, nil, err
	}
	// The source is read the way read commands read a file (nothing left
	// beside it, a read-only place served; see openReadOnlyPool), on one
	// connection whose query_only is lifted for VACUUM INTO, which only
	// reads the source.
	g, _, err := openReadOnlyPool(ctx, eng, path, 5*time.Second, 0, nil)
	if err != nil {
		cleanupDir()
		return nil, nil, err
	}
	err = snapshotInto(ctx, g, tmp)
	if d, e := g.DB(); e == nil {
		_ = d.Close()
	}
	if err != nil {
		cleanupDir()
		return nil, nil, classifyOpenErr(op, err, path)
	}
	cfg.Driver, cfg.Path, cfg.ReadOnly = DriverSQLite, tmp, false
	cfg.JournalMode = JournalDelete
	st, err := Open(ctx, cfg)
	if err != nil {
		cleanupDir()
		return nil, nil, err
	}
	st.shownAs = path // messages name the user's file, not the private copy
	return st, func() { _ = st.Close(); cleanupDir() }, nil
}

func asModelsError(err error, target **Error) bool { return errors.As(err, target) }

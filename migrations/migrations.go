// Package migrations brings a state.db to the shape of Hermes schema v30
// with gormigrate, at every writable Open.
//
// A new file gets the full v30 schema and schema_version = 30. An existing
// Hermes file is adopted: its schema_version is read, missing tables, columns,
// indexes and triggers are added (existing rows are never rewritten except by
// the numbered Hermes data steps the file's version lacks), and the IDs that
// ran are recorded in the table hermesstate_migrations.
//
// All pending migrations run in ONE transaction opened with BEGIN IMMEDIATE
// (gormigrate UseTransaction over a _txlock=immediate connection): the write
// lock is taken first, the list of applied IDs is re-read inside it, and the
// steps and the version bump commit together. Two processes opening the same
// file at once therefore migrate it once; the second waits for the lock and
// then finds nothing to do. A failing step rolls everything back.
//
// The steps, their IDs and the Hermes version each maps to are in one
// literal list, List (list.go), with the rules for changing it at its head.
//
// It offers Run (SQLite) and RunPostgres, Pending (what Run would apply),
// FileVersion (a file's schema_version), List and the version constants;
// hermesstate.Open calls Run itself. The v30 DDL it reconciles against is
// internal/schemaref.
package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// TableName is the gormigrate bookkeeping table.
const TableName = "hermesstate_migrations"

// HermesSchemaVersion is the Hermes schema version whose shape a file has
// after our migrations ran: the value written to schema_version.
const HermesSchemaVersion = 30

// isPostgres reports whether tx talks to PostgreSQL.
func isPostgres(tx *gorm.DB) bool { return tx.Dialector.Name() == "postgres" }

// apply runs the dialect's variant of m.
func (m Migration) apply(tx *gorm.DB) error {
	if isPostgres(tx) {
		if m.Postgres != nil {
			return m.Postgres(tx)
		}
		if m.SQLiteOnly {
			return nil
		}
	}
	return m.Apply(tx)
}

// Pending returns the IDs of migrations not yet recorded in the file that
// do something on its dialect (a PostgreSQL-only step is never pending for
// a SQLite file, nor a SQLite-only one for PostgreSQL; Run records them
// with the next step that does). It reads without a transaction and is only
// a hint (Run re-reads under lock). It returns the error of reading the
// bookkeeping table.
func Pending(ctx context.Context, db *gorm.DB) ([]string, error) {
	db = db.WithContext(ctx)
	done := map[string]bool{}
	has := false
	if isPostgres(db) {
		has = db.Migrator().HasTable(TableName)
	} else {
		// GORM's HasTable answers false when the file is locked: every
		// step would then look pending. Ask SQLite, and say when it fails.
		var n int64
		if err := db.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", TableName).Scan(&n).Error; err != nil {
			return nil, err
		}
		has = n > 0
	}
	if has {
		var ids []string
		if err := db.Table(TableName).Pluck("id", &ids).Error; err != nil {
			return nil, err
		}
		for _, id := range ids {
			done[id] = true
		}
	}
	pg := isPostgres(db)
	var out []string
	for _, m := range List() {
		if done[m.ID] || (!pg && m.PostgresOnly) || (pg && m.SQLiteOnly && m.Postgres == nil) {
			continue
		}
		out = append(out, m.ID)
	}
	return out, nil
}

// Run applies every pending migration in one BEGIN IMMEDIATE transaction,
// retrying lock errors with jitter for up to 20 s (concurrent openers). db
// must be a writer whose BEGIN is IMMEDIATE. It returns an error wrapping
// errs.ErrBusy when the lock could not be had, or the failing step's error
// (the file is then unchanged).
func Run(ctx context.Context, db *gorm.DB) error {
	pending, err := Pending(ctx, db)
	if err != nil {
		if sqlitex.IsLock(err) {
			return errs.Wrap(errs.ErrBusy, "migrate", err, "another process held the file locked while its applied migrations were read")
		}
		return errs.Wrap(errs.ErrStorage, "migrate", err, "cannot read the applied migrations: "+errtext.FirstLine(err))
	}
	if len(pending) == 0 {
		return nil
	}
	if isPostgres(db) {
		return runPostgres(ctx, db)
	}
	steps := gormigrateSteps()
	opts := *gormigrate.DefaultOptions
	opts.TableName = TableName
	// The transaction is ours, not gormigrate's: gormigrate ignores the
	// error of its own Begin, and a BEGIN IMMEDIATE that meets a held lock
	// (SQLITE_BUSY) then made the driver's migrator dereference a nil row
	// and panic (seen with concurrent opens and a short busy timeout).
	// Through Transaction a failed BEGIN is an ordinary lock error, retried
	// below; the steps still run in one transaction.
	opts.UseTransaction = false
	res, err := sqlitex.Retry(ctx, 20*time.Second, func() error {
		return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return gormigrate.New(tx, &opts, steps).Migrate()
		})
	})
	if err != nil {
		if sqlitex.IsLock(err) {
			return errs.Wrap(errs.ErrBusy, "migrate", err, fmt.Sprintf("another process held the write lock for %s (%d attempts)", res.Waited.Round(time.Millisecond), res.Attempts))
		}
		if sqlitex.IsCorrupt(err) {
			return errs.Wrap(errs.ErrCorrupt, "migrate", err, "the database file is damaged; run doctor on it (`hermes-state --db FILE doctor`)")
		}
		msg := "" // the cause's own text, as before, when it is not one of a place
		if c := errtext.Cause(err, ""); c != "" {
			msg = "migrating the file to v30 failed: " + c
		}
		return errs.Wrap(errs.ErrUnsupported, "migrate", err, msg)
	}
	return nil
}

// gormigrateSteps wraps List for gormigrate.
func gormigrateSteps() []*gormigrate.Migration {
	steps := make([]*gormigrate.Migration, 0, len(List()))
	for _, m := range List() {
		m := m
		steps = append(steps, &gormigrate.Migration{ID: m.ID, Migrate: func(tx *gorm.DB) error {
			if m.BelowVersion > 0 {
				orig, err := adoptedFromVersion(tx)
				if err != nil {
					return err
				}
				if orig >= m.BelowVersion {
					return nil
				}
			}
			if err := m.apply(tx); err != nil {
				return fmt.Errorf("migration %s: %w", m.ID, err)
			}
			return nil
		}})
	}
	return steps
}

// FileVersion reads schema_version.version; 0 when the table or row is
// missing.
func FileVersion(tx *gorm.DB) (int, error) {
	if !hasTable(tx, "schema_version") {
		return 0, nil
	}
	var v sql.NullInt64
	if err := tx.Raw("SELECT MAX(version) FROM schema_version").Scan(&v).Error; err != nil {
		return 0, err
	}
	if !v.Valid {
		return 0, nil
	}
	return int(v.Int64), nil
}

func hasTable(tx *gorm.DB, name string) bool {
	var n int64
	if isPostgres(tx) {
		tx.Raw("SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?", name).Scan(&n)
		return n > 0
	}
	tx.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", name).Scan(&n)
	return n > 0
}

func hasIndex(tx *gorm.DB, name string) bool {
	var n int64
	if isPostgres(tx) {
		tx.Raw("SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?", name).Scan(&n)
		return n > 0
	}
	tx.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?", name).Scan(&n)
	return n > 0
}

// fileColumns returns PRAGMA table_info of table in the file tx writes to.
func fileColumns(tx *gorm.DB, table string) ([]schemaref.Column, error) {
	return schemaref.TableInfo(tx.Statement.Context, tx.Statement.ConnPool, table)
}

// baseline brings any file to the v30 shape without rewriting rows.
func baseline(tx *gorm.DB) error {
	fresh := !hasTable(tx, "sessions")
	ref, err := schemaref.ReferenceColumns()
	if err != nil {
		return err
	}
	schema := schemaref.Schema()
	for _, st := range schema {
		if st.Kind == "table" {
			if err := tx.Exec(st.SQL).Error; err != nil {
				return fmt.Errorf("create table %s: %w", st.Name, err)
			}
		}
	}
	if fresh {
		if err := tx.Exec("INSERT INTO schema_version (version) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM schema_version)", HermesSchemaVersion).Error; err != nil {
			return err
		}
	}
	orig, err := FileVersion(tx)
	if err != nil {
		return err
	}
	if err := tx.Exec("INSERT OR IGNORE INTO state_meta (key, value) VALUES ('hermesstate_adopted_from_version', ?)", fmt.Sprint(orig)).Error; err != nil {
		return err
	}
	// Add missing columns, in the reference order, with their defaults.
	for _, st := range schema {
		if st.Kind != "table" {
			continue
		}
		have, err := fileColumns(tx, st.Name)
		if err != nil {
			return err
		}
		present := map[string]bool{}
		for _, c := range have {
			present[strings.ToLower(c.Name)] = true
		}
		for _, c := range ref[st.Name] {
			if present[strings.ToLower(c.Name)] {
				continue
			}
			if err := tx.Exec("ALTER TABLE " + schemaref.QuoteIdent(st.Name) + " ADD COLUMN " + c.Decl()).Error; err != nil {
				return fmt.Errorf("add column %s.%s: %w", st.Name, c.Name, err)
			}
		}
	}
	// Primary keys that older files have narrower (Hermes step 22 for
	// session_model_usage; gateway_routing keyed by session_key alone).
	for _, t := range []string{"session_model_usage", "gateway_routing"} {
		if err := rebuildIfKeyDiffers(tx, t, ref[t]); err != nil {
			return err
		}
	}
	if err := qualifyLegacyFTSTriggers(tx); err != nil {
		return err
	}
	// Hermes step 12, run on every Hermes open.
	if err := tx.Exec("UPDATE messages SET active = 1 WHERE active IS NULL").Error; err != nil {
		return err
	}
	for _, st := range schema {
		if st.Kind == "table" || st.Name == "idx_sessions_title_unique" {
			continue
		}
		if err := tx.Exec(st.SQL).Error; err != nil {
			return fmt.Errorf("create %s %s: %w", st.Kind, st.Name, err)
		}
	}
	return ensureTitleIndex(tx, schema)
}

func pkColumns(cols []schemaref.Column) []string {
	var out []string
	for _, c := range cols {
		if c.PK > 0 {
			out = append(out, strings.ToLower(c.Name))
		}
	}
	return out
}

// rebuildIfKeyDiffers recreates table with the reference definition when
// its primary key is narrower than the reference's (an older Hermes file:
// the key's columns are a strict subset of ours), copying every row
// (columns by name; columns the reference lacks are carried over).
//
// It never runs otherwise: a key that is a superset of ours, or differs in
// another way, belongs to a schema we do not know (a newer Hermes), and
// recreating it with our key would merge rows that differ only in the
// columns we lack (INSERT OR IGNORE) and drop those columns.
func rebuildIfKeyDiffers(tx *gorm.DB, table string, ref []schemaref.Column) error {
	have, err := fileColumns(tx, table)
	if err != nil {
		return err
	}
	if !keyNarrower(pkColumns(have), pkColumns(ref)) {
		return nil
	}
	var create string
	for _, st := range schemaref.Schema() {
		if st.Kind == "table" && st.Name == table {
			create = st.SQL
		}
	}
	tmp := table + "__hermesstate_rebuild"
	create = strings.Replace(create, "CREATE TABLE IF NOT EXISTS "+table, "CREATE TABLE "+tmp, 1)
	refSet := map[string]bool{}
	for _, c := range ref {
		refSet[strings.ToLower(c.Name)] = true
	}
	var cols []string
	stmts := []string{"DROP TABLE IF EXISTS " + tmp, create}
	for _, c := range have {
		cols = append(cols, schemaref.QuoteIdent(c.Name))
		if !refSet[strings.ToLower(c.Name)] {
			// A column of the file's own: kept, after ours.
			extra := c
			extra.PK = 0
			if !extra.Default.Valid {
				extra.NotNull = false
			}
			stmts = append(stmts, "ALTER TABLE "+tmp+" ADD COLUMN "+extra.Decl())
		}
	}
	list := strings.Join(cols, ", ")
	stmts = append(stmts,
		"INSERT OR IGNORE INTO "+tmp+" ("+list+") SELECT "+list+" FROM "+schemaref.QuoteIdent(table)+" ORDER BY rowid",
		"DROP TABLE "+schemaref.QuoteIdent(table),
		"ALTER TABLE "+tmp+" RENAME TO "+schemaref.QuoteIdent(table))
	for _, q := range stmts {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("rebuild %s: %w", table, err)
		}
	}
	return nil
}

// keyNarrower reports whether the key columns have are a strict subset of
// the key columns ref (an older, narrower primary key that our rebuild
// widens without merging rows that differ in a column we know).
func keyNarrower(have, ref []string) bool {
	if len(have) >= len(ref) {
		return false
	}
	in := map[string]bool{}
	for _, c := range ref {
		in[c] = true
	}
	for _, c := range have {
		if !in[c] {
			return false
		}
	}
	return true
}

// ensureTitleIndex creates idx_sessions_title_unique; when duplicate titles
// exist, the older duplicates (lower rowid) lose their title first, as
// Hermes does.
func ensureTitleIndex(tx *gorm.DB, schema []schemaref.Statement) error {
	if hasIndex(tx, "idx_sessions_title_unique") {
		return nil
	}
	if err := tx.Exec(`UPDATE sessions SET title = NULL
		WHERE title IS NOT NULL
		  AND rowid < (SELECT MAX(s2.rowid) FROM sessions AS s2 WHERE s2.title = sessions.title)`).Error; err != nil {
		return err
	}
	for _, st := range schema {
		if st.Name == "idx_sessions_title_unique" {
			return tx.Exec(st.SQL).Error
		}
	}
	return errors.New("embedded schema lacks idx_sessions_title_unique")
}

// adoptedFromVersion returns the schema_version the file had when the
// baseline first ran on it (recorded in state_meta).
func adoptedFromVersion(tx *gorm.DB) (int, error) {
	var v sql.NullString
	if err := tx.Raw("SELECT value FROM state_meta WHERE key = 'hermesstate_adopted_from_version'").Scan(&v).Error; err != nil {
		return 0, err
	}
	var n int
	if v.Valid {
		fmt.Sscan(v.String, &n)
	}
	return n, nil
}

// stampVersion raises schema_version to 30; a newer file is left alone.
func stampVersion(tx *gorm.DB) error {
	if err := tx.Exec("UPDATE schema_version SET version = ? WHERE version < ?", HermesSchemaVersion, HermesSchemaVersion).Error; err != nil {
		return err
	}
	return tx.Exec("INSERT INTO schema_version (version) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM schema_version)", HermesSchemaVersion).Error
}

// ftsTables creates or repairs the FTS objects (package fts).
func ftsTables(tx *gorm.DB) error {
	_, err := ftsql.EnsureLayout(tx)
	return err
}

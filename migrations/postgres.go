package migrations

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

//go:embed schema_v30_pg.sql
var schemaV30PG string

// schemaPostgres returns the statements of the embedded PostgreSQL v30
// schema (schema_v30_pg.sql) in order.
func schemaPostgres() []string {
	var out []string
	for _, part := range strings.Split(schemaV30PG, "\n-- ;") {
		var lines []string
		for _, l := range strings.Split(part, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "--") && !strings.HasPrefix(l, "    ") {
				continue
			}
			lines = append(lines, l)
		}
		if s := strings.TrimSpace(strings.Join(lines, "\n")); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// migrateLockTimeout bounds the wait for another host's migration of the
// same schema.
var migrateLockTimeout = 60 * time.Second

// RunPostgres creates schema if needed and applies every pending migration
// to it in one transaction that first takes a transaction-scoped advisory
// lock keyed by the schema name, so several hosts starting at once migrate
// it once: the others wait on the lock, then find nothing to do. db's
// search_path must start with schema. It returns an error wrapping
// errs.ErrBusy when the lock was not had within migrateLockTimeout, or the
// failing step's error (the schema is then unchanged).
func RunPostgres(ctx context.Context, db *gorm.DB, schema string) error {
	if err := pgsql.CheckSchema(schema); err != nil {
		return errs.Wrap(errs.ErrInvalid, "migrate", err, err.Error())
	}
	steps := gormigrateSteps()
	opts := *gormigrate.DefaultOptions
	opts.TableName = TableName
	opts.UseTransaction = false // the surrounding transaction is the one
	res, err := sqlitex.RetryIf(ctx, 20*time.Second, pgsql.IsRetryable, func() error {
		return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec(fmt.Sprintf("SET LOCAL lock_timeout = %d", migrateLockTimeout.Milliseconds())).Error; err != nil {
				return err
			}
			if err := tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(?))", pgsql.LockClassMigrate, schema).Error; err != nil {
				return err
			}
			if err := tx.Exec("CREATE SCHEMA IF NOT EXISTS " + pgsql.QuoteIdent(schema)).Error; err != nil {
				return err
			}
			return gormigrate.New(tx, &opts, steps).Migrate()
		})
	})
	if err != nil {
		if pgsql.IsBusy(err) {
			return errs.Wrap(errs.ErrBusy, "migrate", err, fmt.Sprintf("another host held the migration lock of schema %s for %s (%d attempts)", schema, res.Waited.Round(time.Millisecond), res.Attempts))
		}
		return errs.Wrap(errs.ErrUnsupported, "migrate", err, errtext.Join("migrating PostgreSQL schema "+schema+" failed", errtext.Cause(err, "")))
	}
	return nil
}

// runPostgres is Run on PostgreSQL without a configured schema: it
// migrates current_schema().
func runPostgres(ctx context.Context, db *gorm.DB) error {
	var schema string
	if err := db.WithContext(ctx).Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		return errtext.Storage("migrate", err, "cannot read the current schema", "")
	}
	if schema == "" {
		return errs.Errorf(errs.ErrInvalid, "migrate", "no schema of the search_path exists; configure one")
	}
	return RunPostgres(ctx, db, schema)
}

// baselinePostgres creates the v30 tables, indexes and triggers in a fresh
// schema. Hermes files never live in PostgreSQL, so there is no column
// reconciliation: the copy tool loads rows already brought to v30.
func baselinePostgres(tx *gorm.DB) error {
	for _, st := range schemaPostgres() {
		if err := tx.Exec(st).Error; err != nil {
			head := st
			if i := strings.IndexByte(head, '\n'); i > 0 {
				head = head[:i]
			}
			return fmt.Errorf("%s: %w", head, err)
		}
	}
	if err := tx.Exec("INSERT INTO schema_version (version) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM schema_version)", HermesSchemaVersion).Error; err != nil {
		return err
	}
	orig, err := FileVersion(tx)
	if err != nil {
		return err
	}
	return tx.Exec("INSERT INTO state_meta (key, value) VALUES ('hermesstate_adopted_from_version', ?) ON CONFLICT (key) DO NOTHING", fmt.Sprint(orig)).Error
}

package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // driver "pgx" for the PostgreSQL checks

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/pgsql"
)

// The benchmark against a PostgreSQL server (Options.PGDSN): the same
// phases and JSON as on SQLite, each phase's "fresh store" a fresh schema
// of that server. The store of build, search and listing is the schema
// Options.PGSchema (S); the append and conc phases get S_append and
// S_conc. The bench writes only into schemas it creates: one that exists
// already with tables is refused (build, append, conc), and every schema
// it created is dropped at the end of its run unless Keep. search and
// listing without build read an existing S (the Store of the SQLite
// bench). SQLite-only phases (append_sync_full, append_diag) and the raw-SQL
// baselines (which run SQLite's statements) are left out.

// PGPhases are the phases a PostgreSQL bench runs (default and allowed).
var PGPhases = []string{"append", "build", "search", "listing", "conc"}

// pgTarget is the server and base schema of this process's phase ("" on
// SQLite): one phase per process, set by runPhase and Worker.
var pgTarget struct{ dsn, schema string }

func setPG(p *params) { pgTarget.dsn, pgTarget.schema = p.PGDSN, p.PGSchema }

// pgSchemaFor is the schema of the store at db (a phase's path under the
// run directory): S for the shared store, S_<dir> for a phase's own.
func pgSchemaFor(base, db string) string {
	if sub := filepath.Base(filepath.Dir(db)); sub != "store" {
		return base + "_" + sub
	}
	return base
}

// openPG opens the PostgreSQL store standing for the file db.
func openPG(ctx context.Context, db string) (*hs.Store, error) {
	return hs.Open(ctx, hs.Config{DSN: pgTarget.dsn, Schema: pgSchemaFor(pgTarget.schema, db),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}

// pgDSNWithPath is dsn with search_path set to schema.
func pgDSNWithPath(dsn, schema string) string {
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}

// rawPG opens plain database/sql on the schema standing for db.
func rawPG(db string) (*sql.DB, error) {
	return sql.Open("pgx", pgDSNWithPath(pgTarget.dsn, pgSchemaFor(pgTarget.schema, db)))
}

// pgSchemaBytes is the size of every table of the schema (indexes and
// TOAST included), in the place of the SQLite file sizes.
func pgSchemaBytes(ctx context.Context, db string) map[string]int64 {
	d, err := rawPG(db)
	if err != nil {
		return nil
	}
	defer d.Close()
	var n sql.NullInt64
	if d.QueryRowContext(ctx, `SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind = 'r'`).Scan(&n) != nil {
		return nil
	}
	return map[string]int64{"schema_total": n.Int64}
}

// pgBytesByTable is bytesByTable for a schema: each table with its
// indexes and TOAST, the 10 largest.
func pgBytesByTable(ctx context.Context, d *sql.DB) map[string]int64 {
	rows, err := d.QueryContext(ctx, `SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind = 'r' ORDER BY 2 DESC LIMIT 10`)
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if rows.Scan(&name, &n) != nil {
			return nil
		}
		out[name] = n
	}
	return out
}

// pgAnalyze runs ANALYZE on the schema standing for db (autovacuum's job,
// which a server may have off or late): the search and listing phases
// measure an analyzed store, as the targets say.
func pgAnalyze(ctx context.Context, db string) error {
	d, err := rawPG(db)
	if err != nil {
		return err
	}
	defer d.Close()
	var tables []string
	rows, err := d.QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind = 'r'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, pgsql.QuoteIdent(t))
	}
	rows.Close()
	if len(tables) == 0 {
		return nil
	}
	_, err = d.ExecContext(ctx, "ANALYZE "+strings.Join(tables, ", "))
	return err
}

// pgSettings are the server settings recorded in the meta block.
var pgSettings = []string{"shared_buffers", "work_mem", "effective_cache_size", "maintenance_work_mem", "max_connections",
	"synchronous_commit", "fsync", "wal_level", "autovacuum", "random_page_cost", "jit", "default_statistics_target"}

// pgMeta returns the server version and settings.
func pgMeta(ctx context.Context, dsn string) (string, map[string]string, error) {
	d, err := sql.Open("pgx", dsn)
	if err != nil {
		return "", nil, err
	}
	defer d.Close()
	var v string
	if err := d.QueryRowContext(ctx, "SELECT version()").Scan(&v); err != nil {
		return "", nil, fmt.Errorf("bench: cannot reach PostgreSQL at %s: %w", pgsql.Redact(dsn), err)
	}
	set := map[string]string{}
	for _, k := range pgSettings {
		var s string
		if d.QueryRowContext(ctx, "SELECT current_setting($1)", k).Scan(&s) == nil {
			set[k] = s
		}
	}
	return v, set, nil
}

// pgSchemas are the schemas run phases would create.
func (o *Options) pgSchemas() []string {
	var out []string
	if o.want("build") {
		out = append(out, o.PGSchema)
	}
	for _, ph := range []string{"append", "conc"} {
		if o.want(ph) {
			out = append(out, o.PGSchema+"_"+ph)
		}
	}
	return out
}

// pgCheck validates a PostgreSQL bench before anything runs: the phases,
// the schema name, and that every schema it would create holds no tables
// (the bench never writes into a schema it did not make).
func (o *Options) pgCheck(ctx context.Context) error {
	if o.PGSchema == "" {
		return errors.New("bench: on PostgreSQL give --schema: a new schema for the store (the append and conc phases add SCHEMA_append and SCHEMA_conc)")
	}
	if err := pgsql.CheckSchema(o.PGSchema); err != nil {
		return fmt.Errorf("bench: --schema: %w", err)
	}
	for _, ph := range o.Phases {
		if !slices.Contains(PGPhases, ph) {
			return fmt.Errorf("bench: phase %q runs on SQLite only (PostgreSQL phases: %s)", ph, strings.Join(PGPhases, ", "))
		}
	}
	d, err := sql.Open("pgx", o.PGDSN)
	if err != nil {
		return err
	}
	defer d.Close()
	for _, s := range o.pgSchemas() {
		var n int
		if err := d.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", s).Scan(&n); err != nil {
			return fmt.Errorf("bench: cannot reach PostgreSQL at %s: %w", pgsql.Redact(o.PGDSN), err)
		}
		if n > 0 {
			return fmt.Errorf("bench: schema %s already holds tables; the bench writes only into schemas it creates (drop it, or choose another --schema)", s)
		}
	}
	if !o.want("build") && (o.want("search") || o.want("listing")) {
		var n int
		if err := d.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'messages'", o.PGSchema).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("bench: search and listing without build read an existing store: schema %s holds none", o.PGSchema)
		}
	}
	return nil
}

// pgDrop drops the schemas a run created.
func (o *Options) pgDrop(ctx context.Context) error {
	d, err := sql.Open("pgx", o.PGDSN)
	if err != nil {
		return err
	}
	defer d.Close()
	for _, s := range o.pgSchemas() {
		if _, err := d.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+pgsql.QuoteIdent(s)+" CASCADE"); err != nil {
			return fmt.Errorf("bench: drop schema %s: %w", s, err)
		}
	}
	return nil
}

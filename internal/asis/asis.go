// Package asis reads a Hermes file of an older schema version as it is,
// without changing a byte of it: on a read-only connection, TEMP views named
// like the v30 tables present the file's own tables in the v30 shape (every
// column of the embedded v30 schema, a missing one as the value Hermes'
// migration would give it: its DEFAULT, else NULL), so the statements
// written for v30 run unchanged. SQLite resolves an unqualified table name
// in the temp schema first; an FTS5 table reads its content table through
// its own schema ('main'), so the file's FTS tables keep reading the
// file's rows.
//
// The views live in each connection's temp schema (in memory), so every
// connection of the pool must create them: OpenDB wraps a database/sql
// driver so that each new connection runs the statements first.
package asis

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/hermesstate/hermesstate/internal/schemaref"
)

// Shims returns the statements that present the file behind q in the v30
// shape, or none when its tables already have every v30 column (a v30
// file, or one a newer Hermes wrote). It reads the main schema only. It
// returns the error of reading the file's schema.
func Shims(ctx context.Context, q Queryer) ([]string, error) {
	ref, err := schemaref.ReferenceColumns()
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ref))
	for name := range ref {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, table := range names {
		have, err := mainColumns(ctx, q, table)
		if err != nil {
			return nil, err
		}
		if len(have) > 0 && covers(have, ref[table]) {
			continue
		}
		out = append(out, View(table, ref[table], have))
	}
	if len(out) > 0 {
		out = append([]string{"PRAGMA temp_store = MEMORY"}, out...)
	}
	return out, nil
}

// Queryer is what Shims reads the file's schema with (a *sql.DB or
// *sql.Conn).
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// mainColumns returns the column names of table in the main schema (none
// when the file has no such table).
func mainColumns(ctx context.Context, q Queryer, table string) (map[string]bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT name FROM pragma_table_info(?, 'main')", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		have[name] = true
	}
	return have, rows.Err()
}

func covers(have map[string]bool, want []schemaref.Column) bool {
	for _, c := range want {
		if !have[c.Name] {
			return false
		}
	}
	return true
}

// View is the CREATE TEMP VIEW statement that presents table in the
// columns of want (in their order): each column of have as it is, every
// other one as its DEFAULT (the value ALTER TABLE ADD COLUMN gives the
// rows already there) or NULL; with no columns at all (the file lacks the
// table) the view has no rows.
func View(table string, want []schemaref.Column, have map[string]bool) string {
	cols := make([]string, 0, len(want))
	for _, c := range want {
		name := schemaref.QuoteIdent(c.Name)
		switch {
		case have[c.Name]:
			cols = append(cols, name)
		case c.Default.Valid:
			cols = append(cols, "("+c.Default.String+") AS "+name)
		default:
			cols = append(cols, "NULL AS "+name)
		}
	}
	from := " FROM main." + schemaref.QuoteIdent(table)
	if len(have) == 0 {
		from = " WHERE 0"
	}
	return "CREATE TEMP VIEW IF NOT EXISTS " + schemaref.QuoteIdent(table) + " AS SELECT " + strings.Join(cols, ", ") + from
}

// OpenDB opens a pool of the database/sql driver driverName on dsn whose
// every new connection runs init first (a connection whose init fails is
// closed and the error returned). With no init it is sql.Open. It
// returns the error of looking the driver up.
func OpenDB(driverName, dsn string, init []string) (*sql.DB, error) {
	if len(init) == 0 {
		return sql.Open(driverName, dsn)
	}
	probe, err := sql.Open(driverName, "")
	if err != nil {
		return nil, err
	}
	drv := probe.Driver()
	_ = probe.Close()
	return sql.OpenDB(&connector{drv: drv, dsn: dsn, init: init}), nil
}

type connector struct {
	drv  driver.Driver
	dsn  string
	init []string
}

func (c *connector) Driver() driver.Driver { return c.drv }

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	for _, stmt := range c.init {
		if err := execConn(ctx, conn, stmt); err != nil {
			_ = conn.Close()
			return nil, fmt.Errorf("asis: preparing a connection: %w", err)
		}
	}
	return conn, nil
}

// execConn runs one statement without arguments on a driver connection.
func execConn(ctx context.Context, conn driver.Conn, stmt string) error {
	if ex, ok := conn.(driver.ExecerContext); ok {
		_, err := ex.ExecContext(ctx, stmt, nil)
		if !errors.Is(err, driver.ErrSkip) {
			return err
		}
	}
	st, err := conn.Prepare(stmt)
	if err != nil {
		return err
	}
	defer st.Close()
	if sc, ok := st.(driver.StmtExecContext); ok {
		_, err = sc.ExecContext(ctx, nil)
		return err
	}
	//lint:ignore SA1019 the fallback of a driver without the context methods
	_, err = st.Exec(nil)
	return err
}

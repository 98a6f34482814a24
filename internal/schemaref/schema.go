// Package schemaref is Hermes' schema v30 as this module knows it: the
// embedded DDL (schema_v30.sql) as statements, and the columns each table
// has there (PRAGMA table_info of an in-memory copy), against which
// migrations reconcile a file, doctor checks it and Copy maps its columns.
package schemaref

import (
	"context"
	"database/sql"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync"

	// The glebarez driver registers database/sql driver "sqlite"; it is the
	// only SQLite driver in this module (never import modernc directly too).
	_ "github.com/glebarez/go-sqlite"
)

//go:embed schema_v30.sql
var schemaV30 string

// Statement is one DDL statement of the embedded schema.
type Statement struct {
	Kind string // "table", "index" or "trigger"
	Name string
	SQL  string
}

var createRE = regexp.MustCompile(`(?is)^CREATE\s+(UNIQUE\s+)?(TABLE|INDEX|TRIGGER)\s+IF\s+NOT\s+EXISTS\s+([A-Za-z_][A-Za-z0-9_]*)`)

// Schema returns the statements of the embedded v30 schema in order.
func Schema() []Statement {
	var out []Statement
	for _, part := range strings.Split(schemaV30, "\n-- ;") {
		var lines []string
		for _, l := range strings.Split(part, "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "--") {
				continue
			}
			lines = append(lines, l)
		}
		s := strings.TrimSpace(strings.Join(lines, "\n"))
		if s == "" {
			continue
		}
		m := createRE.FindStringSubmatch(s)
		if m == nil {
			panic("schemaref: unparsable schema statement: " + s)
		}
		out = append(out, Statement{Kind: strings.ToLower(m[2]), Name: m[3], SQL: s})
	}
	return out
}

// Column is one row of PRAGMA table_info.
type Column struct {
	CID     int
	Name    string
	Type    string
	NotNull bool
	Default sql.NullString
	PK      int
}

// Decl renders the column as an ALTER TABLE ADD COLUMN declaration.
func (c Column) Decl() string {
	s := QuoteIdent(c.Name) + " " + c.Type
	if c.NotNull {
		s += " NOT NULL"
	}
	if c.Default.Valid {
		s += " DEFAULT " + c.Default.String
	}
	return s
}

// QuoteIdent quotes an SQL identifier (double quotes, inner ones doubled).
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

var (
	refOnce sync.Once
	refCols map[string][]Column
	refErr  error
)

// ReferenceColumns returns PRAGMA table_info of every table of the embedded
// schema, read from an in-memory database built from it.
func ReferenceColumns() (map[string][]Column, error) {
	refOnce.Do(func() {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			refErr = err
			return
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		ctx := context.Background()
		refCols = map[string][]Column{}
		for _, st := range Schema() {
			if _, err := db.ExecContext(ctx, st.SQL); err != nil {
				refErr = fmt.Errorf("migrations: embedded schema %s: %w", st.Name, err)
				return
			}
		}
		for _, st := range Schema() {
			if st.Kind != "table" {
				continue
			}
			cols, err := TableInfo(ctx, db, st.Name)
			if err != nil {
				refErr = err
				return
			}
			refCols[st.Name] = cols
		}
	})
	return refCols, refErr
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func TableInfo(ctx context.Context, q queryer, table string) ([]Column, error) {
	rows, err := q.QueryContext(ctx, "SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Column
	for rows.Next() {
		var c Column
		var nn int
		if err := rows.Scan(&c.CID, &c.Name, &c.Type, &nn, &c.Default, &c.PK); err != nil {
			return nil, err
		}
		c.NotNull = nn != 0
		out = append(out, c)
	}
	return out, rows.Err()
}

package pgsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// OpenDB returns a database/sql pool over pgx whose connections escape
// string arguments and unescape text results (EscapeText), so text values
// may hold NUL characters as they may in SQLite.
func OpenDB(cfg pgx.ConnConfig) *sql.DB {
	return sql.OpenDB(connector{stdlib.GetConnector(cfg)})
}

type connector struct{ driver.Connector }

func (c connector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	sc, ok := dc.(*stdlib.Conn)
	if !ok {
		_ = dc.Close()
		return nil, fmt.Errorf("pgsql: unexpected driver connection %T", dc)
	}
	return &conn{sc}, nil
}

// conn is a pgx stdlib connection with text escaping. Every method but
// CheckNamedValue and QueryContext is stdlib's.
type conn struct{ *stdlib.Conn }

// CheckNamedValue converts arguments to the standard driver values (the
// named string and float types of package models become string and float64)
// and escapes strings.
func (c *conn) CheckNamedValue(nv *driver.NamedValue) error {
	v, err := driver.DefaultParameterConverter.ConvertValue(nv.Value)
	if err != nil {
		return err
	}
	if s, ok := v.(string); ok {
		v = EscapeText(s)
	}
	nv.Value = v
	return nil
}

func (c *conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.Conn.QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return &rows{r.(*stdlib.Rows)}, nil
}

type rows struct{ *stdlib.Rows }

func (r *rows) Next(dest []driver.Value) error {
	if err := r.Rows.Next(dest); err != nil {
		return err
	}
	for i, v := range dest {
		if s, ok := v.(string); ok {
			dest[i] = UnescapeText(s)
		}
	}
	return nil
}

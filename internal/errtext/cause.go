package errtext

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// Cause names what a storage error means in words a user acts on: a SQLite
// result code made precise by the place of the file path (sqlitex.Explain:
// "disk full", "the database cannot be written: read-only file system"),
// a PostgreSQL or connection failure (pgsql.Cause: "the database server
// closed the connection"), an operating-system error ("permission
// denied"). It returns "" when err carries no cause it knows, and never
// SQL text. path is the SQLite file ("" when there is none).
func Cause(err error, path string) string {
	if _, ok := sqlitex.Code(err); ok {
		if c := sqlitex.Explain(err, path); c != "" {
			return c
		}
		return statementCause(err)
	}
	if c := pgsql.Cause(err); c != "" {
		return c
	}
	if c := statementCause(err); c != "" {
		return c
	}
	return sqlitex.Explain(err, path)
}

// statementCause says what a statement error of the engine means when the
// statement itself could not run on this database: SQLite's SQLITE_ERROR
// ("no such column: m.display_kind", "no such table: x") or a PostgreSQL
// error of SQLSTATE class 42 (undefined column, undefined table). These
// come from a file or schema that lacks what the statement needs (an older
// or altered shape), so the message says that and quotes the engine's own
// words, which name the missing object but hold no SQL text. It returns ""
// for any other error.
func statementCause(err error) string {
	if c, ok := sqlitex.Code(err); ok {
		if c != 1 { // SQLITE_ERROR, without an extended code
			return ""
		}
		return "the database lacks what this statement needs (" + sqliteMessage(err) + ")"
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "42") {
		return "the database lacks what this statement needs (" + pe.Message + ", SQLSTATE " + pe.Code + ")"
	}
	return ""
}

// sqliteMessage is the driver's text of a SQLite error without the
// result code's generic words and number ("SQL logic error: no such
// column: x (1)" becomes "no such column: x").
func sqliteMessage(err error) string {
	var c interface {
		Code() int
		Error() string
	}
	msg := err.Error()
	if errors.As(err, &c) {
		msg = c.Error()
	}
	msg = strings.TrimPrefix(msg, "SQL logic error: ")
	if i := strings.LastIndex(msg, " ("); i > 0 && strings.HasSuffix(msg, ")") {
		msg = msg[:i]
	}
	return msg
}

// Storage is the ErrStorage error of op around cause err, with a message
// that says what failed and why: "WHAT: CAUSE" (see Cause), WHAT alone when
// the cause is unknown, CAUSE alone when what is empty, else "storage
// failure".
func Storage(op string, err error, what, path string) *errs.Error {
	return errs.Wrap(errs.ErrStorage, op, err, Join(what, Cause(err, path)))
}

// Join is "WHAT: CAUSE", either alone when the other is empty, or
// "storage failure" when both are.
func Join(what, cause string) string {
	switch {
	case what != "" && cause != "":
		return what + ": " + cause
	case what != "":
		return what
	case cause != "":
		return cause
	}
	return "storage failure"
}

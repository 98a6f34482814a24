package errtext

import (
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
		return sqlitex.Explain(err, path)
	}
	if c := pgsql.Cause(err); c != "" {
		return c
	}
	return sqlitex.Explain(err, path)
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

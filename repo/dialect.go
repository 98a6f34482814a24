package repo

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// The dialect seam. Every SQL construct that is not portable is a small
// helper here that switches on the dialect (below the rules: the advisory
// session lock, the retry predicates, and the SQL fragments: instr, ws,
// newlineSpaces, greatest, crossJoin, noIndex, likeCI, isNullSafe,
// jsonMarker, nullsLast, rowOrder), so each repository's statements read
// the same on both. What differs by more than a fragment is a route of its
// own: the PostgreSQL search (search_pg.go), SQLite's preview shortcut
// (listing_preview_sqlite.go), and the SQLite-only features (FTS5 layouts,
// the CJK index, the activity table, VACUUM/backup, the write lock file and
// interrupts in db.go), each guarded where it is used by d.Dialect or
// isPostgres(tx).
//
// Rules for code in this package (both dialects run the same contract
// suite, repo_test.go in the root package):
//   - Prefer GORM's builder and ? placeholders; ON CONFLICT ... DO UPDATE
//     with excluded. works on both.
//   - A write transaction that reads a session row and then writes based on
//     what it read must call lockSession(tx, id) first: on SQLite the
//     transaction already holds the file's write lock (BEGIN IMMEDIATE); on
//     PostgreSQL, where writers run concurrently under READ COMMITTED, it
//     takes a transaction-scoped advisory lock on the session id, so writes
//     of one session are ordered (message ids follow commit order within a
//     session, counters never lose an update, upserts never collide).
//   - Text comparison is bytewise on both (PostgreSQL columns are COLLATE
//     "C"), but LIKE is ASCII-case-insensitive on SQLite and case-sensitive
//     on PostgreSQL: use (*DB).likeCI for case-insensitive matching.
//   - SQLite-only SQL (PRAGMA, sqlite_master, json_extract, FTS5, INSERT OR
//     IGNORE) must be behind isPostgres(tx).

// isPostgres reports whether tx talks to PostgreSQL.
func isPostgres(tx *gorm.DB) bool { return tx.Dialector.Name() == "postgres" }

// lockSession orders the write transactions of one session (see above). It
// is a no-op on SQLite.
func lockSession(tx *gorm.DB, id string) error {
	if !isPostgres(tx) {
		return nil
	}
	return tx.Exec("SELECT pg_advisory_xact_lock(?, hashtext(current_schema() || ':' || ?))", pgsql.LockClassSession, id).Error
}

// retryable returns the predicate of transient errors that make a whole
// transaction worth running again on d's dialect.
func (d *DB) retryable() func(error) bool {
	if d.Dialect == Postgres {
		return pgsql.IsRetryable
	}
	return sqlitex.IsLock
}

// isBusy reports whether err (after retries) means another writer held a
// lock.
func (d *DB) isBusy(err error) bool {
	if d.Dialect == Postgres {
		return pgsql.IsBusy(err)
	}
	return sqlitex.IsLock(err)
}

// jsonMarker is the SQL expression of key in the JSON object column col
// (NULL when col is NULL, not JSON, or lacks the key). SQLite: json_extract
// guarded by json_valid; PostgreSQL: jsonb ->> guarded by a shape check.
func (d *DB) jsonMarker(col, key string) string {
	if d.Dialect == Postgres {
		return fmt.Sprintf(`(CASE WHEN %[1]s ~ '^\s*\{' THEN (%[1]s::jsonb ->> '%[2]s') END)`, col, key)
	}
	return fmt.Sprintf(`json_extract(CASE WHEN json_valid(%[1]s) THEN %[1]s ELSE '{}' END, '$.%[2]s')`, col, key)
}

// jsonMarkerAbsent is the condition "jsonMarker(col, key) IS NULL". On
// PostgreSQL it says col IS NULL first: the planner has statistics for the
// column but none for the JSON expression, whose default estimate (0.5 %
// of the rows) made it sort a whole table where an index walk reads a
// page (a listing by start at offset 5,000).
func (d *DB) jsonMarkerAbsent(col, key string) string {
	if d.Dialect == Postgres {
		return "(" + col + " IS NULL OR " + d.jsonMarker(col, key) + " IS NULL)"
	}
	return d.jsonMarker(col, key) + " IS NULL"
}

// instr is the position of needle in hay (1-based, 0 when absent).
func (d *DB) instr(hay, needle string) string {
	if d.Dialect == Postgres {
		return "STRPOS(" + hay + ", " + needle + ")"
	}
	return "INSTR(" + hay + ", " + needle + ")"
}

// ws is the SQL string of the whitespace characters TRIM strips (tab, LF,
// CR, space).
func (d *DB) ws() string {
	if d.Dialect == Postgres {
		return "chr(9) || chr(10) || chr(13) || chr(32)"
	}
	return "CHAR(9) || CHAR(10) || CHAR(13) || CHAR(32)"
}

// newlineSpaces is expr with every LF and CR replaced by a space.
func (d *DB) newlineSpaces(expr string) string {
	if d.Dialect == Postgres {
		return "REPLACE(REPLACE(" + expr + ", chr(10), ' '), chr(13), ' ')"
	}
	return "REPLACE(REPLACE(" + expr + ", X'0A', ' '), X'0D', ' ')"
}

// greatest is the larger of two SQL values.
func (d *DB) greatest(a, b string) string {
	if d.Dialect == Postgres {
		return "GREATEST(" + a + ", " + b + ")"
	}
	return "MAX(" + a + ", " + b + ")"
}

// crossJoin is the join keyword that makes SQLite's planner keep the
// written order (the left table drives the loop); PostgreSQL writes it as
// a plain JOIN.
func (d *DB) crossJoin() string {
	if d.Dialect == Postgres {
		return "JOIN"
	}
	return "CROSS JOIN"
}

// noIndex hides a column from the SQLite planner's index choice (unary +).
func (d *DB) noIndex(col string) string {
	if d.Dialect == Postgres {
		return col
	}
	return "+" + col
}

// likeCI is the ASCII-case-insensitive LIKE of the dialect (SQLite's LIKE
// already is; PostgreSQL needs ILIKE).
func (d *DB) likeCI() string {
	if d.Dialect == Postgres {
		return "ILIKE"
	}
	return "LIKE"
}

// isNullSafe is the NULL-safe equality operator of the dialect (SQLite IS).
func (d *DB) isNullSafe() string {
	if d.Dialect == Postgres {
		return "IS NOT DISTINCT FROM"
	}
	return "IS"
}

// nullsLast is what a DESC ordering needs to put NULLs last as SQLite does
// (PostgreSQL sorts NULL above every value).
func (d *DB) nullsLast() string {
	if d.Dialect == Postgres {
		return " NULLS LAST"
	}
	return ""
}

// rowOrder is the order rows were inserted in: SQLite's rowid; PostgreSQL
// has none, so the columns pgCols stand in.
func (d *DB) rowOrder(pgCols string) string {
	if d.Dialect == Postgres {
		return pgCols
	}
	return "rowid"
}

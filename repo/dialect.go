package repo

import (
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// Dialect-specific pieces of the repositories live here (and in files named
// *_pg.go): every SQL construct that is not portable goes into a small helper
// that switches on the dialect, so each repository reads the same on both.
//
// Rules for code in this package (both dialects run the same contract
// suite, contract_test.go in the root package):
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

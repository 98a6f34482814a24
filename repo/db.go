package repo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// Dialect names the SQL database behind a DB.
type Dialect string

// Dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// DB is the pair of GORM handles every repository uses: W, the writer (on
// SQLite one connection whose BEGIN is BEGIN IMMEDIATE), and R, the reader
// pool. It counts successful writes and calls AfterWrite with the count, so
// the store can checkpoint every N writes.
type DB struct {
	W       *gorm.DB
	R       *gorm.DB
	Dialect Dialect
	// Engine is the SQLite engine of W and R (nil: the pure-Go one).
	Engine *sqlitex.Engine
	Log    *slog.Logger
	// AfterWrite, when set, is called after every committed write with the
	// number of writes committed so far by this DB.
	AfterWrite func(n int64)
	// Budgets overrides the retry budget per kind (zero = the kind's default).
	Budgets map[sqlitex.Kind]time.Duration
	// ReadOnly, when not empty, makes every write fail with
	// errs.ErrUnsupported and this message (the store was opened
	// read-only, or the file's schema is newer than ours).
	ReadOnly string
	// WriteLock, when set, is taken around every write transaction on
	// SQLite (sqlitex.FileLock: the writers of this library queue for it
	// in the kernel instead of polling SQLite's lock).
	WriteLock *sqlitex.FileLock
	// Path is the SQLite file ("" on PostgreSQL): a storage failure's
	// message names the cause with what its place says (errtext.Cause:
	// "read-only file system", "disk full").
	Path string
	// SchemaHint, when not empty, replaces the message of a read that
	// failed because a table or column is missing (a read-only store on a
	// file that was not upgraded yet): it says which command upgrades it.
	SchemaHint string
	// AsIs is the Hermes schema version of a file older than v30 read as
	// it is (a read-only store; TEMP views present its tables in the v30
	// shape, package asis), 0 otherwise. Reads answer as that version of
	// Hermes did where its rules differ (search, listing, replay).
	AsIs int
	// Replicas, when set, are read-only hot standbys that serve reads
	// while they have replayed every write of this process (replica.go).
	Replicas *Replicas

	writes atomic.Int64
	closed atomic.Bool
	// activity caches whether the file has ActivityTable (1 yes, 2 no).
	activity atomic.Int32
	// activityListed caches whether the PostgreSQL activity table carries
	// migration 0107's listing columns (1 yes).
	activityListed atomic.Int32
	// convCols caches the SELECT list of a replay (conversationCols).
	convCols atomic.Pointer[string]
	// cjkDefer collects inserted ids for the CJK index (cjkdefer.go).
	cjkDefer cjkDeferral
	corrupt  atomic.Pointer[error]

	closeMu sync.Mutex
	onClose []func()
}

// MarkClosed makes every later call fail with errs.ErrClosed, then runs
// the functions registered with OnClose (the Append group committer waits
// there for the group in flight), so that the caller may close the
// handles once it returns.
func (d *DB) MarkClosed() {
	d.closed.Store(true)
	d.closeMu.Lock()
	fs := d.onClose
	d.onClose = nil
	d.closeMu.Unlock()
	for _, f := range fs {
		f()
	}
}

// OnClose registers f to run in MarkClosed.
func (d *DB) OnClose(f func()) {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	d.onClose = append(d.onClose, f)
}

// Corrupt returns the error that marked the store unhealthy, or nil.
func (d *DB) Corrupt() error {
	if p := d.corrupt.Load(); p != nil {
		return *p
	}
	return nil
}

// where names the store for messages: its file, else "the store".
func (d *DB) where() string {
	if d.Path != "" {
		return d.Path
	}
	return "the store"
}

func (d *DB) logger() *slog.Logger {
	if d.Log != nil {
		return d.Log
	}
	return slog.Default()
}

func (d *DB) budget(k sqlitex.Kind) time.Duration {
	if b, ok := d.Budgets[k]; ok && b > 0 {
		return b
	}
	return k.Budget()
}

// Write runs fn in one write transaction (BEGIN IMMEDIATE on SQLite, so the
// write lock is taken at BEGIN, where SQLite's busy handler waits for it,
// and never at the first INSERT of a deferred transaction, where a snapshot
// taken before another process committed fails at once with
// SQLITE_BUSY_SNAPSHOT). The whole transaction is retried on lock errors
// (SQLITE_BUSY / SQLITE_LOCKED, any extended code) with random jitter,
// within the budget of kind; a disk I/O error raised by BEGIN itself is
// retried once.
//
// It returns fn's error mapped to a *errs.Error: ErrBusy wrapping the last
// lock error when the budget ran out (and a warning is logged with how long
// the write waited), ErrCorrupt when the file is damaged (every later write
// then fails fast), ErrClosed after Close, the context's error when ctx
// ends. fn may run more than once; it must not keep state between attempts.
func (d *DB) Write(ctx context.Context, kind sqlitex.Kind, op string, fn func(tx *gorm.DB) error) error {
	if d.closed.Load() {
		return errs.Errorf(errs.ErrClosed, op, "the store is closed")
	}
	if d.ReadOnly != "" {
		return errs.Errorf(errs.ErrUnsupported, op, "%s", d.ReadOnly)
	}
	if c := d.Corrupt(); c != nil {
		return errs.Wrap(errs.ErrCorrupt, op, c, "an earlier write found "+d.where()+" damaged; run "+sqlitex.Command(d.Path, "doctor"))
	}
	// Even a failed write may have committed (a lost connection after
	// COMMIT): reads from now on must see what the primary holds.
	defer d.MarkWritten()
	budget := d.budget(kind)
	deadline := time.Now().Add(budget)
	res, err := sqlitex.RetryIf(ctx, budget, d.retryable(), func() error {
		return d.attempt(ctx, deadline, fn)
	})
	if err != nil {
		if d.isBusy(err) {
			waited := res.Waited.Round(time.Millisecond)
			d.logger().Warn("hermesstate: write gave up on a held lock", "op", op, "kind", kind.String(),
				"waited", waited, "attempts", res.Attempts, "budget", budget)
			what := "another process held the state.db write lock"
			if d.Dialect == Postgres {
				what = "other transactions held the locks this write needs (or kept failing it with deadlocks or serialization failures)"
			}
			return errs.Wrap(errs.ErrBusy, op, err, fmt.Sprintf(
				"%s for %s (%d attempts, %s budget of %s); the write was not saved",
				what, waited, res.Attempts, kind, budget))
		}
		if sqlitex.IsCorrupt(err) {
			e := err
			d.corrupt.Store(&e)
		}
		return mapErrAt(op, err, d.Path)
	}
	if res.Attempts > 1 {
		d.logger().Debug("hermesstate: write retried", "op", op, "attempts", res.Attempts, "waited", res.Waited)
	}
	n := d.writes.Add(1)
	if d.AfterWrite != nil {
		d.AfterWrite(n)
	}
	return nil
}

// attempt runs fn once inside BEGIN ... COMMIT on the writer, holding
// WriteLock (when set; waited for until deadline) from before BEGIN to
// after COMMIT or ROLLBACK. After a
// failed COMMIT (SQLITE_BUSY in rollback-journal mode while readers hold
// SHARED locks) SQLite keeps the transaction open while database/sql has
// already returned the connection to the pool; attempt then issues an
// explicit ROLLBACK on it, so the retry starts a fresh transaction instead
// of failing with "cannot start a transaction within a transaction" and
// keeping the lock.
func (d *DB) attempt(ctx context.Context, deadline time.Time, fn func(tx *gorm.DB) error) (err error) {
	if d.WriteLock != nil && d.Dialect == SQLite {
		unlock, err := d.WriteLock.Lock(ctx, deadline)
		if err != nil {
			return err
		}
		defer unlock()
	}
	w := d.W.WithContext(ctx)
	tx := w.Begin()
	if tx.Error != nil && d.Dialect == SQLite && sqlitex.IsIOErr(tx.Error) {
		// One retry for a disk I/O error raised by BEGIN IMMEDIATE itself
		// (transient on some virtualised block devices).
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		tx = w.Begin()
	}
	if tx.Error != nil {
		return tx.Error
	}
	done := false
	defer func() {
		if !done {
			// fn failed or panicked: roll back (the panic goes on).
			tx.Rollback()
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	done = true
	if err := tx.Commit().Error; err != nil {
		if d.Dialect == SQLite {
			// Error ignored: "no transaction is active" when SQLite did
			// end the transaction itself.
			d.W.Exec("ROLLBACK")
		}
		return err
	}
	return nil
}

// Writes returns the number of writes committed through d.
func (d *DB) Writes() int64 { return d.writes.Load() }

// Read runs fn on the reader pool and maps its error.
func Read[T any](ctx context.Context, d *DB, op string, fn func(tx *gorm.DB) (T, error)) (T, error) {
	var zero T
	if d.closed.Load() {
		return zero, errs.Errorf(errs.ErrClosed, op, "the store is closed")
	}
	var out T
	_, err := sqlitex.RetryIf(ctx, 5*time.Second, d.retryable(), func() error {
		var err error
		if d.Dialect == SQLite && ctx.Done() != nil && (d.Engine == nil || !d.Engine.InterruptsOnContext()) {
			// One pinned connection, interrupted when ctx ends (the
			// pure-Go driver does not interrupt the steps of a query;
			// the C one does).
			return d.readInterruptible(ctx, func(tx *gorm.DB) error {
				out, err = fn(tx)
				return err
			})
		}
		if rs := d.Replicas; rs != nil {
			if r := d.replicaFor(ctx); r != nil {
				out, err = fn(r.DB.WithContext(ctx))
				var verdict *errs.Error
				if err == nil || errors.As(err, &verdict) || ctx.Err() != nil {
					rs.served.Add(1)
					return err
				}
				rs.markDown(d, r, err) // then the primary answers
			}
			rs.fallbacks.Add(1)
		}
		out, err = fn(d.R.WithContext(ctx))
		return err
	})
	if err != nil {
		return zero, d.mapReadErr(op, err)
	}
	return out, nil
}

// readInterruptible runs fn on one pinned reader connection whose
// statement is interrupted when ctx ends (see sqlitex.WithInterrupt).
func (d *DB) readInterruptible(ctx context.Context, fn func(tx *gorm.DB) error) error {
	pool, err := d.R.DB()
	if err != nil {
		return fn(d.R.WithContext(ctx))
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx := d.R.WithContext(ctx) // a session with its own statement
	tx.Statement.ConnPool = conn
	return sqlitex.WithInterrupt(ctx, conn, func() error { return fn(tx) })
}

// CheckWritable returns the ErrUnsupported error of a read-only store for
// op, or nil.
func (d *DB) CheckWritable(op string) error {
	if d.ReadOnly != "" {
		return errs.Errorf(errs.ErrUnsupported, op, "%s", d.ReadOnly)
	}
	return nil
}

// mapReadErr is mapErr, except that a missing table or column on a store
// with a SchemaHint says which command upgrades the file.
func (d *DB) mapReadErr(op string, err error) error {
	if d.SchemaHint != "" && isSchemaErr(err) {
		return errs.Wrap(errs.ErrUnsupported, op, err, d.SchemaHint)
	}
	return mapErrAt(op, err, d.Path)
}

// isSchemaErr reports whether err is SQLite's "no such table/column"
// (SQLITE_ERROR, raised when a statement is compiled).
func isSchemaErr(err error) bool {
	var me *errs.Error
	if errors.As(err, &me) {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "no such column") || strings.Contains(msg, "no such table")
}

// mapErr turns any error into a *errs.Error without leaking SQL text into
// the message (the cause stays reachable through errors.As/Unwrap); a
// storage failure's message names its cause (errtext.Cause).
func mapErr(op string, err error) error { return mapErrAt(op, err, "") }

// mapErrAt is mapErr for the SQLite file path, whose place makes the
// cause of a storage failure precise ("read-only file system").
func mapErrAt(op string, err error, path string) error {
	if err == nil {
		return nil
	}
	var me *errs.Error
	if errors.As(err, &me) {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, gorm.ErrRecordNotFound):
		return errs.Wrap(errs.ErrNotFound, op, err, "no such row")
	case sqlitex.IsLock(err):
		return errs.Wrap(errs.ErrBusy, op, err, "database is locked")
	case sqlitex.IsCorrupt(err):
		if path == "" {
			return errs.Wrap(errs.ErrCorrupt, op, err, "the database file is damaged; run doctor on it (`hermes-state --db FILE doctor`)")
		}
		return errs.Wrap(errs.ErrCorrupt, op, err, path+" is damaged; run "+sqlitex.Command(path, "doctor"))
	case pgsql.IsBusy(err):
		return errs.Wrap(errs.ErrBusy, op, err, "a lock was not granted in time")
	case pgsql.IsInvalidText(err):
		return errs.Wrap(errs.ErrInvalid, op, err, "the server refused a text value")
	case isConstraint(err):
		return errs.Wrap(errs.ErrConflict, op, err, "the write conflicts with existing data")
	}
	return errtext.Storage(op, err, "", path)
}

func isConstraint(err error) bool {
	if c, ok := sqlitex.Code(err); ok {
		return c&0xff == 19 // SQLITE_CONSTRAINT
	}
	if errors.Is(err, gorm.ErrDuplicatedKey) || errors.Is(err, gorm.ErrForeignKeyViolated) {
		return true
	}
	if pgsql.IsConstraint(err) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "SQLSTATE 23")
}

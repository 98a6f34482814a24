// Package hermesstate is the session-storage layer of an AI agent in the
// style of Hermes Agent: every conversation, on every platform, in one
// database that is a valid Hermes state.db.
//
// Open a store with Open, use its repositories (Sessions, Messages, ...),
// and Close it. Every method takes a context.Context and returns errors that
// wrap one of the sentinels (ErrNotFound, ErrConflict, ErrInvalid, ErrBusy,
// ErrClosed, ErrCorrupt, ErrStorage, ErrUnsupported).
package hermesstate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/internal/asis"
	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/safefile"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/repo"
)

// Store is an open state database. It is safe for concurrent use.
type Store struct {
	auto     *autoMaintenance // Config.Maintenance runs (maintain.go)
	cfg      Config
	engine   *sqlitex.Engine // SQLite only
	db       *repo.DB
	version  string
	journal  string
	sessions repo.Sessions
	messages repo.Messages

	searchOnce sync.Once
	search     repo.Search

	tokensOnce sync.Once
	tokens     repo.TokenQueue

	closeOnce sync.Once
	closeErr  error
	ckptMu    sync.Mutex

	// newer is the schema_version of a file newer than v30 (0 otherwise):
	// such a file is opened read-only.
	newer int

	// shownAs is what Location says instead of the file's path: the file
	// a snapshot (OpenSnapshot) was taken of.
	shownAs string
}

// Open opens (creating if needed) the state database cfg describes, brings
// its schema to Hermes v30 (unless ReadOnly) and returns the store. A file
// Open creates is 0600; an existing file keeps its file mode and its
// journal mode (unless JournalMode is set). It
// returns an error wrapping ErrUnsupported when WAL is configured on a
// SQLite build with the WAL-reset bug, ErrBusy when other processes kept the
// file locked for the whole migration budget, ErrCorrupt when the file is
// not a database, ErrInvalid wrapping ErrNotRegularFile when the path is a
// directory, a device, a FIFO or a socket (refused before SQLite opens it:
// nothing is written there or beside it), and ErrStorage for other
// failures. On PostgreSQL (see
// Config.Driver) it returns ErrInvalid for a bad DSN or schema name,
// ErrStorage when the server cannot be reached, ErrNotFound when a
// read-only store's schema has no tables, and ErrBusy when another host
// held the schema's migration lock too long.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg}
	open := s.openSQLite
	if cfg.Driver == DriverPostgres {
		open = s.openPostgres
	} else {
		e, err := cfg.engine()
		if err != nil {
			return nil, err
		}
		s.engine = e
	}
	if err := s.openRetrying(ctx, open); err != nil {
		return nil, err
	}
	s.startAutoMaintenance()
	return s, nil
}

// openRetrying runs open; on SQLite, an attempt that meets the file locked
// by another process (ErrBusy: Hermes creating or committing to a
// rollback-journal file, other processes migrating it) is undone and
// retried with jitter within the store's routine budget (WriteBudgets,
// 20 s by default), as every write is, so a store opened while others
// write opens as soon as they let it. Other errors return at once.
func (s *Store) openRetrying(ctx context.Context, open func(context.Context) error) error {
	cfg := s.cfg
	retryable := func(err error) bool { return cfg.Driver != DriverPostgres && errors.Is(err, ErrBusy) }
	budget := cfg.WriteBudgets.Routine
	if budget <= 0 {
		budget = sqlitex.Routine.Budget()
	}
	first := true
	_, err := sqlitex.RetryIf(ctx, budget, retryable, func() error {
		if !first {
			// A fresh attempt: nothing of the failed one is kept.
			s.cfg, s.db, s.version, s.journal, s.newer, s.sessions, s.messages = cfg, nil, "", "", 0, nil, nil
		}
		first = false
		err := open(ctx)
		if err != nil {
			s.closeHandles()
		}
		return err
	})
	return err
}

// gormConfig returns a new *gorm.Config. A *gorm.Config holds the callbacks
// of the DB opened with it: every gorm.Open needs its own, or the reader
// would replace the writer's hooks.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
}

func (s *Store) openSQLite(ctx context.Context) error {
	const op = "open"
	cfg := s.cfg
	path := cfg.Path
	// Before SQLite sees the path: a device, FIFO, socket or directory is
	// never opened (SQLite would write its header over a device and make
	// a -shm beside it).
	if err := sqlitex.CheckRegular(op, path); err != nil {
		return err
	}
	if cfg.ReadOnly {
		return s.openSQLiteReadOnly(ctx)
	}
	if cfg.MustExist {
		if err := sqlitex.CheckStoreFile(op, path); err != nil {
			return err
		}
	} else if err := s.createIfMissing(ctx, path); err != nil {
		return err
	}
	w, err := s.openWriter(path)
	if err != nil {
		return err
	}
	if err := w.WithContext(ctx).Raw("SELECT sqlite_version()").Scan(&s.version).Error; err != nil {
		return classifyOpenErr(op, err, path)
	}
	// A file of a newer Hermes is never adopted: no migration, no journal
	// switch, no chmod; it is opened read-only instead.
	fv, err := migrations.FileVersion(w.WithContext(ctx))
	if err != nil {
		return classifyOpenErr(op, err, path)
	}
	if fv > migrations.HermesSchemaVersion {
		if err := s.closeHandles(); err != nil {
			return errs.Wrap(ErrStorage, op, err, "")
		}
		s.db = nil
		s.newer = fv
		s.cfg.ReadOnly = true
		return s.openSQLiteReadOnly(ctx)
	}
	if err := s.applyJournalMode(ctx); err != nil {
		return err
	}
	if err := s.prepare(ctx, w); err != nil {
		return err
	}
	// The file keeps its mode: a store this process creates is 0600 from
	// the start (createNew), an existing file is the user's (Hermes', ...)
	// and is never chmod-ed. SQLite gives the -wal and -shm it creates the
	// mode of the database file.
	if s.journal == "wal" {
		if err := s.openReaders(path); err != nil {
			return err
		}
	}
	if cfg.CheckpointEvery > 0 && s.journal == "wal" {
		every := int64(cfg.CheckpointEvery)
		s.db.AfterWrite = func(n int64) {
			if n%every == 0 {
				s.checkpoint(context.Background(), "PASSIVE")
			}
		}
	}
	s.sessions = repo.NewSessions(s.db)
	s.messages = repo.NewMessages(s.db)
	return nil
}

// openWriter opens the writer connection of the SQLite file path and makes
// s.db with it as both writer and reader.
//
// Connection pool (the documented choice):
//   - Writer: exactly one connection. SQLite admits one writer per file
//     anyway; with one connection the writes of this process queue in
//     Go (database/sql's pool wait, FIFO, no busy polling) instead of
//     contending with each other for the file lock, and only other
//     processes ever meet SQLITE_BUSY. Its BEGIN is BEGIN IMMEDIATE
//     (_txlock=immediate), so the lock is taken, and waited for, at
//     BEGIN; busy timeout BusyTimeout (default 20 ms, short for fairness
//     between processes, see Config.BusyTimeout), beyond which Write
//     retries with jitter within the budget of the kind of write.
//   - Readers (WAL mode only, openReaders): ReadPoolSize (default 4)
//     query_only connections with a 5 s busy timeout. In WAL a reader
//     works on a snapshot and never waits for the writer, so reads of this
//     process do not queue behind its writes. Four covers the concurrent
//     readers of one agent process (gateway, dashboard, search) without
//     holding many old snapshots that keep checkpoints from finishing.
//   - Rollback-journal mode (delete): reads use the writer connection,
//     since readers and the writer exclude each other at the file level
//     there and extra connections would only add lock contention.
func (s *Store) openWriter(path string) (*gorm.DB, error) {
	const op = "open"
	cfg := s.cfg
	wcfg := sqlitex.ConnConfig{Path: path, BusyTimeout: cfg.BusyTimeout, Synchronous: sqlitex.Synchronous(cfg.Synchronous),
		ForeignKeys: true, Immediate: true}
	w, err := gorm.Open(s.engine.Dialector(s.engine.DSN(wcfg)), gormConfig())
	if err != nil {
		return nil, classifyOpenErr(op, err, path)
	}
	sqlDB, err := w.DB()
	if err != nil {
		return nil, errs.Wrap(ErrStorage, op, err, "")
	}
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	sqlDB.SetConnMaxLifetime(0)
	var lock *sqlitex.FileLock
	if !cfg.NoLockFile {
		lock = sqlitex.NewFileLock(path)
	}
	s.db = &repo.DB{W: w, R: w, Dialect: repo.SQLite, Engine: s.engine, Path: path, Log: cfg.Logger, WriteLock: lock, Budgets: map[sqlitex.Kind]time.Duration{
		sqlitex.Routine: cfg.WriteBudgets.Routine, sqlitex.Transcript: cfg.WriteBudgets.Transcript, sqlitex.Activity: cfg.WriteBudgets.Activity}}
	return w, nil
}

// prepare makes the writable store ready for use: the write path's
// callbacks (repo.RegisterWritePath, the one place they are registered),
// the migrations, the search tables.
func (s *Store) prepare(ctx context.Context, w *gorm.DB) error {
	const op = "open"
	if err := repo.RegisterWritePath(w, s.db); err != nil {
		return errs.Wrap(ErrStorage, op, err, "")
	}
	if err := migrations.Run(ctx, w); err != nil {
		if errors.Is(err, ErrCorrupt) {
			return errs.Wrap(ErrCorrupt, op, err, s.cfg.Path+" is damaged: migrating it to v30 failed; run "+sqlitex.Command(s.cfg.Path, "doctor"))
		}
		return err
	}
	for _, step := range []func(context.Context, *gorm.DB) error{migrations.StampHermesFile, migrations.TrigramWithoutNUL} {
		if err := step(ctx, w); err != nil {
			if errors.Is(err, ErrBusy) {
				return err
			}
			return classifyOpenErr(op, err, s.cfg.Path)
		}
	}
	return repo.PrepareSearch(ctx, s.db)
}

// openReaders opens the WAL-mode reader pool of path (see openWriter).
func (s *Store) openReaders(path string) error {
	const op = "open"
	cfg := s.cfg
	rcfg := sqlitex.ConnConfig{Path: path, BusyTimeout: cfg.ReadBusyTimeout, Synchronous: sqlitex.Synchronous(cfg.Synchronous),
		ForeignKeys: true, QueryOnly: true, CacheSizeKiB: cfg.ReadCacheKiB}
	r, err := gorm.Open(s.engine.Dialector(s.engine.DSN(rcfg)), gormConfig())
	if err != nil {
		return classifyOpenErr(op, err, path)
	}
	rdb, err := r.DB()
	if err != nil {
		return errs.Wrap(ErrStorage, op, err, "")
	}
	rdb.SetMaxOpenConns(cfg.ReadPoolSize)
	rdb.SetMaxIdleConns(cfg.ReadPoolSize)
	s.db.R = r
	return nil
}

// createIfMissing creates the store file path, and its directories, when
// it does not exist (see createNew).
func (s *Store) createIfMissing(ctx context.Context, path string) error {
	const op = "open"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return errs.Wrap(ErrStorage, op, err, "cannot create the directory of "+path+": "+sqlitex.Describe(err))
	}
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		if err := s.createNew(ctx, path); err != nil {
			return err
		}
	}
	if err := createPrivate(path); err != nil {
		return errs.Wrap(ErrStorage, op, err, "cannot create "+path+": "+sqlitex.Describe(err))
	}
	return nil
}

// newStorePrefix starts the name of a store being created.
const newStorePrefix = ".hermesstate-new-"

// createNew creates the store file path that does not exist yet without
// ever showing a partial one under that name: the store is built (created,
// migrated, closed) in a 0600 temporary file beside it, which is then
// linked to path. When that fails (a full disk, say) the temporary file is
// removed and nothing is left; when another process created path
// meanwhile, its store is kept and ours discarded.
func (s *Store) createNew(ctx context.Context, path string) error {
	const op = "open"
	dir := filepath.Dir(path)
	safefile.RemoveStale(dir, newStorePrefix)
	tmp, err := safefile.CreateTemp(dir, newStorePrefix)
	if err != nil {
		return errs.Wrap(ErrStorage, op, err, "cannot create "+path+": "+sqlitex.Describe(err))
	}
	cfg := s.cfg
	cfg.Path, cfg.Maintenance = tmp, nil
	st, err := Open(ctx, cfg)
	if err == nil {
		// The file must hold every commit by itself before it is given
		// its name (its -wal is not published with it): a checkpoint that
		// fails (a full disk) fails the creation.
		err = st.checkpointWhole(ctx)
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		if fi, serr := os.Stat(tmp + "-wal"); serr == nil && fi.Size() > 0 {
			err = errs.Errorf(ErrStorage, op, "its -wal could not be folded into the file")
		}
	}
	if err == nil {
		err = safefile.Publish(tmp, path)
		if errors.Is(err, fs.ErrExist) {
			err = nil // created by another process meanwhile: use it
		}
	}
	cause := errtext.Cause(err, tmp) // while tmp is still there to look at
	safefile.Remove(tmp)
	if err != nil {
		kind := ErrStorage
		var me *Error
		if errors.As(err, &me) && me.Kind != nil {
			kind = me.Kind
		}
		msg := cause
		if msg == "" && me != nil && me.Msg != "" {
			msg = me.Msg
		}
		if msg == "" {
			msg = err.Error()
		}
		return errs.Wrap(kind, op, err, "cannot create "+path+": "+strings.ReplaceAll(msg, tmp, path))
	}
	return nil
}

// checkpointWhole runs a TRUNCATE checkpoint (WAL mode) and returns its
// error, or an error when readers kept it from copying every commit into
// the database file.
func (s *Store) checkpointWhole(ctx context.Context) error {
	if s.journal != "wal" || s.cfg.ReadOnly {
		return nil
	}
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	var busy, logFrames, done int64
	if err := s.db.W.WithContext(ctx).Raw("PRAGMA wal_checkpoint(TRUNCATE)").Row().Scan(&busy, &logFrames, &done); err != nil {
		return err
	}
	if busy != 0 {
		return errs.Errorf(ErrBusy, "checkpoint", "another connection kept the checkpoint from finishing")
	}
	return nil
}

// openSQLiteReadOnly opens the file for reading only: SQLite's mode=ro (the
// database file is never opened for writing; VACUUM INTO, a read of it,
// still works, which query_only would refuse), no migration, no
// journal-mode switch, no chmod. Every write fails with ErrUnsupported.
// In WAL mode SQLite itself creates the -wal and -shm files when they are
// missing (as any reader does); the database file is never changed.
func (s *Store) openSQLiteReadOnly(ctx context.Context) error {
	const op = "open"
	cfg := s.cfg
	path := cfg.Path
	if err := sqlitex.CheckStoreFile(op, path); err != nil {
		return err
	}
	g, immutable, err := openReadOnlyPool(ctx, s.engine, path, cfg.ReadBusyTimeout, cfg.ReadCacheKiB, nil)
	if err != nil {
		return err
	}
	g, asIs, err := s.presentAsV30(ctx, g)
	if err != nil {
		return err
	}
	if immutable {
		cfg.Logger.Info("hermesstate: the WAL-mode file lies in a directory that cannot be written (no -shm can be made there) and has no -wal: reading it as immutable", "path", path)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return errs.Wrap(ErrStorage, op, err, "")
	}
	sqlDB.SetMaxOpenConns(cfg.ReadPoolSize)
	sqlDB.SetMaxIdleConns(cfg.ReadPoolSize)
	reason := "the store was opened read-only; writes are refused"
	if s.newer > 0 {
		reason = fmt.Sprintf("%s has Hermes schema version %d, newer than %d, the newest this hermes-state knows: it is opened read-only and writes are refused (upgrade hermes-state to write to it)",
			path, s.newer, migrations.HermesSchemaVersion)
	}
	s.db = &repo.DB{W: g, R: g, Dialect: repo.SQLite, Engine: s.engine, Path: path, Log: cfg.Logger, ReadOnly: reason, AsIs: asIs}
	w := g.WithContext(ctx)
	if err := w.Raw("SELECT sqlite_version()").Scan(&s.version).Error; err != nil {
		return classifyOpenErr(op, err, path)
	}
	var mode string
	if err := w.Raw("PRAGMA journal_mode").Scan(&mode).Error; err != nil {
		return classifyOpenErr(op, err, path)
	}
	s.journal = strings.ToLower(mode)
	if s.journal == "wal" {
		if err := sqlitex.CheckWAL(s.version); err != nil {
			s.cfg.Logger.Warn("hermesstate: file is in WAL mode on a SQLite build with the WAL-reset bug", "sqlite", s.version)
		}
	}
	fv, err := migrations.FileVersion(w)
	if err != nil {
		return classifyOpenErr(op, err, path)
	}
	if s.newer == 0 && fv > migrations.HermesSchemaVersion {
		s.newer = fv
		s.db.ReadOnly = fmt.Sprintf("%s has Hermes schema version %d, newer than %d, the newest this hermes-state knows: it is opened read-only and writes are refused (upgrade hermes-state to write to it)",
			path, s.newer, migrations.HermesSchemaVersion)
	}
	if s.newer == 0 {
		if pending, err := migrations.Pending(ctx, g); err == nil && len(pending) > 0 {
			s.db.SchemaHint = fmt.Sprintf("%s (Hermes schema version %d) has not been upgraded to the v30 shape this read needs; run %s to upgrade it", path, fv, sqlitex.Command(path, "migrate"))
		}
	}
	s.sessions = repo.NewSessions(s.db)
	s.messages = repo.NewMessages(s.db)
	return nil
}

// presentAsV30 reopens the read-only pool g of a Hermes file older than
// v30 (one not upgraded yet) so that every connection sees the file in the
// v30 shape: TEMP views named like the v30 tables over the file's own
// tables (package asis). The file is read as it is; nothing is written to
// it or beside it. It returns the pool to use and the file's schema
// version when the views are in place (0 for a file already in the v30
// shape, a newer one, which is read with its own tables, or one without a
// schema version), and the error of reading the file's schema.
func (s *Store) presentAsV30(ctx context.Context, g *gorm.DB) (*gorm.DB, int, error) {
	const op = "open"
	path := s.cfg.Path
	fv, err := migrations.FileVersion(g.WithContext(ctx))
	if err != nil {
		return nil, 0, classifyOpenErr(op, err, path)
	}
	if fv > migrations.HermesSchemaVersion {
		return g, 0, nil
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, 0, errs.Wrap(ErrStorage, op, err, "")
	}
	shims, err := asis.Shims(ctx, sqlDB)
	if err != nil {
		return nil, 0, classifyOpenErr(op, err, path)
	}
	if len(shims) == 0 {
		return g, 0, nil
	}
	if err := sqlDB.Close(); err != nil {
		return nil, 0, errs.Wrap(ErrStorage, op, err, "")
	}
	g, _, err = openReadOnlyPool(ctx, s.engine, path, s.cfg.ReadBusyTimeout, s.cfg.ReadCacheKiB, shims)
	if err != nil {
		return nil, 0, err
	}
	// A file without a schema version (not Hermes-made) is shown in the
	// v30 shape and answers by the current rules (AsIs 0).
	return g, max(fv, 0), nil
}

// openReadOnlyPool opens path for reading and reads its schema once. Where
// nothing lies beside the file and this process may write it and its
// directory (asis.LeavesNothing), the connections open it for reading and
// writing with PRAGMA query_only (set after init): SQLite then removes the
// -wal and -shm it makes for a WAL-mode file when the pool closes, as
// Hermes' readers do, and the file's place looks as it did. Otherwise they
// use mode=ro (the file is never opened for writing; side files SQLite
// makes stay). When a mode=ro open fails because the file is in WAL mode
// where no -shm can be made (sqlitex.ReadOnlyPlace: SQLITE_CANTOPEN, or
// SQLITE_READONLY for a user who may not write the directory), it opens it
// again as immutable (immutable true). Every connection of the pool runs
// init first (see asis.OpenDB).
func openReadOnlyPool(ctx context.Context, e *sqlitex.Engine, path string, busy time.Duration, cacheKiB int, init []string) (*gorm.DB, bool, error) {
	const op = "open"
	open := func(immutable bool) (*gorm.DB, error) {
		rw := !immutable && asis.LeavesNothing(path)
		dsn, err := e.URI(sqlitex.ConnConfig{Path: path, BusyTimeout: busy, ForeignKeys: true, ReadOnly: !rw, Immutable: immutable,
			CacheSizeKiB: cacheKiB})
		if err != nil {
			return nil, errtext.Storage(op, err, "cannot open "+path, path)
		}
		stmts := init
		if rw {
			stmts = append(append([]string{}, init...), "PRAGMA query_only = 1")
		}
		pool, err := asis.OpenDB(e.DriverName(), dsn, stmts)
		if err != nil {
			return nil, err
		}
		g, err := gorm.Open(e.DialectorOn(pool), gormConfig())
		if err != nil {
			_ = pool.Close()
			return nil, err
		}
		_, err = sqlitex.Retry(ctx, readLockBudget, func() error {
			return probeInterruptible(ctx, g, "SELECT count(*) FROM sqlite_master")
		})
		if err != nil {
			if d, e := g.DB(); e == nil {
				_ = d.Close()
			}
			return nil, err
		}
		return g, nil
	}
	g, err := open(false)
	if err == nil {
		return g, false, nil
	}
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	if !sqlitex.IsCantOpen(err) && !sqlitex.IsReadOnly(err) {
		return nil, false, classifyOpenErr(op, err, path)
	}
	immutable, perr := sqlitex.ReadOnlyPlace(path)
	if perr != nil {
		return nil, false, errs.Wrap(ErrUnsupported, op, perr, perr.Error())
	}
	if !immutable {
		return nil, false, classifyOpenErr(op, err, path)
	}
	g, err = open(true)
	if err != nil {
		return nil, false, classifyOpenErr(op, err, path)
	}
	return g, true, nil
}

// readLockBudget is how long an open for reading waits for a file another
// process holds locked (as repo.Read does for every read).
const readLockBudget = 5 * time.Second

// probeInterruptible runs the one-value query q on a connection of g that
// is interrupted when ctx ends (sqlitex.WithInterrupt), so that an open
// waiting for a file another process holds locked stops at once when its
// context ends (returning the context's error) instead of after the busy
// timeout.
func probeInterruptible(ctx context.Context, g *gorm.DB, q string) error {
	pool, err := g.DB()
	if err != nil {
		return err
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return sqlitex.WithInterrupt(ctx, conn, func() error {
		var n int64
		return conn.QueryRowContext(ctx, q).Scan(&n)
	})
}

func classifyOpenErr(op string, err error, path string) error {
	if sqlitex.IsCorrupt(err) {
		return errs.Wrap(ErrCorrupt, op, err, path+" is not a SQLite database or is damaged; run "+sqlitex.Command(path, "doctor"))
	}
	if sqlitex.IsLock(err) {
		return errs.Wrap(ErrBusy, op, err, path+" is locked by another process")
	}
	return errtext.Storage(op, err, "cannot open "+path, path)
}

// applyJournalMode enforces the journal-mode rules: refuse WAL on a
// vulnerable SQLite build, never switch a WAL file back to delete, retry
// the switch to WAL on lock errors, and keep the mode of an existing file
// when none is configured (Hermes keeps DELETE on SQLite < 3.51.3, the
// WAL-reset bug: switching its file to WAL would put the Hermes process
// that shares it at risk). A new file gets the default, WAL.
func (s *Store) applyJournalMode(ctx context.Context) error {
	const op = "open"
	w := s.db.W.WithContext(ctx)
	var cur string
	if err := w.Raw("PRAGMA journal_mode").Scan(&cur).Error; err != nil {
		return classifyOpenErr(op, err, s.cfg.Path)
	}
	cur = strings.ToLower(cur)
	want := string(s.cfg.JournalMode)
	if !s.cfg.journalExplicit && cur != "wal" {
		var pages int64
		if err := w.Raw("PRAGMA page_count").Scan(&pages).Error; err != nil {
			return classifyOpenErr(op, err, s.cfg.Path)
		}
		if pages > 0 {
			want = cur // an existing file keeps its mode
		}
	}
	switch {
	case cur == "wal":
		if want != "wal" {
			s.cfg.Logger.Warn("hermesstate: file is in WAL mode; journal mode delete is configured but a WAL file is never switched back while others may use it", "path", s.cfg.Path)
		}
		if err := sqlitex.CheckWAL(s.version); err != nil {
			s.cfg.Logger.Warn("hermesstate: file is already in WAL mode on a SQLite build with the WAL-reset bug", "sqlite", s.version)
		}
		s.journal = "wal"
		return nil
	case want == "wal":
		if err := sqlitex.CheckWAL(s.version); err != nil {
			return errs.Wrap(ErrUnsupported, op, err, err.Error())
		}
		if s.cfg.ReadOnly {
			s.journal = cur
			return nil
		}
		var got string
		// Other openers may hold the file while they migrate; Hermes retries
		// the whole open for 20 s, so does this switch.
		_, err := sqlitex.Retry(ctx, 20*time.Second, func() error {
			return w.Raw("PRAGMA journal_mode=WAL").Scan(&got).Error
		})
		if err != nil {
			return classifyOpenErr(op, err, s.cfg.Path)
		}
		s.journal = strings.ToLower(got)
		if s.journal != "wal" {
			s.cfg.Logger.Warn("hermesstate: the filesystem refused WAL; using the rollback journal", "path", s.cfg.Path, "mode", got)
		}
		return nil
	default:
		if !s.cfg.ReadOnly && cur != "delete" && s.cfg.journalExplicit {
			var got string
			if err := w.Raw("PRAGMA journal_mode=DELETE").Scan(&got).Error; err != nil {
				return classifyOpenErr(op, err, s.cfg.Path)
			}
			cur = strings.ToLower(got)
		}
		s.journal = cur
		return nil
	}
}

// createPrivate creates path with mode 0600 if it does not exist. It never
// opens an existing file (closing a descriptor would drop this process's
// POSIX locks on it).
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return f.Close()
}

func (s *Store) checkpoint(ctx context.Context, mode string) {
	s.ckptMu.Lock()
	defer s.ckptMu.Unlock()
	if err := s.db.W.WithContext(ctx).Exec("PRAGMA wal_checkpoint(" + mode + ")").Error; err != nil {
		s.cfg.Logger.Debug("hermesstate: checkpoint", "mode", mode, "err", err)
	}
}

// Close runs a TRUNCATE checkpoint (WAL mode, writable stores) and closes
// every connection. Later calls on the store fail with ErrClosed. It
// returns the error of closing the connections, if any.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.db == nil {
			return
		}
		s.stopAutoMaintenance()
		s.closeTokenQueue()
		s.db.MarkClosed()
		if !s.cfg.ReadOnly {
			_ = s.db.FlushDeferredIndexing(context.Background())
		}
		if s.journal == "wal" && !s.cfg.ReadOnly {
			s.checkpoint(context.Background(), "TRUNCATE")
		}
		s.closeErr = s.closeHandles()
	})
	return s.closeErr
}

func (s *Store) closeHandles() error {
	if s.db == nil {
		return nil
	}
	var errs []error
	seen := map[*gorm.DB]bool{}
	handles := []*gorm.DB{s.db.R, s.db.W}
	if s.db.Replicas != nil {
		for _, r := range s.db.Replicas.List {
			handles = append(handles, r.DB)
		}
	}
	for _, g := range handles {
		if g == nil || seen[g] {
			continue
		}
		seen[g] = true
		if d, err := g.DB(); err == nil {
			errs = append(errs, d.Close())
		}
	}
	if s.db.WriteLock != nil {
		errs = append(errs, s.db.WriteLock.Close())
	}
	return errors.Join(errs...)
}

// Sessions returns the session repository.
func (s *Store) Sessions() repo.Sessions { return s.sessions }

// Messages returns the message repository.
func (s *Store) Messages() repo.Messages { return s.messages }

// Path returns the database file path ("" on PostgreSQL).
func (s *Store) Path() string { return s.cfg.Path }

// SQLiteVersion returns sqlite_version() of the linked SQLite library (""
// on PostgreSQL).
func (s *Store) SQLiteVersion() string {
	if s.cfg.Driver == DriverPostgres {
		return ""
	}
	return s.version
}

// SQLiteEngine returns the SQLite engine of the store (EngineGo or EngineC;
// "" on PostgreSQL).
func (s *Store) SQLiteEngine() string {
	if s.engine == nil {
		return ""
	}
	return s.engine.Name()
}

// JournalMode returns the journal mode in effect ("wal", "delete", ...).
func (s *Store) JournalMode() string { return s.journal }

// Logger returns the store's logger.
func (s *Store) Logger() *slog.Logger { return s.cfg.Logger }

// ReadOnly reports whether the store refuses writes: opened with
// Config.ReadOnly, or a file whose schema is newer than v30 (see
// NewerSchema).
func (s *Store) ReadOnly() bool { return s.db.ReadOnly != "" }

// NewerSchema returns the schema_version of a file written by a newer
// Hermes (above 30), which the store opened read-only, or 0.
func (s *Store) NewerSchema() int { return s.newer }

// MigrationsPending returns the IDs of migrations not yet applied to the
// file (empty after a writable Open, and for a file of a newer schema,
// which is never migrated).
func (s *Store) MigrationsPending(ctx context.Context) ([]string, error) {
	if s.newer > 0 {
		return []string{}, nil
	}
	ids, err := migrations.Pending(ctx, s.db.W)
	if err != nil {
		return nil, errtext.Storage("migrations.pending", err, "cannot read the applied migrations", s.cfg.Path)
	}
	return ids, nil
}

// SchemaVersion returns the Hermes schema version recorded in the file.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	v, err := migrations.FileVersion(s.db.R.WithContext(ctx))
	if err != nil {
		return 0, errtext.Storage("schema_version", err, "cannot read the schema version", s.cfg.Path)
	}
	return v, nil
}

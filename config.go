package hermesstate

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// SQLite engines (Config.Engine).
const (
	// EngineGo is SQLite compiled to Go (modernc.org/sqlite under
	// github.com/glebarez/sqlite): in every build, no C compiler needed.
	EngineGo = sqlitex.EngineGo
	// EngineC is the C SQLite library (github.com/mattn/go-sqlite3 under
	// gorm.io/driver/sqlite), compiled in by a build with cgo and the tag
	// sqlite_fts5: statements compiled once per connection, FTS5 search
	// several times faster. See EngineBuildCommand.
	EngineC = sqlitex.EngineC
	// EngineEnv is the environment variable that picks the engine when
	// Config.Engine is empty.
	EngineEnv = sqlitex.EnvEngine
	// EngineBuildCommand installs hermes-state with the C engine.
	EngineBuildCommand = sqlitex.BuildC
)

// Engines returns the SQLite engines compiled into this build ("go", and
// "c" in a build with cgo and the tag sqlite_fts5).
func Engines() []string {
	var out []string
	for _, e := range sqlitex.Engines() {
		out = append(out, e.Name())
	}
	return out
}

// DefaultEngine returns the engine of a Config whose Engine is empty and
// with HERMES_STATE_ENGINE unset: "c" in a build that has it, else "go".
func DefaultEngine() string { return sqlitex.Default().Name() }

// JournalMode is the configured journal mode of a SQLite file.
type JournalMode string

// Journal modes.
const (
	// JournalWAL (default): readers never wait for the writer.
	JournalWAL JournalMode = "wal"
	// JournalDelete: for filesystems where WAL is unsafe (network and
	// cross-VM mounts).
	JournalDelete JournalMode = "delete"
)

// Driver names the database behind a store.
type Driver string

// Drivers.
const (
	// DriverSQLite (default): one Hermes-compatible state.db file.
	DriverSQLite Driver = "sqlite"
	// DriverPostgres: a schema in a PostgreSQL database, shared by several
	// hosts (gorm.io/driver/postgres over pgx).
	DriverPostgres Driver = "postgres"
)

// Config configures Open. The zero value opens the default SQLite file with
// the documented defaults.
type Config struct {
	// Driver selects SQLite or PostgreSQL. Empty means PostgreSQL when DSN
	// is set or Path is a postgres:// URL, else SQLite.
	Driver Driver
	// Path of the SQLite file; empty means DefaultPath(). A postgres:// or
	// postgresql:// URL here is taken as DSN.
	Path string

	// DSN is the PostgreSQL connection URL, e.g.
	// postgres://user@host:5432/db?sslmode=disable (PostgreSQL only).
	DSN string
	// Schema is the PostgreSQL schema holding the tables; created when
	// missing. Default "public". A plain identifier (letters, digits, _),
	// never one of PostgreSQL's system schemas (pg_*, information_schema).
	Schema string
	// MaxOpenConns is the size of the PostgreSQL connection pool; default 8.
	MaxOpenConns int
	// MaxIdleConns is the number of idle PostgreSQL connections kept;
	// default MaxOpenConns.
	MaxIdleConns int
	// ConnMaxLifetime recycles PostgreSQL connections; default 30 min.
	ConnMaxLifetime time.Duration
	// LockTimeout is PostgreSQL's lock_timeout for every statement; default
	// 5 s. A write whose lock wait exceeds it is retried within its budget
	// like a SQLite busy error, then fails with ErrBusy.
	LockTimeout time.Duration

	// ReadDSNs are read-only hot standbys of the PostgreSQL server (each a
	// postgres:// URL; the same database and Schema). Listing, search,
	// export and the other reads go to one of them while it has replayed
	// every write this store made (read your writes) and lags by at most
	// ReplicaMaxLag; otherwise, and when one is down, they go to the
	// primary. Nothing is ever written to a replica. PostgreSQL only.
	ReadDSNs []string
	// ReplicaMaxLag is the replay lag beyond which a replica is not read;
	// default 5 s.
	ReplicaMaxLag time.Duration

	// Engine picks the SQLite library: EngineGo ("go", pure Go, in every
	// build) or EngineC ("c", the C library, in a build with cgo and the
	// tag sqlite_fts5). Empty means the engine HERMES_STATE_ENGINE names,
	// and when that is unset too, DefaultEngine ("c" where it is compiled
	// in). Open and Validate refuse "c" in a build without it with an
	// error wrapping ErrUnsupported that names the build command, and any
	// other name with ErrInvalid. A file written by one engine is read and
	// written by the other (and by Hermes). Ignored on PostgreSQL.
	Engine string

	// JournalMode: wal (default) or delete. A file already in WAL is never
	// switched back to delete (never live-downgrade), as Hermes does.
	JournalMode JournalMode
	// Synchronous: NORMAL (default; in WAL mode a commit survives an
	// application crash, and a power loss can lose only the last commits,
	// never the file's integrity) or FULL (fsync on every commit).
	Synchronous string
	// BusyTimeout of the writer connection; default 20 ms (Hermes uses
	// 1 s). Lock waits beyond it are retried by the store with random
	// jitter, within the budget of each kind of write (20 s routine, 60 s
	// transcript, 0.5 s activity), so a short timeout never fails a write
	// by itself. It is short on purpose: SQLite's busy handler polls ever
	// more sparsely (up to 100 ms apart), and a process that writes in a
	// loop retakes the lock within microseconds, so a long busy timeout
	// lets one waiter starve for its whole length; the store's own retry
	// tries again within 1-20 ms (see sqlitex.Backoff). Measured with 4
	// processes appending in a loop: max stall about 0.2 s with 20 ms,
	// 0.3-0.6 s with 100 ms (BENCHMARKS.md).
	BusyTimeout time.Duration
	// ReadBusyTimeout of reader connections; default 100 ms. A read that
	// meets a lock is retried by the store, with jitter, for up to 5 s in
	// all; the short SQLite timeout lets a cancelled context stop the wait
	// within it (SQLite's busy handler cannot be interrupted).
	ReadBusyTimeout time.Duration
	// ReadPoolSize is the number of reader connections; default 4. In WAL
	// mode readers run beside the single writer without waiting for it; in
	// delete mode reads go through the writer connection.
	ReadPoolSize int
	// ReadCacheKiB is the page cache of each reader connection in KiB
	// (PRAGMA cache_size); default 16384 (16 MiB, allocated only as pages
	// are read). SQLite's own default, 2 MiB, is smaller than the pages a
	// common-word search touches on a 200k-message store (bm25 reads the
	// size of every matching row), and each miss is a read(2) through the
	// pure-Go engine; negative keeps SQLite's default.
	ReadCacheKiB int
	// CheckpointEvery runs a PASSIVE WAL checkpoint after every N committed
	// writes; default 50, negative disables.
	CheckpointEvery int
	// NoLockFile leaves out the write lock file: by default every write
	// transaction first takes an exclusive flock(2) on PATH-hslock (created
	// at the first write, mode 0600), so writers of this library in several
	// processes queue in the kernel instead of polling SQLite's lock
	// (measured: BENCHMARKS.md, Writes). Other programs (Hermes) do not take
	// it; SQLite's locks arbitrate with them as before.
	NoLockFile bool
	// ReadOnly opens without migrating and refuses writes (query_only).
	// It implies MustExist.
	ReadOnly bool
	// MustExist refuses to create a store: where Open would create a
	// missing SQLite file (and its directories) or initialise an empty
	// (0-byte) one, or create the tables of an empty PostgreSQL schema, it
	// returns an error wrapping ErrNotFound and ErrNoStore ("no store at
	// PATH") and creates nothing. For programs that work on an existing
	// store, so a mistyped path or a truncated file is said, not replaced
	// by a new empty store. Default false: Open creates (as Hermes does).
	MustExist bool
	// Logger receives warnings (lock waits, fallbacks); default slog.Default().
	Logger *slog.Logger

	// Maintenance, when set, runs Maintain in the background after Open at
	// most once per Maintenance.Every (opt-in; nil never does).
	Maintenance *MaintenanceConfig

	// WriteBudgets overrides the retry budget of each kind of write (tests,
	// tools); zero values keep the defaults.
	WriteBudgets WriteBudgets

	// set by withDefaults: whether JournalMode was given (doctor and repair
	// leave the file's own mode alone when it was not).
	defaulted, journalExplicit bool
}

// WriteBudgets are the retry budgets per kind of write.
type WriteBudgets struct {
	Routine, Transcript, Activity time.Duration
}

// DefaultReadBusyTimeout is the reader connections' SQLite busy timeout
// when Config.ReadBusyTimeout is zero.
const DefaultReadBusyTimeout = 100 * time.Millisecond

// DefaultBusyTimeout is the writer's SQLite busy timeout when
// Config.BusyTimeout is zero.
const DefaultBusyTimeout = 20 * time.Millisecond

// DefaultReadCacheKiB is the page cache of each reader connection (KiB)
// when Config.ReadCacheKiB is zero.
const DefaultReadCacheKiB = 16384

// DefaultPath returns $HERMES_HOME/state.db, else ~/.hermes/state.db.
func DefaultPath() string {
	if h := strings.TrimSpace(os.Getenv("HERMES_HOME")); h != "" {
		return filepath.Join(h, "state.db")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return filepath.Join(".hermes", "state.db")
	}
	return filepath.Join(home, ".hermes", "state.db")
}

func (c Config) withDefaults() Config {
	if !c.defaulted {
		c.defaulted = true
		c.journalExplicit = strings.TrimSpace(string(c.JournalMode)) != ""
	}
	if c.Driver == "" {
		switch {
		case c.DSN != "":
			c.Driver = DriverPostgres
		case IsPostgresDSN(c.Path):
			c.Driver = DriverPostgres
		default:
			c.Driver = DriverSQLite
		}
	}
	c.Driver = Driver(strings.ToLower(string(c.Driver)))
	if c.Driver == "postgresql" || c.Driver == "pgx" {
		c.Driver = DriverPostgres
	}
	if c.Driver == DriverPostgres {
		if c.DSN == "" && IsPostgresDSN(c.Path) {
			c.DSN, c.Path = c.Path, ""
		}
		if c.Schema == "" {
			c.Schema = "public"
		}
		if c.MaxOpenConns <= 0 {
			c.MaxOpenConns = 8
		}
		if c.MaxIdleConns <= 0 || c.MaxIdleConns > c.MaxOpenConns {
			c.MaxIdleConns = c.MaxOpenConns
		}
		if c.ConnMaxLifetime <= 0 {
			c.ConnMaxLifetime = 30 * time.Minute
		}
		if c.LockTimeout <= 0 {
			c.LockTimeout = 5 * time.Second
		}
	}
	if c.Path == "" && c.Driver == DriverSQLite {
		c.Path = DefaultPath()
	}
	switch strings.ToLower(strings.TrimSpace(string(c.JournalMode))) {
	case "delete":
		c.JournalMode = JournalDelete
	default:
		c.JournalMode = JournalWAL
	}
	switch strings.ToUpper(c.Synchronous) {
	case "FULL", "OFF", "EXTRA":
		c.Synchronous = strings.ToUpper(c.Synchronous)
	default:
		c.Synchronous = "NORMAL"
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = DefaultBusyTimeout
	}
	if c.ReadBusyTimeout <= 0 {
		c.ReadBusyTimeout = DefaultReadBusyTimeout
	}
	if c.ReadPoolSize <= 0 {
		c.ReadPoolSize = 4
	}
	if c.ReadCacheKiB == 0 {
		c.ReadCacheKiB = DefaultReadCacheKiB
	}
	if c.CheckpointEvery == 0 {
		c.CheckpointEvery = 50
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports, before anything is opened, a configuration Open
// refuses: an unknown driver, PostgreSQL without a DSN, or a schema name
// that is not a plain identifier or is one of PostgreSQL's system schemas
// (pg_*, information_schema, in any letter case). The error wraps
// ErrInvalid.
func (c Config) Validate() error {
	const op = "open"
	c = c.withDefaults()
	switch c.Driver {
	case DriverSQLite:
		if len(c.ReadDSNs) > 0 {
			return errs.Errorf(ErrInvalid, op, "read replicas (ReadDSNs, --read-db) are for a PostgreSQL store")
		}
		if _, err := c.engine(); err != nil {
			return err
		}
	case DriverPostgres:
		if c.DSN == "" {
			return errs.Errorf(ErrInvalid, op, "the PostgreSQL driver needs a DSN (postgres://user@host:port/db)")
		}
		if err := pgsql.CheckSchema(c.Schema); err != nil {
			return errs.Wrap(ErrInvalid, op, err, err.Error())
		}
		for _, r := range c.ReadDSNs {
			if !pgsql.IsDSN(r) {
				return errs.Errorf(ErrInvalid, op, "a read replica must be a postgres:// URL, not %q", pgsql.Redact(r))
			}
		}
	default:
		return errs.Errorf(ErrInvalid, op, "unknown driver %q (sqlite or postgres)", c.Driver)
	}
	return nil
}

// IsPostgresDSN reports whether s is a PostgreSQL connection URL
// (postgres:// or postgresql://) rather than a file path.
func IsPostgresDSN(s string) bool { return pgsql.IsDSN(s) }

// configuredJournal returns the journal mode the caller configured, or ""
// when none was (the default applies to new files and writable opens).
func (c Config) configuredJournal() string {
	if !c.journalExplicit {
		return ""
	}
	return string(c.JournalMode)
}

// engine returns the SQLite engine c picks (see Config.Engine), or an
// error wrapping ErrUnsupported (not compiled in) or ErrInvalid (no such
// engine).
func (c Config) engine() (*sqlitex.Engine, error) {
	const op = "open"
	e, err := sqlitex.Resolve(c.Engine)
	switch {
	case errors.Is(err, sqlitex.ErrEngineNotBuilt):
		return nil, errs.Wrap(ErrUnsupported, op, err, err.Error())
	case err != nil:
		return nil, errs.Wrap(ErrInvalid, op, err, err.Error())
	}
	return e, nil
}

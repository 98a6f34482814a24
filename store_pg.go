package hermesstate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/repo"
)

// openPostgres opens the pool of a PostgreSQL store. Every connection has
// search_path = the schema (then public), lock_timeout, and the NUL-safe
// text codec; one pool serves reads and writes (writers run concurrently;
// repo orders the writes of one session with advisory locks).
func (s *Store) openPostgres(ctx context.Context) error {
	const op = "open"
	cfg := s.cfg
	// cfg was validated by Open (Config.Validate: DSN and schema name).
	pc, err := pgsql.ParseConfig(cfg.DSN, cfg.Schema)
	if err != nil {
		return errs.Wrap(ErrInvalid, op, err, "cannot parse the PostgreSQL DSN "+pgsql.Redact(cfg.DSN))
	}
	pc.RuntimeParams["lock_timeout"] = fmt.Sprint(cfg.LockTimeout.Milliseconds())
	if cfg.ReadOnly {
		pc.RuntimeParams["default_transaction_read_only"] = "on"
	}
	if pc.ConnectTimeout == 0 {
		pc.ConnectTimeout = 10 * time.Second
	}
	sqlDB := pgsql.OpenDB(*pc)
	sqlDB.SetMaxOpenConns(cfg.MaxOpenConns)
	sqlDB.SetMaxIdleConns(cfg.MaxIdleConns)
	sqlDB.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	g, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		_ = sqlDB.Close()
		return errtext.Storage(op, err, "cannot open "+pgsql.Redact(cfg.DSN), "")
	}
	s.db = &repo.DB{W: g, R: g, Dialect: repo.Postgres, Log: cfg.Logger, Budgets: map[sqlitex.Kind]time.Duration{
		sqlitex.Routine: cfg.WriteBudgets.Routine, sqlitex.Transcript: cfg.WriteBudgets.Transcript, sqlitex.Activity: cfg.WriteBudgets.Activity}}
	if err := g.WithContext(ctx).Raw("SHOW server_version").Scan(&s.version).Error; err != nil {
		return errtext.Storage(op, err, "cannot reach PostgreSQL at "+pgsql.Redact(cfg.DSN), "")
	}
	var collate string
	if err := g.WithContext(ctx).Raw("SELECT datcollate FROM pg_database WHERE datname = current_database()").Scan(&collate).Error; err == nil {
		switch strings.ToUpper(collate) {
		case "C", "POSIX", "C.UTF-8", "C.UTF8":
		default:
			cfg.Logger.Warn("hermesstate: the database collation is not C; text ORDER BY (titles, ids) may differ from SQLite's bytewise order",
				"collation", collate)
		}
	}
	if !cfg.ReadOnly {
		// A schema of a newer Hermes is never migrated: read-only instead.
		var has int64
		if err := g.WithContext(ctx).Raw("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = 'schema_version'", cfg.Schema).Scan(&has).Error; err != nil {
			return errtext.Storage(op, err, "cannot read the schema of "+pgsql.Redact(cfg.DSN), "")
		}
		if has > 0 {
			var fv sql.NullInt64
			if err := g.WithContext(ctx).Raw("SELECT MAX(version) FROM " + pgsql.QuoteIdent(cfg.Schema) + ".schema_version").Scan(&fv).Error; err != nil {
				return errtext.Storage(op, err, "cannot read the schema version of "+pgsql.Redact(cfg.DSN), "")
			}
			if fv.Valid && fv.Int64 > migrations.HermesSchemaVersion {
				s.newer = int(fv.Int64)
			}
		}
	}
	if s.newer > 0 {
		s.db.ReadOnly = fmt.Sprintf("schema %s has Hermes schema version %d, newer than %d, the newest this hermes-state knows: it is opened read-only and writes are refused (upgrade hermes-state to write to it)",
			cfg.Schema, s.newer, migrations.HermesSchemaVersion)
	} else if cfg.ReadOnly {
		s.db.ReadOnly = "the store was opened read-only; writes are refused"
	}
	if !cfg.ReadOnly && s.newer == 0 && cfg.MustExist {
		if err := s.pgHasStore(ctx); err != nil {
			return err
		}
	}
	if !cfg.ReadOnly && s.newer == 0 {
		// The write path's callbacks: repo.RegisterWritePath.
		if err := repo.RegisterWritePath(g, s.db); err != nil {
			return errs.Wrap(ErrStorage, op, err, "")
		}
		if err := migrations.RunPostgres(ctx, g, cfg.Schema); err != nil {
			return err
		}
	} else if err := s.pgHasStore(ctx); err != nil {
		return err
	}
	if len(cfg.ReadDSNs) > 0 {
		rs, err := openReplicas(cfg)
		if err != nil {
			return err
		}
		s.db.Replicas = rs
	}
	s.sessions = repo.NewSessions(s.db)
	s.messages = repo.NewMessages(s.db)
	return nil
}

// openReplicas opens a read-only pool per read replica (connections are
// made on first use: a replica that is down costs nothing at Open).
func openReplicas(cfg Config) (*repo.Replicas, error) {
	rs := &repo.Replicas{MaxLag: cfg.ReplicaMaxLag}
	for _, dsn := range cfg.ReadDSNs {
		pc, err := pgsql.ParseConfig(dsn, cfg.Schema)
		if err != nil {
			return nil, errs.Wrap(ErrInvalid, "open", err, "cannot parse the read replica DSN "+pgsql.Redact(dsn))
		}
		pc.RuntimeParams["default_transaction_read_only"] = "on"
		if pc.ConnectTimeout == 0 || pc.ConnectTimeout > 2*time.Second {
			pc.ConnectTimeout = 2 * time.Second // a replica that is down falls back quickly
		}
		sqlDB := pgsql.OpenDB(*pc)
		sqlDB.SetMaxOpenConns(cfg.MaxOpenConns)
		sqlDB.SetMaxIdleConns(cfg.MaxIdleConns)
		sqlDB.SetConnMaxLifetime(cfg.ConnMaxLifetime)
		g, err := gorm.Open(postgres.New(postgres.Config{Conn: sqlDB}), &gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, DisableAutomaticPing: true})
		if err != nil {
			_ = sqlDB.Close()
			return nil, errtext.Storage("open", err, "cannot open the read replica "+pgsql.Redact(dsn), "")
		}
		rs.List = append(rs.List, &repo.Replica{Name: pgsql.Redact(dsn), DB: g})
	}
	return rs, nil
}

// ReplicaStats returns how many reads the store's read replicas served and
// how many went to the primary instead (zero without replicas).
func (s *Store) ReplicaStats() repo.ReplicaStats {
	if s.db == nil {
		return repo.ReplicaStats{}
	}
	return s.db.Replicas.Stats()
}

// pgHasStore refuses a schema that holds no store (no sessions table):
// errs.NoStore (ErrNotFound, ErrNoStore).
func (s *Store) pgHasStore(ctx context.Context) error {
	const op = "open"
	var n int64
	if err := s.db.W.WithContext(ctx).Raw("SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = 'sessions'", s.cfg.Schema).Scan(&n).Error; err != nil {
		return errtext.Storage(op, err, "cannot read the schema of "+pgsql.Redact(s.cfg.DSN), "")
	}
	if n == 0 {
		return errs.NoStore(op, s.Location(), "the schema holds no tables of a store", nil)
	}
	return nil
}

// Driver returns the database kind of the store.
func (s *Store) Driver() Driver { return s.cfg.Driver }

// Schema returns the PostgreSQL schema ("" on SQLite).
func (s *Store) Schema() string {
	if s.cfg.Driver != DriverPostgres {
		return ""
	}
	return s.cfg.Schema
}

// ServerVersion returns the PostgreSQL server_version ("" on SQLite).
func (s *Store) ServerVersion() string {
	if s.cfg.Driver != DriverPostgres {
		return ""
	}
	return s.version
}

// Location describes where the store lives, for messages: the file path,
// or the DSN without its password plus the schema.
func (s *Store) Location() string {
	if s.cfg.Driver == DriverPostgres {
		return pgsql.Redact(s.cfg.DSN) + " schema " + s.cfg.Schema
	}
	if s.shownAs != "" {
		return s.shownAs
	}
	return s.cfg.Path
}

// Engine describes the database engine for messages: "SQLite 3.54.1 (c
// engine), journal wal" or "PostgreSQL 15.20, schema NAME".
func (s *Store) Engine() string {
	if s.cfg.Driver == DriverPostgres {
		return "PostgreSQL " + s.version + ", schema " + s.cfg.Schema
	}
	return "SQLite " + s.version + " (" + s.SQLiteEngine() + " engine), journal " + s.journal
}

// Package pgsql holds everything about the PostgreSQL connection that is not
// GORM: connection settings (schema, search_path, pool), the text codec that
// lets text values carry NUL characters, the classification of server errors
// by SQLSTATE, and the advisory-lock keys.
//
// It is the PostgreSQL counterpart of internal/sqlitex and is used by the root
// package, repo and migrations.
package pgsql

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultSchema is the schema used when none is configured.
const DefaultSchema = "public"

var schemaRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// CheckSchema returns an error when name is not a plain SQL identifier
// (letters, digits, underscore, at most 63 bytes, not starting with a
// digit) or is one of PostgreSQL's system schemas (pg_*, information_schema,
// in any letter case).
func CheckSchema(name string) error {
	if !schemaRE.MatchString(name) {
		return fmt.Errorf("schema name %q is not a plain identifier (letters, digits and _, at most 63 bytes)", name)
	}
	if l := strings.ToLower(name); strings.HasPrefix(l, "pg_") || l == "information_schema" {
		return fmt.Errorf("schema %q is a PostgreSQL system schema (pg_*, information_schema): a store never puts its tables there; choose another, e.g. public or hermes", name)
	}
	return nil
}

// QuoteIdent quotes an SQL identifier.
func QuoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// IsDSN reports whether s is a PostgreSQL connection URL (postgres:// or
// postgresql://).
func IsDSN(s string) bool {
	l := strings.ToLower(strings.TrimSpace(s))
	return strings.HasPrefix(l, "postgres://") || strings.HasPrefix(l, "postgresql://")
}

// Redact returns dsn with its password replaced by "xxxxx", for messages:
// the one in the user part (user:pw@) and a password query parameter
// (?password=pw, any letter case), which libpq and pgx accept alike. An
// unparsable dsn comes back as a placeholder, never as given.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "postgres://(unparsable DSN)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		if err != nil {
			return "postgres://(unparsable DSN)"
		}
		masked := false
		for k := range q {
			if strings.EqualFold(k, "password") {
				q[k] = []string{"xxxxx"}
				masked = true
			}
		}
		if masked {
			u.RawQuery = q.Encode()
		}
	}
	return u.String()
}

// ParseConfig parses dsn into a pgx connection config whose search_path is
// schema first, then public (where extensions such as pg_trgm usually
// live). A search_path given in the DSN is replaced.
func ParseConfig(dsn, schema string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	path := QuoteIdent(schema)
	if schema != DefaultSchema {
		path += ", public"
	}
	cfg.RuntimeParams["search_path"] = path
	return cfg, nil
}

// Code returns the SQLSTATE carried by err, or "".
func Code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// SQLSTATE codes used here.
const (
	SerializationFailure     = "40001"
	DeadlockDetected         = "40P01"
	LockNotAvailable         = "55P03"
	QueryCanceled            = "57014"
	TooManyConnections       = "53300"
	UniqueViolation          = "23505"
	ForeignKeyViolation      = "23503"
	NotNullViolation         = "23502"
	CheckViolation           = "23514"
	CharacterNotInRepertoire = "22021"
	UntranslatableCharacter  = "22P05"
)

// IsRetryable reports whether a transaction that failed with err may be run
// again as a whole: serialization failures, deadlocks, lock timeouts and a
// full connection table.
func IsRetryable(err error) bool {
	switch Code(err) {
	case SerializationFailure, DeadlockDetected, LockNotAvailable, TooManyConnections:
		return true
	}
	return false
}

// IsBusy reports whether err means another session held a lock or the
// server had no room (retryable errors plus statement timeouts).
func IsBusy(err error) bool {
	return IsRetryable(err) || Code(err) == QueryCanceled
}

// IsConstraint reports whether err is an integrity-constraint violation
// (class 23: unique, foreign key, not null, check).
func IsConstraint(err error) bool {
	return strings.HasPrefix(Code(err), "23")
}

// IsInvalidText reports whether the server refused a text value (bytes
// invalid in the database encoding).
func IsInvalidText(err error) bool {
	c := Code(err)
	return c == CharacterNotInRepertoire || c == UntranslatableCharacter
}

// IsConnection reports whether err is a connection failure (SQLSTATE class
// 08 or a network error before the server answered).
func IsConnection(err error) bool {
	if strings.HasPrefix(Code(err), "08") {
		return true
	}
	var ce *pgconn.ConnectError
	return errors.As(err, &ce)
}

// Advisory-lock classes (the first key of the two-key form).
const (
	// LockClassMigrate serializes migrations of one schema.
	LockClassMigrate int32 = 0x4853_0001
	// LockClassSession serializes the writes of one session.
	LockClassSession int32 = 0x4853_0002
	// LockClassDatabase serializes database-wide setup (extensions).
	LockClassDatabase int32 = 0x4853_0003
)

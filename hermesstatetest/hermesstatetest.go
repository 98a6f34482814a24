// Package hermesstatetest opens hermesstate stores for tests, as
// net/http/httptest does for servers: an empty store per
// backend (the contract suite's ForEachBackend: a SQLite file in
// t.TempDir() and a fresh PostgreSQL schema), a fresh SQLite store, and a
// private copy of a Hermes fixture. Each store is closed when the test
// ends.
//
// It is the part of fixturetest that imports the root package, kept apart
// so that the white-box tests of the packages the root imports (repo,
// migrations, doctor, ...) can still use fixturetest: importing
// the root from those would be an import cycle. Import it from external
// test packages (package repo_test, package hermesstate_test, ...).
package hermesstatetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
)

// Backend names a store kind of the contract suite.
type Backend string

// The backends every contract test runs on.
const (
	SQLite   Backend = "sqlite"
	Postgres Backend = "postgres"
)

// Backends lists them in the order ForEachBackend runs them.
var Backends = []Backend{SQLite, Postgres}

// Open opens an empty store of kind b for t with cfg's other settings
// (Driver, Path, DSN and Schema are filled in), closed when t ends.
// PostgreSQL skips t without a test server (see pgtest).
func Open(t testing.TB, b Backend, cfg hs.Config) *hs.Store {
	t.Helper()
	switch b {
	case SQLite:
		cfg.Driver = hs.DriverSQLite
		cfg.Path = filepath.Join(t.TempDir(), "state.db")
	case Postgres:
		dsn, schema := pgtest.Schema(t)
		cfg.Driver, cfg.DSN, cfg.Schema = hs.DriverPostgres, dsn, schema
	}
	return open(t, cfg)
}

// ForEachBackend runs fn as a subtest per backend, each with a fresh,
// empty store. Use only the store's public API in fn.
func ForEachBackend(t *testing.T, fn func(t *testing.T, st *hs.Store)) {
	t.Helper()
	for _, b := range Backends {
		t.Run(string(b), func(t *testing.T) {
			fn(t, Open(t, b, hs.Config{}))
		})
	}
}

// Fresh opens a new SQLite store in t.TempDir().
func Fresh(t testing.TB) *hs.Store {
	t.Helper()
	return open(t, hs.Config{Path: filepath.Join(t.TempDir(), "state.db")})
}

// Fixture copies the fixture's file and opens the copy (adopting it, as
// a writable Open does); it returns the store and the copy's path.
func Fixture(t testing.TB, f *fixturetest.Fixture) (*hs.Store, string) {
	t.Helper()
	path := f.CopyDB(t)
	return open(t, hs.Config{Path: path}), path
}

func open(t testing.TB, cfg hs.Config) *hs.Store {
	t.Helper()
	st, err := hs.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// FreshPath is Fresh that also returns the file's path.
func FreshPath(t testing.TB) (*hs.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	return open(t, hs.Config{Path: path}), path
}

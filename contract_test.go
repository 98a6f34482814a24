package hermesstate_test

// The contract suite: the same assertions against every backend. Each test
// body receives a freshly opened, empty store; forEachBackend runs it once on
// a SQLite file in t.TempDir() and once on a fresh PostgreSQL schema
// (dropped after the test; skipped with a hint when HERMESSTATE_PG_DSN is
// unset, failing when it is set but the server is unreachable).
//
// To add a feature to the suite, write
//
//	func TestContractMyFeature(t *testing.T) {
//		forEachBackend(t, func(t *testing.T, st *hs.Store) { ... })
//	}
//
// and use only the store's public API in the body.

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest/storetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
)

// backend names a store kind of the contract suite.
type backend string

const (
	backendSQLite   backend = "sqlite"
	backendPostgres backend = "postgres"
)

var backends = []backend{backendSQLite, backendPostgres}

// openBackend opens an empty store of kind b for t, closed when t ends.
func openBackend(t *testing.T, b backend) *hs.Store {
	t.Helper()
	return openBackendConfig(t, b, hs.Config{})
}

// openBackendConfig is openBackend with extra settings (Path, DSN and
// Schema are filled in).
func openBackendConfig(t *testing.T, b backend, cfg hs.Config) *hs.Store {
	t.Helper()
	ctx := context.Background()
	switch b {
	case backendSQLite:
		cfg.Driver = hs.DriverSQLite
		cfg.Path = filepath.Join(t.TempDir(), "state.db")
	case backendPostgres:
		dsn, schema := pgtest.Schema(t)
		cfg.Driver, cfg.DSN, cfg.Schema = hs.DriverPostgres, dsn, schema
	}
	st, err := hs.Open(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// forEachBackend runs fn as a subtest per backend, each with a fresh store.
func forEachBackend(t *testing.T, fn func(t *testing.T, st *hs.Store)) {
	t.Helper()
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			fn(t, openBackend(t, b))
		})
	}
}

// ctxT returns a context bounded by a minute (tests must not hang).
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func requireKind(t *testing.T, err, kind error) {
	t.Helper()
	require.Error(t, err)
	require.Truef(t, errors.Is(err, kind), "want %v, got %v", kind, err)
}

// pgTestDSN returns the DSN of the test server (skipping without one).
func pgTestDSN(t *testing.T) string { return pgtest.DSN(t) }

// pgDSNFor returns a DSN whose search_path is the store's schema.
func pgDSNFor(t *testing.T, st *hs.Store) string { return storetest.PostgresDSN(t, st) }

package hermesstate_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestPostgresConcurrentOpensMigrateOnce: several stores opening the same
// new schema at once (several hosts starting) all succeed, the schema is
// migrated once and every migration is recorded once.
func TestPostgresConcurrentOpensMigrateOnce(t *testing.T) {
	dsn, schema := pgtest.Schema(t)
	ctx := context.Background()
	const n = 6
	stores := make([]*hs.Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			stores[i], errs[i] = hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema, MaxOpenConns: 2})
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		require.NoError(t, errs[i])
		defer stores[i].Close()
	}
	pending, err := stores[0].MigrationsPending(ctx)
	require.NoError(t, err)
	require.Empty(t, pending)
	_, err = stores[1].Sessions().Create(ctx, repo.SessionInput{ID: "x", Source: "cli"})
	require.NoError(t, err)
	got, err := stores[n-1].Sessions().Get(ctx, "x")
	require.NoError(t, err)
	require.Equal(t, "cli", got.Source)
	counts, err := stores[0].TableCounts(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, counts["schema_version"])
	require.Equal(t, hs.DriverPostgres, stores[0].Driver())
	require.NotEmpty(t, stores[0].ServerVersion())
	require.Empty(t, stores[0].SQLiteVersion())

	// Read-only opens of the migrated schema work; of an absent one fail.
	ro, err := hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema, ReadOnly: true})
	require.NoError(t, err)
	defer ro.Close()
	_, err = ro.Sessions().Get(ctx, "x")
	require.NoError(t, err)
	_, err = ro.Sessions().Create(ctx, repo.SessionInput{ID: "y", Source: "cli"})
	require.Error(t, err)
	_, err = hs.Open(ctx, hs.Config{DSN: dsn, Schema: pgtest.NewSchemaName("absent"), ReadOnly: true})
	fixturetest.RequireKind(t, err, hs.ErrNotFound)
}

func TestPostgresOpenErrors(t *testing.T) {
	ctx := context.Background()
	_, err := hs.Open(ctx, hs.Config{Driver: hs.DriverPostgres})
	fixturetest.RequireKind(t, err, hs.ErrInvalid)
	_, err = hs.Open(ctx, hs.Config{DSN: "postgres://127.0.0.1:1/x?sslmode=disable&connect_timeout=2", Schema: "ok"})
	fixturetest.RequireKind(t, err, hs.ErrStorage)
	_, err = hs.Open(ctx, hs.Config{DSN: "postgres://127.0.0.1:1/x", Schema: "bad-name; drop"})
	fixturetest.RequireKind(t, err, hs.ErrInvalid)
	_, err = hs.Open(ctx, hs.Config{Driver: "mysql"})
	fixturetest.RequireKind(t, err, hs.ErrInvalid)
	// A postgres:// URL in Path selects PostgreSQL.
	_, err = hs.Open(ctx, hs.Config{Path: "postgres://127.0.0.1:1/x?connect_timeout=2&sslmode=disable"})
	fixturetest.RequireKind(t, err, hs.ErrStorage)
}

// TestPostgresSystemSchemaRefused (issue 11, item 9): PostgreSQL's own
// schemas (information_schema, pg_catalog, pg_toast, pg_temp_N, any pg_*)
// are refused, in any letter case, with ErrInvalid before a connection is
// made: a store never puts its tables there. (The DSN names no server, so
// an accepted name fails with ErrStorage instead and writes nothing.)
func TestPostgresSystemSchemaRefused(t *testing.T) {
	ctx := context.Background()
	const nowhere = "postgres://127.0.0.1:1/x?sslmode=disable&connect_timeout=2"
	for _, name := range []string{"information_schema", "INFORMATION_SCHEMA", "Information_Schema", "pg_catalog", "PG_TOAST", "pg_temp_3", "Pg_Anything"} {
		for _, ro := range []bool{false, true} {
			_, err := hs.Open(ctx, hs.Config{DSN: nowhere, Schema: name, ReadOnly: ro})
			fixturetest.RequireKind(t, err, hs.ErrInvalid)
			require.Contains(t, err.Error(), "system schema", name)
			require.Contains(t, err.Error(), name)
		}
	}
	for _, name := range []string{"public", "hermes", "information", "pgx_store", "my_pg_schema"} {
		_, err := hs.Open(ctx, hs.Config{DSN: nowhere, Schema: name})
		fixturetest.RequireKind(t, err, hs.ErrStorage) // accepted, then no server
	}
}

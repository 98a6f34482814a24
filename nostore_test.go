package hermesstate_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
)

// TestOpenMustExist (issue 11, item 13): with Config.MustExist, Open
// refuses a path that holds no store (a mistyped path whose directories do
// not exist, a missing file, a file truncated to 0 bytes) with an error
// that is both ErrNotFound and ErrNoStore, says "no store at PATH", and
// creates nothing: no directory, no file, no sidecar, and the 0-byte file
// stays 0 bytes. ReadOnly refuses the same way. Without MustExist, Open
// still creates a missing store (Hermes' behaviour).
func TestOpenMustExist(t *testing.T) {
	ctx := fixturetest.Ctx(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for name, path := range map[string]string{
		"missing directories": filepath.Join(dir, "typo", "sub", "state.db"),
		"missing file":        filepath.Join(dir, "state.db"),
		"empty file":          empty,
	} {
		for _, ro := range []bool{false, true} {
			st, err := hs.Open(ctx, hs.Config{Path: path, MustExist: true, ReadOnly: ro})
			require.Error(t, err, "%s (read-only %v)", name, ro)
			require.Nil(t, st)
			require.ErrorIs(t, err, hs.ErrNotFound, name)
			require.ErrorIs(t, err, hs.ErrNoStore, name)
			require.Contains(t, err.Error(), "no store at "+path, name)
		}
	}
	require.NoDirExists(t, filepath.Join(dir, "typo"))
	require.Equal(t, []string{"empty.db -rw-------"}, fixturetest.Listing(t, dir), "nothing created beside the empty file")
	fi, err := os.Stat(empty)
	require.NoError(t, err)
	require.Zero(t, fi.Size(), "the 0-byte file is not initialised")

	// An existing store opens; the default still creates a missing one.
	created := filepath.Join(dir, "new", "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: created})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	st, err = hs.Open(ctx, hs.Config{Path: created, MustExist: true})
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

// TestOpenMustExistPostgres (issue 11, item 13): on PostgreSQL, MustExist
// refuses a schema that holds no store instead of creating it.
func TestOpenMustExistPostgres(t *testing.T) {
	ctx := fixturetest.Ctx(t)
	dsn, schema := pgtest.Schema(t)
	_, err := hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema, MustExist: true})
	require.ErrorIs(t, err, hs.ErrNotFound)
	require.ErrorIs(t, err, hs.ErrNoStore)
	require.Contains(t, err.Error(), "no store at ")
	require.Contains(t, err.Error(), " schema "+schema)
	require.Zero(t, pgtest.QueryInt(t, dsn, "SELECT count(*) FROM information_schema.schemata WHERE schema_name = '"+schema+"'"),
		"the schema was not created")
	st, err := hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	st, err = hs.Open(ctx, hs.Config{DSN: dsn, Schema: schema, MustExist: true})
	require.NoError(t, err)
	require.NoError(t, st.Close())
}

// TestDoctorRepairNoStore (issue 11, item 13): doctor and repair refuse a
// 0-byte file as no store (repair used to initialise it) and a missing one.
func TestDoctorRepairNoStore(t *testing.T) {
	ctx := fixturetest.Ctx(t)
	dir := t.TempDir()
	empty := filepath.Join(dir, "state.db")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	for _, path := range []string{empty, filepath.Join(dir, "missing", "state.db")} {
		_, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
		require.ErrorIs(t, err, hs.ErrNotFound)
		require.ErrorIs(t, err, hs.ErrNoStore)
		require.Contains(t, err.Error(), "no store at "+path)
		_, err = hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
		require.ErrorIs(t, err, hs.ErrNoStore)
		require.True(t, errors.Is(err, hs.ErrNotFound))
	}
	require.Equal(t, []string{"state.db -rw-------"}, fixturetest.Listing(t, dir))
	fi, err := os.Stat(empty)
	require.NoError(t, err)
	require.Zero(t, fi.Size())
}

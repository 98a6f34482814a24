package hermesstate_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

func requireHealthy(t testing.TB, r *hs.DoctorReport) {
	t.Helper()
	require.Empty(t, r.Problems(), "doctor on %s", r.Path)
	require.True(t, r.OK())
}

// TestDoctorFixturesAfterAdoption: every Hermes fixture, once adopted,
// passes doctor (quick and full) with nothing wrong.
func TestDoctorFixturesAfterAdoption(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			path := f.CopyDB(t)
			before, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
			require.NoError(t, err)
			require.False(t, before.OK(), "an unadopted fixture has pending migrations")
			require.NotEmpty(t, before.PendingMigrations)
			st, err := hs.Open(ctx, hs.Config{Path: path})
			require.NoError(t, err)
			for _, full := range []bool{false, true} {
				r, err := st.Doctor(ctx, hs.DoctorOptions{Full: full})
				require.NoError(t, err)
				requireHealthy(t, r)
				require.Empty(t, r.PendingMigrations)
				require.Equal(t, 30, r.SchemaVersion)
				require.False(t, r.WALResetBug)
				require.EqualValues(t, 31, r.Messages)
				require.EqualValues(t, 9, r.Sessions)
			}
			require.NoError(t, st.Close())
		})
	}
}

// TestJournalModeConfiguration: the configured journal mode is applied at
// open and read back; doctor reports a file in another mode than configured,
// and repair switches it when nobody else has it open.
func TestJournalModeConfiguration(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	// A new file in delete mode stays in delete mode, and doctor agrees.
	del := filepath.Join(dir, "delete.db")
	st, err := hs.Open(ctx, hs.Config{Path: del, JournalMode: hs.JournalDelete})
	require.NoError(t, err)
	require.Equal(t, "delete", st.JournalMode())
	r, err := st.Doctor(ctx, hs.DoctorOptions{})
	require.NoError(t, err)
	requireHealthy(t, r)
	require.Equal(t, "delete", r.JournalMode)
	require.NoError(t, st.Close())

	// No mode configured, file in delete: the file's own (deliberate)
	// choice is not a problem (issue 11, item 3).
	r, err = hs.Doctor(ctx, hs.Config{Path: del}, hs.DoctorOptions{})
	require.NoError(t, err)
	requireHealthy(t, r)
	require.False(t, r.JournalExplicit)
	// Configured wal, file in delete: doctor warns; Open switches it.
	r, err = hs.Doctor(ctx, hs.Config{Path: del, JournalMode: hs.JournalWAL}, hs.DoctorOptions{})
	require.NoError(t, err)
	require.True(t, r.Has("journal_mode", ""), "%+v", r.Findings)
	require.Equal(t, "wal", r.JournalConfigured)
	st, err = hs.Open(ctx, hs.Config{Path: del})
	require.NoError(t, err)
	require.Equal(t, "wal", st.JournalMode())
	require.NoError(t, st.Close())
	r, err = hs.Doctor(ctx, hs.Config{Path: del}, hs.DoctorOptions{})
	require.NoError(t, err)
	requireHealthy(t, r)

	// A WAL file is not switched back by Open (another process may use
	// it) but doctor names the mismatch and repair fixes it.
	st, err = hs.Open(ctx, hs.Config{Path: del, JournalMode: hs.JournalDelete})
	require.NoError(t, err)
	require.Equal(t, "wal", st.JournalMode())
	r, err = st.Doctor(ctx, hs.DoctorOptions{})
	require.NoError(t, err)
	require.True(t, r.Has("journal_mode", ""))
	require.NoError(t, st.Close())
	rep, err := hs.Repair(ctx, hs.Config{Path: del, JournalMode: hs.JournalDelete}, hs.RepairOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Actions)
	requireHealthy(t, rep.After)
	require.Equal(t, "delete", rep.After.JournalMode)
}

// TestDoctorMissingFile: no file is ErrNotFound, and doctor creates none.
func TestDoctorMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.db")
	_, err := hs.Doctor(context.Background(), hs.Config{Path: p}, hs.DoctorOptions{})
	require.ErrorIs(t, err, hs.ErrNotFound)
	_, statErr := os.Stat(p)
	require.True(t, os.IsNotExist(statErr))
}

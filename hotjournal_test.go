package hermesstate_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/doctor"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// requireRolledBack checks that the transaction HotJournalCopy interrupted
// left no trace and that the file kept its journal mode (delete).
func requireRolledBack(t *testing.T, path string) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	var junk, half int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'hot_journal_junk'").Scan(&junk))
	require.NoError(t, db.QueryRow("SELECT count(*) FROM sessions WHERE model = 'half-written'").Scan(&half))
	require.Zero(t, junk+half, "the interrupted transaction is rolled back")
	var mode string
	require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, "delete", mode, "the file keeps its journal mode")
}

// TestHotJournalNamedAndRolledBack (issue 20 §3): a process killed in the
// middle of a write on a delete-mode file leaves a hot -journal. doctor
// names it as an interrupted transaction (not a problem of the place, not
// damage) and writes nothing; a read says which command to run; repair
// --dry-run changes nothing; repair rolls it back and keeps the file's
// journal mode.
func TestHotJournalNamedAndRolledBack(t *testing.T) {
	ctx := context.Background()
	path := hotJournalCopy(t, t.TempDir())
	sums := fileSums(t, path)
	require.Contains(t, sums, "-journal")

	for _, full := range []bool{false, true} {
		r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{Full: full})
		require.NoError(t, err)
		require.False(t, r.OK())
		require.False(t, r.Has(doctor.CheckPlace, ""), "not a problem of the place: %+v", r.Problems())
		var named bool
		for _, f := range r.Problems() {
			require.NotEqual(t, doctor.FixRecover, f.Fix, "not damage: %+v", f)
			if f.Object == path+"-journal" {
				named = true
				require.Contains(t, f.Message, "interrupted transaction")
				require.Equal(t, doctor.FixRepair, f.Fix)
			}
		}
		require.True(t, named, "%+v", r.Problems())
	}
	require.Equal(t, sums, fileSums(t, path), "doctor writes nothing")

	_, err := hs.Open(ctx, hs.Config{Path: path, ReadOnly: true})
	require.Error(t, err)
	require.Contains(t, err.Error(), "interrupted transaction")
	require.Contains(t, err.Error(), "hermes-state --db "+path+" repair", "the advice names the file (issue 28, item 9)")

	rep, err := hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{DryRun: true})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Actions)
	require.Equal(t, sums, fileSums(t, path), "repair --dry-run writes nothing")

	rep, err = hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Actions)
	requireHealthy(t, rep.After)
	requireRolledBack(t, path)
	again, err := hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
	require.NoError(t, err)
	require.Empty(t, again.Actions)
}

// TestWritableOpenRollsBackHotJournal: the first write-capable open rolls
// an interrupted transaction back and keeps the file's journal mode
// (delete), then works.
func TestWritableOpenRollsBackHotJournal(t *testing.T) {
	ctx := context.Background()
	path := hotJournalCopy(t, t.TempDir())
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	require.Equal(t, "delete", st.JournalMode())
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	requireRolledBack(t, path)
}

// TestWritableOpenKeepsJournalMode (issue 20 §4): opening a delete-mode
// file (Hermes v30 keeps DELETE on SQLite < 3.51.3) for writing keeps its
// mode unless the caller asks for one; a new file is WAL.
func TestWritableOpenKeepsJournalMode(t *testing.T) {
	ctx := context.Background()
	var v30 *fixturetest.Fixture
	for _, f := range fixturetest.LoadFixtures(t) {
		if f.Version == 30 {
			v30 = f
		}
	}
	require.NotNil(t, v30)
	path := v30.CopyDB(t)
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	require.Equal(t, "delete", st.JournalMode())
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: strp("kept in delete mode")})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	requireJournalMode(t, path, "delete")
	_, err = os.Stat(path + "-wal")
	require.True(t, os.IsNotExist(err))
	r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
	require.NoError(t, err)
	requireHealthy(t, r)

	// Asked for: switched.
	st, err = hs.Open(ctx, hs.Config{Path: path, JournalMode: hs.JournalWAL})
	require.NoError(t, err)
	require.Equal(t, "wal", st.JournalMode())
	require.NoError(t, st.Close())
	requireJournalMode(t, path, "wal")

	// A new file: WAL.
	fresh := filepath.Join(t.TempDir(), "state.db")
	st, err = hs.Open(ctx, hs.Config{Path: fresh})
	require.NoError(t, err)
	require.Equal(t, "wal", st.JournalMode())
	require.NoError(t, st.Close())
}

func requireJournalMode(t *testing.T, path, want string) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	var mode string
	require.NoError(t, db.QueryRow("PRAGMA journal_mode").Scan(&mode))
	require.Equal(t, want, mode)
}

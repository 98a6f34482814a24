package hermesstate_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/migrations"
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
			require.NotEmpty(t, before.PendingMigrations, "an unadopted fixture has pending migrations")
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

// TestDoctorUntouchedFixtures: a file Hermes wrote, untouched, is healthy.
// doctor (quick and full) finds nothing wrong on every fixture before
// adoption: "not adopted yet" is information, PostgreSQL-only steps are not
// listed for a SQLite file, and the trigram indexes SQLite 3.40.1 wrote
// (which stop at U+0000) are recognised as consistent as written. doctor
// changes neither the file nor its journal mode, and creates nothing beside
// it.
func TestDoctorUntouchedFixtures(t *testing.T) {
	ctx := context.Background()
	pgOnly := map[string]bool{}
	for _, m := range migrations.List() {
		if m.PostgresOnly {
			pgOnly[m.ID] = true
		}
	}
	require.NotEmpty(t, pgOnly)
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			path := f.CopyDB(t)
			sum := fileSums(t, path)
			for _, full := range []bool{false, true} {
				r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{Full: full})
				require.NoError(t, err)
				requireHealthy(t, r)
				require.NotEmpty(t, r.PendingMigrations)
				for _, id := range r.PendingMigrations {
					require.False(t, pgOnly[id], "%s is a PostgreSQL step", id)
				}
				for _, fd := range r.Findings {
					require.NotContains(t, fd.Message, "0101_hermesstate_pg", "PostgreSQL steps are never listed for SQLite")
				}
				require.True(t, hasInfo(r, "migrations"), "not adopted yet is information: %+v", r.Findings)
				require.Equal(t, sum, fileSums(t, path), "doctor (full=%v) writes nothing", full)
				for _, suf := range []string{"-wal", "-shm", "-journal"} {
					_, err := os.Stat(path + suf)
					require.True(t, os.IsNotExist(err), "doctor (full=%v) created %s", full, suf)
				}
			}
		})
	}
}

// hasInfo reports whether r has an Info finding of check.
func hasInfo(r *hs.DoctorReport, check string) bool {
	for _, f := range r.Findings {
		if f.Check == check && f.Severity == hs.SeverityInfo {
			return true
		}
	}
	return false
}

// fileSums returns the sha256 of path and of its -wal and -journal, those
// present, keyed by suffix (a -shm is an index SQLite rebuilds from the
// -wal; readers of a WAL file may have to create it).
func fileSums(t testing.TB, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, suf := range []string{"", "-wal", "-journal"} {
		b, err := os.ReadFile(path + suf)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		out[suf] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return out
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
	// No mode configured: a writable open keeps the file's mode (issue 20
	// §4). Configured wal, file in delete: doctor warns; Open switches it.
	st, err = hs.Open(ctx, hs.Config{Path: del})
	require.NoError(t, err)
	require.Equal(t, "delete", st.JournalMode())
	require.NoError(t, st.Close())
	r, err = hs.Doctor(ctx, hs.Config{Path: del, JournalMode: hs.JournalWAL}, hs.DoctorOptions{})
	require.NoError(t, err)
	require.True(t, r.Has("journal_mode", ""), "%+v", r.Findings)
	require.Equal(t, "wal", r.JournalConfigured)
	st, err = hs.Open(ctx, hs.Config{Path: del, JournalMode: hs.JournalWAL})
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

// TestDoctorOlderTrigramIndexStillFindsDamage: recognising the trigram
// indexes SQLite before 3.45 wrote never hides real damage: a Hermes file
// whose trigram index also disagrees with a row without U+0000 is still an
// error, quick (inline tables) and full (external content).
func TestDoctorOlderTrigramIndexStillFindsDamage(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadFixtures(t) {
		var damage string
		switch {
		case f.Version == 30:
			// An extra index entry for a row (external content).
			damage = `INSERT INTO messages_fts_trigram(rowid, content, tool_name) SELECT id, 'ghost words', NULL FROM messages WHERE role = 'user' ORDER BY id LIMIT 1`
		case f.Version >= 11:
			// The stored text of a row changed behind the index (inline).
			damage = `UPDATE messages_fts_trigram_content SET c0 = 'ghost words' WHERE id = (SELECT min(id) FROM messages_fts_trigram_content WHERE instr(c0, char(0)) = 0)`
		default:
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			path := f.CopyDB(t)
			execRaw(t, path, damage)
			r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{Full: true})
			require.NoError(t, err)
			require.True(t, r.Has("fts", "messages_fts_trigram"), "%+v", r.Findings)
		})
	}
}

// TestRepairLeavesUntouchedFixturesAlone: repair of a Hermes file as Hermes
// left it (nothing wrong, not adopted) changes nothing: no FTS optimize,
// no adoption.
func TestRepairLeavesUntouchedFixturesAlone(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			path := f.CopyDB(t)
			sum := fileSums(t, path)
			rep, err := hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
			require.NoError(t, err)
			require.Empty(t, rep.Actions)
			require.Equal(t, sum, fileSums(t, path), "repair wrote to a healthy Hermes file")
		})
	}
}

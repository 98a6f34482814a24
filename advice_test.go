package hermesstate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/doctor"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// adviceDamages are damages beyond damages() that doctor must name with a
// fix that works: an index that disagrees with its table, another store's
// -wal beside the file, orphan rows, a free-page-heavy file.
func adviceDamages() []damage {
	return append(damages(),
		damage{name: "index_definition_swapped", fixable: true, check: "index", apply: func(t *testing.T, _ damageTarget, path string) int {
			// The reproduction: the index's definition changed
			// behind its entries (integrity_check: rows missing from it).
			execRaw(t, path, "PRAGMA writable_schema=ON",
				"UPDATE sqlite_master SET sql = 'CREATE INDEX idx_messages_session ON messages(role, timestamp)' WHERE name = 'idx_messages_session'")
			return 0
		}},
		damage{name: "orphan_messages", fixable: true, check: "foreign_keys", apply: func(t *testing.T, _ damageTarget, path string) int {
			execRaw(t, path, "PRAGMA foreign_keys=OFF",
				`INSERT INTO messages (session_id, role, content, timestamp) VALUES ('gone-session', 'user', 'orphan words', 1767000000.5)`)
			return 1
		}},
		damage{name: "foreign_wal", check: "integrity", apply: func(t *testing.T, _ damageTarget, path string) int {
			// Another store's -wal beside the file: its frames are read as
			// this file's pages.
			other := filepath.Join(t.TempDir(), "other.db")
			ctx := context.Background()
			st, err := hs.Open(ctx, hs.Config{Path: other})
			require.NoError(t, err)
			fillStore(t, st, 2, 4)
			require.NoError(t, st.Close())
			w, err := sqlitex.OpenEnv(other + "?_pragma=wal_autocheckpoint(0)")
			require.NoError(t, err)
			w.SetMaxOpenConns(1)
			_, err = w.Exec("CREATE TABLE filler (x)")
			require.NoError(t, err)
			_, err = w.Exec("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < 300) INSERT INTO filler SELECT randomblob(400) FROM r")
			require.NoError(t, err)
			_, err = w.Exec("DELETE FROM filler WHERE rowid % 3 = 0")
			require.NoError(t, err)
			b, err := os.ReadFile(other + "-wal")
			require.NoError(t, err)
			require.NoError(t, w.Close())
			require.NoError(t, os.WriteFile(path+"-wal", b, 0o600))
			return 0
		}},
	)
}

// runFix runs the command a finding advises, as the CLI would, and returns
// its error and the file doctor should examine next (recover writes a new
// one).
func runFix(t *testing.T, fix, path string) (next string, err error) {
	t.Helper()
	ctx := context.Background()
	cfg := hs.Config{Path: path}
	switch fix {
	case doctor.FixRepair:
		_, err = hs.Repair(ctx, cfg, hs.RepairOptions{})
		return path, err
	case doctor.FixRecover:
		to := filepath.Join(t.TempDir(), "recovered.db")
		_, err = hs.Recover(ctx, hs.RecoverOptions{From: path, To: to, AllowPartial: true})
		return to, err
	case doctor.FixMigrate:
		st, err := hs.Open(ctx, cfg)
		if err == nil {
			err = st.Close()
		}
		return path, err
	case doctor.FixVacuum:
		st, err := hs.Open(ctx, cfg)
		if err != nil {
			return path, err
		}
		_, err = st.Maintain(ctx, hs.MaintenanceOptions{Vacuum: true})
		if cerr := st.Close(); err == nil {
			err = cerr
		}
		return path, err
	}
	t.Fatalf("doctor advised %q, which this test does not know how to run", fix)
	return path, nil
}

// TestDoctorAdviceWorks drives the damage matrix through doctor → the
// advised command → doctor: every finding printed with "fix: X" disappears
// once X ran, or X fails and its error names the next step (recover); a
// repair that succeeds leaves integrity_check and doctor --full clean.
func TestDoctorAdviceWorks(t *testing.T) {
	ctx := context.Background()
	for _, tg := range damageTargets(t) {
		if tg.name != "built" && tg.name != "hermes-v30" && tg.name != "hermes-v21" && tg.name != "hermes-v06" {
			continue
		}
		for _, d := range adviceDamages() {
			t.Run(tg.name+"/"+d.name, func(t *testing.T) {
				path := copyTarget(t, tg.path)
				d.apply(t, tg, path)
				r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{Full: true})
				require.NoError(t, err)
				require.False(t, r.OK(), "doctor --full sees %s", d.name)
				require.True(t, r.Has(d.check, ""), "doctor names %s under %q: %+v", d.name, d.check, r.Problems())
				// Each advised command, run alone on a copy of the damaged
				// file: it makes its findings disappear, or it fails, names
				// the next step and leaves the file (and its -wal) as it was.
				// doctor and repair --dry-run write nothing, whatever the
				// damage (a -wal is neither checkpointed nor removed).
				sums := fileSums(t, path)
				_, err = hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
				require.NoError(t, err)
				_, _ = hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{DryRun: true})
				require.Equal(t, sums, fileSums(t, path), "doctor and repair --dry-run write nothing")
				for _, fix := range distinctFixes(t, r) {
					cp := copyWithSidecars(t, path)
					sums := fileSums(t, cp)
					next, err := runFix(t, fix, cp)
					if err != nil {
						require.Contains(t, err.Error(), "recover", "%s failed without naming the next step: %v", fix, err)
						require.Equal(t, sums, fileSums(t, cp), "%s failed and must not have written: %v", fix, err)
						continue
					}
					after, err := hs.Doctor(ctx, hs.Config{Path: next}, hs.DoctorOptions{Full: true})
					require.NoError(t, err)
					for _, f := range r.Problems() {
						if f.Fix == fix {
							require.False(t, sameMessage(after, f), "%q still found after %q: %+v", f.Message, fix, after.Problems())
						}
					}
				}
				for round := 0; round < 3 && !r.OK(); round++ {
					fixes := distinctFixes(t, r)
					cur := path
					failed := false
					for _, fix := range fixes {
						next, err := runFix(t, fix, cur)
						if err != nil {
							require.Contains(t, err.Error(), "recover", "%s failed without naming the next step: %v", fix, err)
							failed = true
							continue
						}
						if fix == doctor.FixRecover {
							cur = next
						}
					}
					after, err := hs.Doctor(ctx, hs.Config{Path: cur}, hs.DoctorOptions{Full: true})
					require.NoError(t, err)
					if !failed {
						for _, f := range r.Problems() {
							if f.Fix == doctor.FixRecover && cur != path {
								continue // the damaged file stays damaged; the new one is checked
							}
							require.False(t, after.Has(f.Check, f.Object) && sameMessage(after, f),
								"%q still found after %q: %+v", f.Message, f.Fix, after.Problems())
						}
					}
					r, path = after, cur
				}
				requireHealthy(t, r)
				requireIntegrityOK(t, path)
			})
		}
	}
}

// distinctFixes returns the fixes r's problems advise, each once, in the
// order of the problems; every problem must advise one.
func distinctFixes(t *testing.T, r *hs.DoctorReport) []string {
	t.Helper()
	var fixes []string
	for _, f := range r.Problems() {
		require.NotEmpty(t, f.Fix, "every problem says how to fix it: %+v", f)
		if !slices.Contains(fixes, f.Fix) {
			fixes = append(fixes, f.Fix)
		}
	}
	return fixes
}

// copyWithSidecars copies path and its -wal, -shm and -journal (those
// present) into a new directory.
func copyWithSidecars(t *testing.T, path string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "state.db")
	for _, suf := range []string{"", "-wal", "-shm", "-journal"} {
		b, err := os.ReadFile(path + suf)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(dst+suf, b, 0o600))
	}
	return dst
}

// sameMessage reports whether r holds a problem with f's check, object and
// message.
func sameMessage(r *hs.DoctorReport, f hs.Finding) bool {
	for _, g := range r.Problems() {
		if g.Check == f.Check && g.Object == f.Object && g.Message == f.Message {
			return true
		}
	}
	return false
}

// requireIntegrityOK runs PRAGMA integrity_check on path.
func requireIntegrityOK(t *testing.T, path string) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	var s string
	require.NoError(t, db.QueryRow("PRAGMA integrity_check").Scan(&s))
	require.Equal(t, "ok", s)
}

// TestRepairDryRunWritesNothing: with commits in a -wal beside the file
// (a process that stopped before checkpointing), repair --dry-run plans
// its steps without checkpointing the -wal into the file or removing it,
// and doctor (quick and full) leaves both as they were.
func TestRepairDryRunWritesNothing(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: src})
	require.NoError(t, err)
	fillStore(t, st, 2, 6)
	require.NoError(t, st.Close())
	w, err := sqlitex.OpenEnv(src + "?_pragma=wal_autocheckpoint(0)")
	require.NoError(t, err)
	w.SetMaxOpenConns(1)
	defer w.Close()
	_, err = w.Exec("UPDATE sessions SET message_count = message_count + 2")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "state.db")
	for _, suf := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suf)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(path+suf, b, 0o600))
	}
	sums := fileSums(t, path)
	require.Contains(t, sums, "-wal")
	for _, full := range []bool{false, true} {
		r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{Full: full})
		require.NoError(t, err)
		require.True(t, r.Has("counters", ""), "the counters changed in the -wal are seen: %+v", r.Problems())
	}
	require.Equal(t, sums, fileSums(t, path), "doctor writes nothing")
	rep, err := hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{DryRun: true})
	require.NoError(t, err)
	require.NotEmpty(t, rep.Actions)
	require.Equal(t, sums, fileSums(t, path), "doctor and repair --dry-run write nothing")
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestStressWithoutDBMakesItsOwnStore (issue 28, item 2): stress with no
// --db writes into a temporary store of its own, removed at the end; the
// default store ($HERMES_HOME/state.db, here a Hermes v21 file) keeps its
// bytes and nothing appears beside it. Before, the 2 x 20 test messages
// went into the default store, adopted to v30 on the way.
func TestStressWithoutDBMakesItsOwnStore(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HERMES_HOME", home)
	def := filepath.Join(home, "state.db")
	fixturetest.CopyFile(t, fixturetest.Path(t, "hermes-v21.db"), def)
	sum, listing := fixturetest.SHA256(t, def), fixturetest.Listing(t, home)

	out, err := run(t, "--json", "stress", "--procs", "2", "--appends", "20", "--search-every", "5")
	require.NoError(t, err, out)
	var rep StressReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.True(t, rep.Temporary, "stress did not say its store is temporary")
	require.Equal(t, 40, rep.Found)
	require.NotEqual(t, def, rep.DB)
	_, err = os.Stat(rep.DB)
	require.ErrorIs(t, err, os.ErrNotExist, "the temporary store %s was left behind", rep.DB)
	require.Equal(t, sum, fixturetest.SHA256(t, def), "the default store was changed")
	require.Equal(t, listing, fixturetest.Listing(t, home))

	text, err := run(t, "stress", "--procs", "1", "--appends", "2")
	require.NoError(t, err, text)
	require.Contains(t, text, "made for this run, removed at its end")
}

// TestStressRefusesAStoreInUse (issue 28, item 2): given --db, stress
// refuses a store holding sessions it did not create (exit 4, the file
// named, its bytes and its directory unchanged: it is looked at read-only);
// --beside-others writes beside them and leaves them as they were; a store
// holding only stress's own sessions is used again.
func TestStressRefusesAStoreInUse(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	fixturetest.CopyFile(t, fixturetest.Path(t, "hermes-v30.db"), db)
	sum, listing := fixturetest.SHA256(t, db), fixturetest.Listing(t, dir)
	_, stderr, code := runCLI(t, "--db", db, "stress", "--procs", "1", "--appends", "5")
	require.Equal(t, exitConflict, code, stderr)
	require.Contains(t, stderr, db+" holds ")
	require.Contains(t, stderr, "that stress did not create")
	require.Equal(t, sum, fixturetest.SHA256(t, db))
	require.Equal(t, listing, fixturetest.Listing(t, dir))

	before, err := run(t, "--db", db, "--json", "sessions", "list", "--limit", "1000")
	require.NoError(t, err)
	out, err := run(t, "--db", db, "--json", "stress", "--procs", "2", "--appends", "10", "--beside-others")
	require.NoError(t, err, out)
	var rep StressReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.False(t, rep.Temporary)
	require.Equal(t, 20, rep.Found)
	st, err := hs.Open(t.Context(), hs.Config{Path: db, ReadOnly: true})
	require.NoError(t, err)
	var ss []struct{ ID, Source string }
	require.NoError(t, json.Unmarshal([]byte(before), &ss))
	for _, s := range ss {
		got, err := st.Sessions().Get(t.Context(), s.ID)
		require.NoError(t, err, "Hermes' session %s", s.ID)
		require.Equal(t, s.Source, got.Source)
	}
	require.NoError(t, st.Close())

	own := filepath.Join(t.TempDir(), "stress.db")
	for i := 0; i < 2; i++ {
		out, err := run(t, "--db", own, "--json", "stress", "--procs", "1", "--appends", "4")
		require.NoError(t, err, "run %d: %s", i+1, out)
	}
}

// TestBenchNeverWritesAnotherStore (issue 28, item 2): bench refuses a
// SQLite --db (its phases make their own stores; exit 2) and a --store
// holding sessions the corpus does not have (exit 4), both before
// anything is opened for writing: the files keep their bytes.
func TestBenchNeverWritesAnotherStore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	fixturetest.CopyFile(t, fixturetest.Path(t, "hermes-v21.db"), db)
	sum, listing := fixturetest.SHA256(t, db), fixturetest.Listing(t, dir)
	small := []string{"--workdir", t.TempDir(), "--sessions", "5", "--per-session", "2", "--long-n", "10", "--append-n", "4",
		"--append-sessions", "1", "--reps", "1", "--warmup", "0", "--no-raw"}

	_, stderr, code := runCLI(t, append([]string{"--db", db, "bench", "--phases", "append"}, small...)...)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "never writes into --db "+db)

	_, stderr, code = runCLI(t, append([]string{"bench", "--phases", "search", "--store", db}, small...)...)
	require.Equal(t, exitConflict, code, stderr)
	require.Contains(t, stderr, db+" holds session ")
	require.Equal(t, sum, fixturetest.SHA256(t, db))
	require.Equal(t, listing, fixturetest.Listing(t, dir))
}

package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCLIDoctor(t *testing.T) {
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)

	out, err := run(t, "--db", db, "doctor")
	require.NoError(t, err, out)
	require.Contains(t, out, "nothing wrong")
	require.Contains(t, out, "journal mode    wal (the file's own: none configured, writes keep it)")
	out, err = run(t, "--db", db, "--journal-mode", "wal", "doctor")
	require.NoError(t, err, out)
	require.Contains(t, out, "journal mode    wal (configured wal)")

	out, err = run(t, "--db", db, "--json", "doctor", "--full")
	require.NoError(t, err)
	var r map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.Equal(t, "wal", r["journal_mode"])
	require.EqualValues(t, 30, r["schema_version"])
	require.Equal(t, true, r["full"])

	// Counters out of step: a warning, exit status non-zero.
	raw := openRaw(t, db)
	_, err = raw.Exec("UPDATE sessions SET message_count = message_count + 5")
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	out, err = run(t, "--db", db, "doctor")
	require.Error(t, err)
	require.NotEqual(t, 0, exitCode(err))
	require.Contains(t, out, "counters")
	require.Contains(t, out, "fix: hermes-state --db "+db+" repair")

	_, err = run(t, "--db", filepath.Join(t.TempDir(), "none.db"), "doctor")
	require.Error(t, err)
	require.Equal(t, 3, exitCode(err))
}

func TestCLIRepairRecover(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	raw := openRaw(t, db)
	_, err = raw.Exec("DROP TRIGGER messages_fts_insert")
	require.NoError(t, err)
	_, err = raw.Exec("UPDATE sessions SET message_count = 99")
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	out, err := run(t, "--db", db, "repair", "--dry-run")
	require.NoError(t, err)
	require.Contains(t, out, "planned")
	_, err = run(t, "--db", db, "doctor")
	require.Error(t, err, "a dry run changes nothing")

	out, err = run(t, "--db", db, "repair")
	require.NoError(t, err, out)
	require.Contains(t, out, "doctor: nothing wrong")
	out, err = run(t, "--db", db, "repair")
	require.NoError(t, err)
	require.Contains(t, out, "nothing to repair")

	to := filepath.Join(dir, "new.db")
	out, err = run(t, "--json", "recover", "--from", db, "--to", to)
	require.NoError(t, err, out)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, true, rep["complete"])
	_, err = run(t, "--db", to, "doctor")
	require.NoError(t, err)
	_, err = run(t, "recover", "--from", db, "--to", to)
	require.Error(t, err, "recover never overwrites")
	require.Equal(t, 4, exitCode(err))
	_, err = run(t, "recover", "--from", db)
	require.Equal(t, 2, exitCode(err))
}

func TestCLIMaintain(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	_, err := run(t, "--db", db, "demo")
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		out, err := run(t, "--db", db, "maintain", "--vacuum", "--prune-days", "90", "--backup-dir", filepath.Join(dir, "b"), "--keep", "2")
		require.NoError(t, err, out)
		require.Contains(t, out, "backup")
		require.Contains(t, out, "pruned     0 sessions")
	}
	left, _ := filepath.Glob(filepath.Join(dir, "b", "state-*.db"))
	require.Len(t, left, 2)
	out, err := run(t, "--db", db, "--json", "maintain")
	require.NoError(t, err)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, true, rep["checkpointed"])
}

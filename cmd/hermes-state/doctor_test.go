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
	require.Contains(t, out, "fix: hermes-state repair")

	_, err = run(t, "--db", filepath.Join(t.TempDir(), "none.db"), "doctor")
	require.Error(t, err)
	require.Equal(t, 3, exitCode(err))
}

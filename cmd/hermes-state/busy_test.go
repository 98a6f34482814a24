package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// python3 returns the python3 executable, skipping t without it (failing
// under CI).
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing: the Hermes side of this test runs through its sqlite3")
		}
		t.Skip("python3 is missing: install it to run the Hermes side of this test")
	}
	return py
}

// holdWriteLock starts a Python process (Hermes' SQLite) that opens path,
// begins a write transaction (BEGIN IMMEDIATE, one INSERT into
// state_meta) and holds it until the returned release is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	cmd := exec.Command(python3(t), "-c", `
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT OR REPLACE INTO state_meta (key, value) VALUES ('busy_test', '1')")
print("locked", flush=True)
sys.stdin.read()
db.execute("ROLLBACK")
`, path)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		_ = in.Close()
		_, _ = io.Copy(io.Discard, out)
		require.NoError(t, cmd.Wait())
	}
	t.Cleanup(release)
	return release
}

// TestDoctorBusyIsANote (issue 28, item 8): while another process (Python's
// SQLite, as Hermes) holds the write lock, doctor --full cannot run FTS5's
// integrity-check (SQLite runs it as a write): that is a note saying to run
// again when the file is idle, exit 0, never an ERROR with "fix: repair",
// and never "nothing wrong" either; repair has nothing to fix (exit 0) and
// says the same; fts check, which can only answer by running the check,
// exits 5 (busy) saying so. Once the lock is released, doctor says nothing
// wrong. Before, doctor reported "cannot be checked: locked by another
// process" as an ERROR advising repair, and repair then exited 1.
func TestDoctorBusyIsANote(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	_, stderr, code := runCLI(t, "--db", db, "demo")
	require.Equal(t, exitOK, code, stderr)
	release := holdWriteLock(t, db)

	out, stderr, code := runCLI(t, "--db", db, "doctor", "--full")
	require.Equal(t, exitOK, code, "doctor --full while busy: %s%s", out, stderr)
	require.Contains(t, out, "could not run: another process kept the file locked (busy, not damage)")
	require.Contains(t, out, "again when the file is idle")
	require.NotContains(t, out, "ERROR")
	require.NotContains(t, out, "nothing wrong")

	jout, _, code := runCLI(t, "--db", db, "--json", "doctor", "--full")
	require.Equal(t, exitOK, code)
	var rep struct {
		Unchecked []string
		Findings  []struct{ Severity, Message, Fix string }
	}
	require.NoError(t, json.Unmarshal([]byte(jout), &rep))
	require.NotEmpty(t, rep.Unchecked)
	for _, f := range rep.Findings {
		require.Equal(t, "info", f.Severity, "%s", f.Message)
	}

	out, stderr, code = runCLI(t, "--db", db, "repair")
	require.Equal(t, exitOK, code, "repair while busy: %s%s", out, stderr)
	require.Contains(t, out, "again when the file is idle")

	_, stderr, code = runCLI(t, "--db", db, "fts", "check")
	require.Equal(t, exitBusy, code, stderr)
	require.Contains(t, stderr, "again when the file is idle")

	release()
	out, stderr, code = runCLI(t, "--db", db, "doctor", "--full")
	require.Equal(t, exitOK, code, stderr)
	require.True(t, strings.Contains(out, "nothing wrong"), out)
}

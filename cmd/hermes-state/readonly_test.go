package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// fixtureSessionIDs returns the session ids Hermes listed for a fixture.
func fixtureSessionIDs(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(fixturetest.Path(t, strings.TrimSuffix(name, ".db")+".expected.json"))
	require.NoError(t, err)
	var exp struct {
		Sessions map[string]any `json:"sessions"`
	}
	require.NoError(t, json.Unmarshal(b, &exp))
	var ids []string
	for id := range exp.Sessions {
		ids = append(ids, id)
	}
	require.NotEmpty(t, ids)
	return ids
}

// journalByte returns byte 18 of the SQLite header: 1 rollback journal, 2 WAL.
func journalByte(t *testing.T, path string) byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b := make([]byte, 100)
	_, err = f.ReadAt(b, 0)
	require.NoError(t, err)
	return b[18]
}

// readCommands are the commands that only read, with a session id.
func readCommands(id, backupDir string) [][]string {
	return [][]string{
		{"sessions", "list"}, {"--json", "sessions", "list"}, {"sessions", "show", id}, {"--json", "sessions", "show", id, "--conversation"},
		{"sessions", "title", id}, {"sessions", "lineage", id}, {"messages", id}, {"--json", "messages", id},
		{"search", "kubernetes"}, {"search", "桂林"}, {"--json", "search", "deploy*", "--sort", "newest"},
		{"export"}, {"export", "--format", "md"}, {"stats"}, {"doctor"}, {"doctor", "--full"},
		{"backup", filepath.Join(backupDir, "b.db")},
	}
}

// TestCLIReadCommandsChangeNothing (issue 11, item 3): every read command
// (list, show, messages, search, export, stats, lineage, title without a
// new title, doctor, backup) leaves the file byte for byte as it was: no
// migration (a Hermes v21 file stays v21), no switch of its journal mode (a
// delete-mode file stays in delete mode), no chmod (0640 stays 0640), and
// nothing created or removed beside the file (a WAL-mode one included,
// issue 20). A Hermes file not upgraded yet is read as it is: every read
// command answers (only doctor may report problems).
func TestCLIReadCommandsChangeNothing(t *testing.T) {
	for _, name := range []string{"hermes-v21.db", "hermes-v30.db", "adopted-delete"} {
		t.Run(name, func(t *testing.T) {
			var path string
			var ids []string
			if name == "adopted-delete" {
				path = filepath.Join(t.TempDir(), "state.db")
				_, err := run(t, "--db", path, "--journal-mode", "delete", "demo")
				require.NoError(t, err)
				out, err := run(t, "--db", path, "--json", "sessions", "list")
				require.NoError(t, err)
				var ss []map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &ss))
				ids = []string{ss[0]["id"].(string)}
			} else {
				path = fixturetest.Copy(t, name)
				ids = fixtureSessionIDs(t, name)
			}
			require.NoError(t, os.Chmod(path, 0o640))
			dir := filepath.Dir(path)
			hash, mode, journal := fixturetest.SHA256(t, path), journalByte(t, path), fixturetest.Listing(t, dir)
			worked := 0
			for _, args := range readCommands(ids[0], t.TempDir()) {
				out, err := run(t, append([]string{"--db", path}, args...)...)
				if err != nil {
					msg := errText(err)
					require.Truef(t, args[0] == "doctor" && strings.Contains(msg, "problem"), "%v: %s", args, msg)
				} else {
					worked++
					_ = out
				}
				require.Equal(t, hash, fixturetest.SHA256(t, path), "%v changed the file", args)
			}
			require.Greater(t, worked, 5, "most read commands work")
			require.Equal(t, mode, journalByte(t, path), "the journal mode was switched")
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o640), st.Mode().Perm(), "the file was chmod-ed")
			require.Equal(t, journal, fixturetest.Listing(t, dir), "files appeared or vanished beside the file")
		})
	}
}

// TestCLIJournalModeRespected (issue 11, item 3): --journal-mode delete is
// kept by commands that write, and doctor does not call a file's own
// journal mode a problem when none is configured.
func TestCLIJournalModeRespected(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", path, "--journal-mode", "delete", "demo")
	require.NoError(t, err)
	require.EqualValues(t, 1, journalByte(t, path))
	out, err := run(t, "--db", path, "--json", "sessions", "list")
	require.NoError(t, err)
	var ss []map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &ss))
	id := ss[0]["id"].(string)
	_, err = run(t, "--db", path, "--journal-mode", "delete", "sessions", "title", id, "kept in delete mode")
	require.NoError(t, err)
	require.EqualValues(t, 1, journalByte(t, path), "a write with --journal-mode delete switched the file to WAL")
	_, err = run(t, "--db", path, "doctor")
	require.NoError(t, err, "doctor calls the file's own journal mode a problem")
	_, err = run(t, "--db", path, "--journal-mode", "delete", "doctor")
	require.NoError(t, err)
	_, err = run(t, "--db", path, "--journal-mode", "nope", "sessions", "list")
	require.ErrorIs(t, err, hs.ErrInvalid)
}

// TestCLIReadCommandsOnReadOnlyMount (issue 11, item 3): on a read-only
// mount (or directory and file) every read command works as it does on a
// writable one, in WAL mode too, where SQLite cannot create the -shm.
func TestCLIReadCommandsOnReadOnlyMount(t *testing.T) {
	for _, name := range []string{"hermes-v21.db", "hermes-v30.db", "adopted-wal", "adopted-delete"} {
		t.Run(name, func(t *testing.T) {
			var path string
			var ids []string
			if strings.HasPrefix(name, "adopted") {
				path = filepath.Join(t.TempDir(), "state.db")
				mode := strings.TrimPrefix(name, "adopted-")
				_, err := run(t, "--db", path, "--journal-mode", mode, "demo")
				require.NoError(t, err)
				out, err := run(t, "--db", path, "--json", "sessions", "list")
				require.NoError(t, err)
				var ss []map[string]any
				require.NoError(t, json.Unmarshal([]byte(out), &ss))
				ids = []string{ss[0]["id"].(string)}
			} else {
				path = fixturetest.Copy(t, name)
				ids = fixtureSessionIDs(t, name)
			}
			hash := fixturetest.SHA256(t, path)
			fixturetest.ReadOnlyDir(t, filepath.Dir(path))
			backups := t.TempDir()
			for _, args := range readCommands(ids[0], backups) {
				_, err := run(t, append([]string{"--db", path}, args...)...)
				if err != nil {
					msg := errText(err)
					require.Truef(t, args[0] == "doctor" && strings.Contains(msg, "problem"), "%v on a read-only mount: %s", args, msg)
				}
			}
			require.Equal(t, hash, fixturetest.SHA256(t, path))
		})
	}
}

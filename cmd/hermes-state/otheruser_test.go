package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// asNobody returns a function that runs the CLI (this test binary, copied
// where any user may run it) as uid/gid 65534 with no supplementary
// groups, the way an unprivileged user would. It skips t when the test
// does not run as root (only root may switch users) or setpriv is missing.
func asNobody(t *testing.T) func(args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running the CLI as another user needs root (setpriv --reuid=65534); this test runs as uid", os.Geteuid())
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) is missing: cannot run the CLI as an unprivileged user")
	}
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "hermes-state")
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, src.Close())
	require.NoError(t, dst.Close())
	return func(args ...string) (string, string, int) {
		cmd := exec.Command(setpriv, append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", bin}, args...)...)
		cmd.Env = []string{runMainEnv + "=1", "HOME=/nonexistent", "PATH=/usr/bin:/bin"}
		cmd.Dir = "/"
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("running %v as uid 65534: %v", args, err)
		}
		return out.String(), errOut.String(), code
	}
}

// placeFile copies the fixture name into a new directory with dirMode, as
// fileMode, both owned by root, and returns its path.
func placeFile(t *testing.T, name string, fileMode, dirMode os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	path := filepath.Join(dir, "state.db")
	fixturetest.CopyFile(t, fixturetest.Path(t, name), path)
	require.NoError(t, os.Chmod(path, fileMode))
	require.NoError(t, os.Chmod(dir, dirMode))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	return path
}

// TestCLIReadsAsAnotherUser (issue 20, section 3): an unprivileged user
// (not root, so file modes apply) reads a Hermes file in a directory it
// may not write, and a 0444 file: every read command answers (a WAL-mode
// file without its -shm used to fail with SQLITE_READONLY for such a
// user, while root on a read-only mount met SQLITE_CANTOPEN, the only case
// the immutable fallback knew), and the file stays byte for byte as it
// was. Where the user may write the directory but not the file, SQLite's
// read-only reader of a WAL-mode file makes -wal/-shm it cannot remove;
// everywhere else nothing is left beside the file.
func TestCLIReadsAsAnotherUser(t *testing.T) {
	nobody := asNobody(t)
	for _, c := range []struct {
		name              string
		fixture           string
		fileMode, dirMode os.FileMode
		leavesSideFiles   bool
	}{
		{"wal file in a read-only directory", "hermes-v21.db", 0o644, 0o555, false},
		{"wal file 0444 in a read-only directory", "hermes-v21.db", 0o444, 0o555, false},
		{"delete-mode file 0444 in a read-only directory", "hermes-v30.db", 0o444, 0o555, false},
		{"delete-mode file 0444 in a writable directory", "hermes-v30.db", 0o444, 0o777, false},
		{"wal file 0444 in a writable directory", "hermes-v21.db", 0o444, 0o777, true},
		{"oldest wal file in a read-only directory", "hermes-v01.db", 0o644, 0o555, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := placeFile(t, c.fixture, c.fileMode, c.dirMode)
			hash, listing := fixturetest.SHA256(t, path), fixturetest.Listing(t, filepath.Dir(path))
			out, errOut, code := nobody("--db", path, "--json", "sessions", "list")
			require.Equalf(t, 0, code, "sessions list as uid 65534: %s", errOut)
			var ss []map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &ss))
			require.NotEmpty(t, ss)
			id := ss[0]["id"].(string)
			for _, args := range [][]string{
				{"search", "docker"}, {"--json", "search", "deploy*"}, {"messages", "20260105_091500_a1b2c3"},
				{"sessions", "show", id, "--conversation"}, {"sessions", "lineage", id}, {"export"}, {"stats"},
			} {
				out, errOut, code := nobody(append([]string{"--db", path}, args...)...)
				require.Equalf(t, 0, code, "%v as uid 65534: %s", args, errOut)
				require.NotEmpty(t, strings.TrimSpace(out), "%v printed nothing", args)
				require.NotContains(t, out, "no messages match", "%v", args)
			}
			require.Equal(t, hash, fixturetest.SHA256(t, path), "a read changed the file")
			after := fixturetest.Listing(t, filepath.Dir(path))
			if c.leavesSideFiles {
				require.Subset(t, after, listing)
				return
			}
			require.Equal(t, listing, after, "files appeared beside the file")
		})
	}
}

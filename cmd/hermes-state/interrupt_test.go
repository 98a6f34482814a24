package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// holdsFile reports whether process pid has path open (Linux: /proc).
func holdsFile(pid int, path string) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == path {
			return true
		}
	}
	return false
}

// TestCLIInterruptedExitsNonZero (issue 20, section 1): a command stopped
// by SIGINT exits 130 (SIGTERM: 143) and says it was interrupted; it never
// exits 0 with an empty answer. The search waits on a file another
// process holds locked, and the signal comes once the CLI has the file
// open.
func TestCLIInterruptedExitsNonZero(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc to see when the CLI has the file open (Linux only)")
	}
	db := filepath.Join(t.TempDir(), "state.db")
	_, err := run(t, "--db", db, "--journal-mode", "delete", "demo")
	require.NoError(t, err)
	abs, err := filepath.Abs(db)
	require.NoError(t, err)
	for _, c := range []struct {
		sig  syscall.Signal
		code int
		args []string
	}{
		{syscall.SIGINT, 130, []string{"search", "kubernetes OR docker"}},
		{syscall.SIGINT, 130, []string{"--json", "search", "deploy*"}},
		{syscall.SIGTERM, 143, []string{"sessions", "list"}},
	} {
		raw := fixturetest.Raw(t, db)
		conn, err := raw.Conn(context.Background())
		require.NoError(t, err)
		_, err = conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE")
		require.NoError(t, err)
		cmd := cliCommand(t, append([]string{"--db", db}, c.args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Start())
		deadline := time.Now().Add(30 * time.Second)
		for !holdsFile(cmd.Process.Pid, abs) {
			require.True(t, time.Now().Before(deadline), "the CLI never opened %s", abs)
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		sent := time.Now()
		require.NoError(t, cmd.Process.Signal(c.sig))
		err = cmd.Wait()
		took := time.Since(sent)
		var ee *exec.ExitError
		require.Truef(t, errors.As(err, &ee), "%v: exited 0 after %s: stdout %q stderr %q", c.args, c.sig, stdout.String(), stderr.String())
		require.Equalf(t, c.code, ee.ExitCode(), "%v after %s: stderr %q", c.args, c.sig, stderr.String())
		require.Contains(t, stderr.String(), "interrupted")
		require.NotContains(t, stdout.String(), "no messages match")
		require.Less(t, took, 3*time.Second, "the command did not stop at once")
		_, err = conn.ExecContext(context.Background(), "ROLLBACK")
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		t.Logf("%v: %s -> exit %d in %s: %s", c.args, c.sig, ee.ExitCode(), took.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
	}
}

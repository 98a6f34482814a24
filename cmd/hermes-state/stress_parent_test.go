package main

import (
	"bytes"
	"context"
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

	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// workerPIDs returns the pids of running stress workers whose command line
// names db (Linux /proc).
func workerPIDs(t *testing.T, db string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(bytes.TrimRight(b, "\x00")), "\x00")
		worker, mine := false, false
		for _, a := range args {
			worker = worker || a == "stress-worker"
			mine = mine || a == db
		}
		if !worker || !mine {
			continue
		}
		// A zombie (exited, not yet reaped) is not running.
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 0 && f[0] == "Z" {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// TestStressWorkersDieWithParent (issue 11, item 14): when the stress
// process is killed (SIGKILL, no chance to clean up), its workers stop and
// exit instead of appending on their own. A worker that is writing its
// output dies of SIGPIPE anyway; the test holds the write lock so that the
// workers sit in their write retries (60 s budget), where only the
// parent-death signal or the stdin watch stops them, and checks that no
// append committed after the parent died.
func TestStressWorkersDieWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finds the worker processes through /proc (Linux)")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "state.db")
	parent := exec.Command(os.Args[0], "--db", db, "stress", "--procs", "2", "--appends", "10000000", "--search-every", "0")
	parent.Env = append(os.Environ(), runMainEnv+"=1")
	require.NoError(t, parent.Start())
	t.Cleanup(func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
		for _, pid := range workerPIDs(t, db) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	raw, err := sqlitex.OpenEnv(db + "?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer raw.Close()
	// Wait until both workers run and have appended.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var n int
		_ = raw.QueryRow("SELECT count(*) FROM messages").Scan(&n)
		if n > 20 && len(workerPIDs(t, db)) == 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the workers did not start")
		time.Sleep(50 * time.Millisecond)
	}
	ctx := context.Background()
	lock, err := raw.Conn(ctx)
	require.NoError(t, err)
	defer lock.Close()
	_, err = lock.ExecContext(ctx, "BEGIN IMMEDIATE")
	require.NoError(t, err)
	var before int
	require.NoError(t, lock.QueryRowContext(ctx, "SELECT count(*) FROM messages").Scan(&before))
	time.Sleep(200 * time.Millisecond) // the workers are now in their write retries
	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()
	deadline = time.Now().Add(20 * time.Second)
	for len(workerPIDs(t, db)) > 0 {
		require.True(t, time.Now().Before(deadline), "stress workers %v kept running (retrying their appends) after their parent was killed", workerPIDs(t, db))
		time.Sleep(50 * time.Millisecond)
	}
	_, err = lock.ExecContext(ctx, "ROLLBACK")
	require.NoError(t, err)
	var after int
	require.NoError(t, lock.QueryRowContext(ctx, "SELECT count(*) FROM messages").Scan(&after))
	require.Equal(t, before, after, "appends committed after the parent died")
}

package hermesstate_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// bulkyStore returns an open store holding about 2 MiB of messages.
func bulkyStore(t *testing.T) *hs.Store {
	t.Helper()
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	var batch []repo.MessageInput
	for i := 0; i < 400; i++ {
		batch = append(batch, repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("message %d %s", i, strings.Repeat("lorem ipsum ", 400)))})
	}
	_, err = st.Messages().AppendBatch(ctx, s.ID, batch)
	require.NoError(t, err)
	return st
}

// TestBackupOnFullDiskLeavesNothing (issue 11, item 5): a backup that runs
// out of disk leaves no partial file (nor a -journal) under its name or
// any other; a backup that succeeds is a private (0600), complete file.
func TestBackupOnFullDiskLeavesNothing(t *testing.T) {
	ctx := context.Background()
	st := bulkyStore(t)
	dir := fixturetest.SmallDisk(t, 512<<10)
	target := filepath.Join(dir, "backup.db")
	err := st.Cleanup().Backup(ctx, target)
	fixturetest.RequireKind(t, err, hs.ErrStorage)
	require.Empty(t, fixturetest.Listing(t, dir), "a failed backup left files")

	old := syscall.Umask(0)
	defer syscall.Umask(old)
	ok := filepath.Join(t.TempDir(), "backup.db")
	require.NoError(t, st.Cleanup().Backup(ctx, ok))
	fi, err := os.Stat(ok)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, []string{"backup.db -rw-------"}, fixturetest.Listing(t, filepath.Dir(ok)))
	fixturetest.RequireKind(t, st.Cleanup().Backup(ctx, ok), hs.ErrConflict)
}

// TestMaintainRotationCountsOnlyCompleteBackups (issue 11, item 5): a
// partial backup (a killed or disk-full run) in --backup-dir is not counted
// as a backup, so rotation never removes good backups in its favour.
func TestMaintainRotationCountsOnlyCompleteBackups(t *testing.T) {
	ctx := context.Background()
	st := bulkyStore(t)
	dir := t.TempDir()
	var good []string
	for i := 0; i < 2; i++ {
		rep, err := st.Maintain(ctx, hs.MaintenanceOptions{BackupDir: dir, BackupKeep: 2})
		require.NoError(t, err)
		good = append(good, rep.Backup)
	}
	// A partial file named like a backup, newer than both.
	b, err := os.ReadFile(good[1])
	require.NoError(t, err)
	partial := filepath.Join(dir, "state-29990101-000000-000000000.db")
	require.NoError(t, os.WriteFile(partial, b[:len(b)/2], 0o600))
	rep, err := st.Maintain(ctx, hs.MaintenanceOptions{BackupDir: dir, BackupKeep: 2})
	require.NoError(t, err)
	require.Equal(t, []string{good[0]}, rep.BackupsRemoved, "rotation removed a good backup or counted the partial one")
	for _, p := range []string{good[1], rep.Backup} {
		_, err := os.Stat(p)
		require.NoError(t, err, "good backup %s removed", p)
	}
}

// TestOpenFailureLeavesNoFile (issue 11, item 5): when Open creates a new
// store and fails (here: the disk is full), it removes the file it
// created instead of leaving a 0-byte or partial store behind.
func TestOpenFailureLeavesNoFile(t *testing.T) {
	dir := fixturetest.SmallDisk(t, 24<<10)
	path := filepath.Join(dir, "state.db")
	_, err := hs.Open(context.Background(), hs.Config{Path: path})
	require.Error(t, err)
	require.Empty(t, fixturetest.Listing(t, dir), "a failed Open left files")
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	require.NoError(t, c.Run())
	return c.Process.Pid
}

// TestSnapshotLeavesNoPlaintextInTmp (issue 11, item 5): OpenSnapshot (the
// copy command's private copy of a SQLite store) removes the snapshots of
// processes that died before cleaning up, and its own on cleanup.
func TestSnapshotLeavesNoPlaintextInTmp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	stale := filepath.Join(tmp, "hermesstate-snapshot-"+strconv.Itoa(deadPID(t))+"-123456")
	require.NoError(t, os.Mkdir(stale, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(stale, "state.db"), []byte("a killed copy's plaintext"), 0o600))
	src := fixturetest.Copy(t, "hermes-v30.db")
	st, cleanup, err := hs.OpenSnapshot(context.Background(), src, hs.Config{})
	require.NoError(t, err)
	_, err = os.Stat(stale)
	require.True(t, os.IsNotExist(err), "the snapshot of a dead process is still in %s", tmp)
	n, err := st.Sessions().Count(context.Background(), "")
	require.NoError(t, err)
	require.EqualValues(t, 9, n)
	cleanup()
	require.Empty(t, fixturetest.Listing(t, tmp))
}

// TestRecoverNeverShowsAPartialFile (issue 11, item 5): while recover
// copies, the new file does not exist under its final name (a kill leaves
// nothing there); it appears, complete and 0600, at the end.
func TestRecoverNeverShowsAPartialFile(t *testing.T) {
	src := fixturetest.Copy(t, "hermes-v21.db")
	to := filepath.Join(t.TempDir(), "new.db")
	seen := 0
	rep, err := hs.Recover(context.Background(), hs.RecoverOptions{From: src, To: to, Progress: func(step string, done, total int64) {
		seen++
		_, err := os.Stat(to)
		require.Truef(t, os.IsNotExist(err), "%s exists while recover is at %s", to, step)
	}})
	require.NoError(t, err)
	require.True(t, rep.Complete)
	require.Greater(t, seen, 0)
	fi, err := os.Stat(to)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, []string{"new.db -rw-------"}, fixturetest.Listing(t, filepath.Dir(to)))
}

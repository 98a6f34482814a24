package hermesstate_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/doctor"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// hotJournalCopy returns a copy, in dir, of a healthy rollback-journal
// store taken in the middle of a write transaction (a hot -journal).
func hotJournalCopy(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: src, JournalMode: hs.JournalDelete})
	require.NoError(t, err)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s1", Source: "cli"})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	return fixturetest.HotJournalCopy(t, src, dir)
}

// walCopyWithoutShm returns a copy, in dir, of a healthy WAL store whose
// last commits are still in its -wal, without the -shm (as after a copy or
// a reboot of a tmpfs): opening it means building a new -shm.
func walCopyWithoutShm(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: src, CheckpointEvery: -1})
	require.NoError(t, err)
	defer st.Close()
	text := strings.Repeat("x", 3000)
	for i := 0; i < 300; i++ {
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: &text})
		require.NoError(t, err)
	}
	dst := filepath.Join(dir, "state.db")
	fixturetest.CopyFile(t, src, dst)
	fixturetest.CopyFile(t, src+"-wal", dst+"-wal")
	return dst
}

// requirePlaceNotDamage checks what doctor and repair say of a healthy
// file that cannot be opened or written where it lies (issue 11, item 8):
// doctor reports the place's problem and why (not page-level damage, not
// `recover`), repair refuses with ErrStorage (not ErrCorrupt, exit 6) and
// changes nothing.
func requirePlaceNotDamage(t *testing.T, path string, why ...string) {
	t.Helper()
	ctx := context.Background()
	sum := fixturetest.SHA256(t, path)
	r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
	require.NoError(t, err)
	require.False(t, r.OK())
	require.False(t, r.Has(doctor.CheckIntegrity, ""), "no damage reported: %+v", r.Findings)
	require.True(t, r.Has(doctor.CheckPlace, ""), "%+v", r.Findings)
	for _, f := range r.Problems() {
		require.NotEqual(t, doctor.FixRecover, f.Fix, "%+v", f)
		if f.Check == doctor.CheckPlace {
			for _, w := range why {
				require.Contains(t, f.Message, w)
			}
			require.NotEmpty(t, f.Fix)
		}
	}
	rep, err := hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
	require.ErrorIs(t, err, hs.ErrStorage)
	require.NotErrorIs(t, err, hs.ErrCorrupt)
	require.NotContains(t, err.Error(), "page-level damage")
	for _, w := range why {
		require.Contains(t, err.Error(), w)
	}
	require.NotNil(t, rep)
	require.Empty(t, rep.Actions)
	require.Equal(t, sum, fixturetest.SHA256(t, path), "nothing changed")
}

// TestDoctorHotJournalOnReadOnlyMount: a healthy file whose interrupted
// transaction must be rolled back, on a read-only mount, is a place
// problem (read-only file system), not damage.
func TestDoctorHotJournalOnReadOnlyMount(t *testing.T) {
	dir := t.TempDir()
	path := hotJournalCopy(t, dir)
	fixturetest.ReadOnlyDir(t, dir)
	requirePlaceNotDamage(t, path, "read-only file system")
}

// TestDoctorShmOnFullDisk: a healthy WAL file whose -shm cannot be made on
// a full disk is a place problem (disk full), not damage.
func TestDoctorShmOnFullDisk(t *testing.T) {
	dir := fixturetest.SmallDisk(t, 8<<20)
	path := walCopyWithoutShm(t, dir)
	fillDisk(t, dir)
	requirePlaceNotDamage(t, path, "disk full")
}

// TestRepairHealthyFileOnReadOnlyMount: repair of a healthy file on a
// read-only mount does nothing and says so (it used to merge FTS segments
// and fail half-way); doctor notes that the place cannot be written.
func TestRepairHealthyFileOnReadOnlyMount(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: fixturetest.Ptr("hello world")})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())
	fixturetest.ReadOnlyDir(t, dir)
	sum := fixturetest.SHA256(t, path)
	r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
	require.NoError(t, err)
	require.True(t, r.OK(), "%+v", r.Findings)
	var note string
	for _, f := range r.Findings {
		if f.Check == doctor.CheckPlace {
			note = f.Message
		}
	}
	require.Contains(t, note, "read-only file system")
	rep, err := hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
	require.NoError(t, err)
	require.Empty(t, rep.Actions)
	require.Equal(t, sum, fixturetest.SHA256(t, path))
}

package hermesstate_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/repo"
)

// sqlText matches SQL in a message (which must never carry any).
var sqlText = regexp.MustCompile(`(?i)\b(select|insert into|update \w+ set|delete from|create (table|index|trigger)|pragma)\b`)

// requireCause checks a storage failure's message (issue 11, item 7): the
// kind is kept, the message names the cause in words a user acts on, and
// it is not the bare "storage failure" and holds no SQL text.
func requireCause(t *testing.T, err error, kind error, words ...string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIs(t, err, kind)
	msg := err.Error()
	t.Log(msg)
	for _, w := range words {
		require.Contains(t, msg, w)
	}
	require.NotContains(t, msg, "storage failure")
	require.NotRegexp(t, sqlText, msg)
}

// fillDisk writes a file into dir until the filesystem is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	require.NoError(t, err)
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
}

// TestStorageErrorDiskFull: a write on a full disk says "disk full"
// (ErrStorage) instead of "storage failure".
func TestStorageErrorDiskFull(t *testing.T) {
	ctx := context.Background()
	dir := fixturetest.SmallDisk(t, 4<<20)
	st, err := hs.Open(ctx, hs.Config{Path: filepath.Join(dir, "state.db"), CheckpointEvery: -1})
	require.NoError(t, err)
	defer st.Close()
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	fillDisk(t, dir)
	text := strings.Repeat("a full disk refuses this message ", 8000)
	for i := 0; i < 50 && err == nil; i++ {
		_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: &text})
	}
	requireCause(t, err, hs.ErrStorage, "disk full")
}

// TestCreateOnFullDiskLeavesNothing: a store that cannot be created whole
// on a full disk fails with "disk full" and leaves nothing under its name.
// It used to publish the file without the commits still in its -wal (the
// checkpoint at close had failed), which the next open called damaged.
func TestCreateOnFullDiskLeavesNothing(t *testing.T) {
	ctx := context.Background()
	dir := fixturetest.SmallDisk(t, 400<<10)
	path := filepath.Join(dir, "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	if err == nil {
		st.Close()
	}
	requireCause(t, err, hs.ErrStorage, "cannot create "+path, "disk full")
	_, serr := os.Stat(path)
	require.True(t, errors.Is(serr, fs.ErrNotExist), "nothing under the final name: %v", serr)
}

// TestStorageErrorReadOnlyMount: a writable open of a store on a read-only
// mount names the place's problem ("read-only file system"), for a WAL
// file and a rollback-journal one; the open error always says why.
func TestStorageErrorReadOnlyMount(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []hs.JournalMode{hs.JournalWAL, hs.JournalDelete} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "state.db")
			st, err := hs.Open(ctx, hs.Config{Path: path, JournalMode: mode})
			require.NoError(t, err)
			_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s1", Source: "cli"})
			require.NoError(t, err)
			require.NoError(t, st.Close())
			fixturetest.ReadOnlyDir(t, dir)
			st, err = hs.Open(ctx, hs.Config{Path: path, JournalMode: mode})
			if err != nil {
				requireCause(t, err, hs.ErrStorage, "cannot open "+path+": ", "read-only file system")
				return
			}
			// Opened (the rollback-journal file needs no -shm): the write
			// says why it cannot be done.
			defer st.Close()
			_, err = st.Titles().Set(ctx, "s1", "a title")
			requireCause(t, err, hs.ErrStorage, "read-only file system")
		})
	}
}

// TestStorageErrorCannotOpen: an open that fails says why ("is a
// directory"), naming the path; a directory is refused before SQLite sees
// it, as invalid input (issue 28, item 1).
func TestStorageErrorCannotOpen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "state.db")
	require.NoError(t, os.Mkdir(dir, 0o700))
	_, err := hs.Open(ctx, hs.Config{Path: dir})
	requireCause(t, err, hs.ErrInvalid, dir+" is a directory")
	require.ErrorIs(t, err, hs.ErrNotRegularFile)
}

// TestStorageErrorIO: a read that meets a disk I/O error (here the -wal
// cut short under an open store) says "disk I/O error" and what kind.
func TestStorageErrorIO(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path, CheckpointEvery: -1})
	require.NoError(t, err)
	defer st.Close()
	for i := 0; i < 50; i++ {
		_, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
	}
	require.NoError(t, os.Truncate(path+"-wal", 0))
	_, err = st.Sessions().Count(ctx, "")
	requireCause(t, err, hs.ErrStorage, "disk I/O error", "truncated")
}

// TestStorageErrorPostgresTerminated: a write whose PostgreSQL connection
// was terminated (pg_terminate_backend) says "database server closed the
// connection".
func TestStorageErrorPostgresTerminated(t *testing.T) {
	ctx := context.Background()
	dsn, schema := pgtest.Schema(t)
	app := pgtest.NewSchemaName("hs_term")
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	st, err := hs.Open(ctx, hs.Config{DSN: dsn + sep + "application_name=" + app, Schema: schema, MaxOpenConns: 1})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s1", Source: "cli"})
	require.NoError(t, err)
	require.EqualValues(t, 1, pgtest.QueryInt(t, dsn, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '"+app+"'"))
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s2", Source: "cli"})
	requireCause(t, err, hs.ErrStorage, "database server closed the connection")
	// The pool reconnects: the next write works.
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s3", Source: "cli"})
	require.NoError(t, err)
}

// TestStorageErrorPostgresUnreachable: an open that cannot reach the
// server says why ("connection refused").
func TestStorageErrorPostgresUnreachable(t *testing.T) {
	_, err := hs.Open(context.Background(), hs.Config{DSN: "postgres://127.0.0.1:1/x?sslmode=disable&connect_timeout=2", Schema: "ok"})
	requireCause(t, err, hs.ErrStorage, "127.0.0.1:1", "connection refused")
}

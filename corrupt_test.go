package hermesstate_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

func strp(s string) *string { return &s }

// fillStore writes sessions × perSession acknowledged messages through the
// store and returns the ids of the sessions.
func fillStore(t testing.TB, st *hs.Store, sessions, perSession int) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := 0; i < sessions; i++ {
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", Model: "m"})
		require.NoError(t, err)
		ids = append(ids, s.ID)
		for j := 0; j < perSession; j++ {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: role, Content: strp(fmt.Sprintf("message %d of session %d: deploy the zebra config", j, i))})
			require.NoError(t, err)
		}
	}
	return ids
}

// rootPage returns the root page of a table or index.
func rootPage(t testing.TB, db *sql.DB, name string) int64 {
	t.Helper()
	var p int64
	require.NoError(t, db.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = ?", name).Scan(&p))
	require.Greater(t, p, int64(1))
	return p
}

// overwritePage fills page number pgno (1-based) of the file with b.
func overwritePage(t testing.TB, path string, pgno int64, pageSize int64, b byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	buf := make([]byte, pageSize)
	for i := range buf {
		buf[i] = b
	}
	_, err = f.WriteAt(buf, (pgno-1)*pageSize)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestCorruptionWhileOpenStopsWrites: the file is damaged under an open
// store (an index page of messages is overwritten after a checkpoint). The
// next write fails with ErrCorrupt naming doctor, every later write fails
// fast without touching the file, reads that avoid the damage still work,
// and no acknowledged message is lost: every one is still in the table.
func TestCorruptionWhileOpenStopsWrites(t *testing.T) {
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	ids := fillStore(t, st, 3, 20)
	acked := 60

	raw := fixturetest.Raw(t, path)
	var pageSize int64
	require.NoError(t, raw.QueryRow("PRAGMA page_size").Scan(&pageSize))
	_, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	require.NoError(t, err)
	idx := rootPage(t, raw, "idx_messages_session_id")
	overwritePage(t, path, idx, pageSize, 0xFF)
	// Another process commits, so the store's connection drops its page
	// cache and reads the damaged page on its next write.
	_, err = raw.Exec("INSERT INTO state_meta (key, value) VALUES ('poke', '1')")
	require.NoError(t, err)

	_, err = st.Messages().Append(ctx, ids[0], repo.MessageInput{Role: "user", Content: strp("after the damage")})
	require.Error(t, err)
	require.ErrorIs(t, err, hs.ErrCorrupt)
	require.Contains(t, err.Error(), "doctor")

	// Later writes fail fast, whatever they touch: they do not reach the
	// file (its bytes and its WAL's stay the same).
	before := fileBytes(t, path) + fileBytes(t, path+"-wal")
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.ErrorIs(t, err, hs.ErrCorrupt)
	require.Contains(t, err.Error(), "hermes-state --db "+path+" doctor")
	require.Equal(t, before, fileBytes(t, path)+fileBytes(t, path+"-wal"), "a write after the damage touched the file")
	err = st.Meta().Set(ctx, "k", "v")
	require.ErrorIs(t, err, hs.ErrCorrupt)

	// Reads that do not need the damaged index still work.
	s, err := st.Sessions().Get(ctx, ids[1])
	require.NoError(t, err)
	require.EqualValues(t, 20, s.MessageCount)

	// The store's own doctor says a write met damage; the file's doctor
	// names the damaged index.
	r, err := st.Doctor(ctx, hs.DoctorOptions{})
	require.NoError(t, err)
	require.False(t, r.OK())
	require.True(t, r.Has("integrity", ""), "%+v", r.Findings)

	// No acknowledged write is lost: every acked message is in the table
	// (read without the damaged index).
	var n int
	require.NoError(t, raw.QueryRow("SELECT count(*) FROM messages NOT INDEXED").Scan(&n))
	require.Equal(t, acked, n)
	var after int
	require.NoError(t, raw.QueryRow("SELECT count(*) FROM messages NOT INDEXED WHERE content = 'after the damage'").Scan(&after))
	require.Zero(t, after, "the refused write left nothing behind")
	require.NoError(t, st.Close())
}

// TestZeroedHeaderWhileOpenStopsWrites: the file header is zeroed under an
// open store; the next write that reads it fails with ErrCorrupt and the
// store refuses writes from then on.
func TestZeroedHeaderWhileOpenStopsWrites(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/state.db"
	st, err := hs.Open(ctx, hs.Config{Path: path, JournalMode: hs.JournalDelete})
	require.NoError(t, err)
	defer st.Close()
	ids := fillStore(t, st, 1, 5)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt(make([]byte, 100), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = st.Messages().Append(ctx, ids[0], repo.MessageInput{Role: "user", Content: strp("x")})
	require.ErrorIs(t, err, hs.ErrCorrupt)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.ErrorIs(t, err, hs.ErrCorrupt)
	require.Contains(t, err.Error(), "doctor")
	r, err := hs.Doctor(ctx, hs.Config{Path: path, JournalMode: hs.JournalDelete}, hs.DoctorOptions{})
	require.NoError(t, err)
	require.True(t, r.Has("file", ""), "%+v", r.Findings)
}

// fileBytes returns the file's content, or "" when it does not exist.
func fileBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	require.NoError(t, err)
	return string(b)
}

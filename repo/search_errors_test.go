package repo_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// Issue 20, section 1: only an FTS5 (or tsquery) syntax error caused by the
// user's query may become "nothing matched". Every test here makes another
// kind of failure happen and fails when the search comes back as an empty
// result without an error.

// errorQueries are the query shapes that go through the word index: plain
// words, OR, a prefix, NOT and a phrase.
var errorQueries = []string{"docker", "docker OR kubectl", "dock*", "docker NOT zebra", `"docker compose"`}

// TestSearchStatementErrorIsAnError: a column the search statement needs
// is missing from the file (renamed behind the store's back). The statement
// cannot compile, which is never the query's fault: every query returns an
// error, on SQLite and on PostgreSQL (SQLSTATE 42703, undefined column).
func TestSearchStatementErrorIsAnError(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		hermesstatetest.AppendAll(t, st, s.ID, repo.MessageInput{Role: "user", Content: models.Text("docker compose up fails")})
		for _, q := range errorQueries {
			hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{})
			require.NoError(t, err, q)
			require.Len(t, hits, 1, q)
		}
		hermesstatetest.Exec(t, st, "ALTER TABLE messages RENAME COLUMN role TO role_renamed")
		for _, q := range errorQueries {
			hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{})
			require.Errorf(t, err, "%q on a file without messages.role came back as %d hits and no error", q, len(hits))
			require.ErrorIs(t, err, hs.ErrStorage, q)
			require.Contains(t, err.Error(), "role", "the error names its cause")
		}
	})
}

// TestSearchOldFileNeverSaysNoMatch: a Hermes v21 file read as it is, a
// search that the v21 file holds answers for: either Hermes' answer or an
// error saying why not, never an empty result (the v30 statement's
// "no such column: m.display_kind" was swallowed as an FTS syntax error).
func TestSearchOldFileNeverSaysNoMatch(t *testing.T) {
	path := fixturetest.Copy(t, "hermes-v21.db")
	st, err := hs.Open(context.Background(), hs.Config{Path: path, ReadOnly: true})
	require.NoError(t, err)
	defer st.Close()
	for _, q := range errorQueries[:3] {
		hits, err := st.Search().Messages(context.Background(), q, repo.SearchOptions{})
		if err == nil {
			require.NotEmpty(t, hits, "%q on hermes-v21 came back empty without an error; Hermes found messages", q)
		}
	}
}

// bigSearchStore writes n messages that all match the error queries, with
// plain SQL in one transaction (the FTS triggers index them), so that
// ranking them takes long enough to be interrupted.
func bigSearchStore(t *testing.T, st *hs.Store, n int) {
	t.Helper()
	ctx := context.Background()
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	switch st.Driver() {
	case hs.DriverPostgres:
		hermesstatetest.Exec(t, st, fmt.Sprintf(`INSERT INTO messages (session_id, role, content, timestamp)
			SELECT ?, 'user', 'docker compose kubectl deploy number ' || g || ' of the dockerfile run', 1000 + g FROM generate_series(1, %d) g`, n), s.ID)
	default:
		hermesstatetest.Exec(t, st, fmt.Sprintf(`WITH RECURSIVE g(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM g WHERE x < %d)
			INSERT INTO messages (session_id, role, content, timestamp)
			SELECT ?, 'user', 'docker compose kubectl deploy number ' || x || ' of the dockerfile run', 1000 + x FROM g`, n), s.ID)
	}
}

// TestSearchCancelledIsAnError: a search whose context ends while its
// statement runs returns the context's error, for every query shape (OR
// and prefix queries used to come back as 0 hits and no error). Each query
// runs to its end once to learn its duration, then with deadlines inside
// that time: every run must either end with context.DeadlineExceeded or
// return the whole answer, and at least one must be interrupted.
func TestSearchCancelledIsAnError(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		n := 20000
		if st.Driver() == hs.DriverPostgres {
			n = 20000
		}
		bigSearchStore(t, st, n)
		for _, q := range errorQueries {
			opt := repo.SearchOptions{Limit: 5}
			var full []repo.SearchHit
			var took []time.Duration
			for range 3 {
				start := time.Now()
				hits, err := st.Search().Messages(context.Background(), q, opt)
				took = append(took, time.Since(start))
				require.NoError(t, err, q)
				full = hits
			}
			require.NotEmpty(t, full, q)
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			d := took[1]
			interrupted := 0
			for _, frac := range []float64{0.2, 0.35, 0.5, 0.65, 0.8} {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(frac*float64(d)))
				hits, err := st.Search().Messages(ctx, q, opt)
				cancel()
				if err != nil {
					require.Truef(t, errors.Is(err, context.DeadlineExceeded), "%q cancelled at %.0f%% of %s: %v", q, 100*frac, d, err)
					interrupted++
					continue
				}
				require.Equalf(t, hitIDs(full), hitIDs(hits), "%q with a deadline at %.0f%% of %s: no error but not the whole answer", q, 100*frac, d)
			}
			require.Positivef(t, interrupted, "%q (%s a run): no deadline interrupted it", q, d)
			t.Logf("%s %q: %s a run, %d of 5 deadlines interrupted it", st.Driver(), q, d, interrupted)
		}
	})
}

// TestSearchLockedFileIsAnError: another process holds the exclusive lock
// on a delete-mode file for longer than the read waits: the search fails
// with ErrBusy (or the context's deadline), never with no hits.
func TestSearchLockedFileIsAnError(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path, JournalMode: hs.JournalDelete})
	require.NoError(t, err)
	defer st.Close()
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	hermesstatetest.AppendAll(t, st, s.ID, repo.MessageInput{Role: "user", Content: models.Text("docker compose up fails")})
	require.NoError(t, st.Close())
	for _, readOnly := range []bool{false, true} {
		st, err := hs.Open(ctx, hs.Config{Path: path, JournalMode: hs.JournalDelete, ReadOnly: readOnly, ReadBusyTimeout: 50 * time.Millisecond})
		require.NoError(t, err)
		raw := fixturetest.Raw(t, path)
		conn, err := raw.Conn(ctx)
		require.NoError(t, err)
		_, err = conn.ExecContext(ctx, "BEGIN EXCLUSIVE")
		require.NoError(t, err)
		for _, q := range errorQueries[:3] {
			qctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
			hits, err := st.Search().Messages(qctx, q, repo.SearchOptions{})
			cancel()
			require.Errorf(t, err, "%q on a locked file (read-only %v) came back as %d hits and no error", q, readOnly, len(hits))
			require.Truef(t, errors.Is(err, hs.ErrBusy) || errors.Is(err, context.DeadlineExceeded), "%q: %v", q, err)
		}
		_, err = conn.ExecContext(ctx, "ROLLBACK")
		require.NoError(t, err)
		require.NoError(t, conn.Close())
		require.NoError(t, st.Close())
	}
}

// TestSearchUnsearchableFileSaysSo: a file whose word index was dropped
// cannot be searched as Hermes searches it; the search says so (an error
// naming the missing index and the command that rebuilds it) instead of
// "no messages match".
func TestSearchUnsearchableFileSaysSo(t *testing.T) {
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	hermesstatetest.AppendAll(t, st, s.ID, repo.MessageInput{Role: "user", Content: models.Text("docker compose up fails")})
	require.NoError(t, st.Close())
	db := fixturetest.Raw(t, path)
	rows, err := db.Query("SELECT type, name FROM sqlite_master WHERE (type = 'trigger' AND sql LIKE '%messages_fts%') OR (type IN ('table', 'view') AND name IN ('messages_fts', 'messages_fts_trigram', 'messages_fts_src', 'messages_fts_trigram_src'))")
	require.NoError(t, err)
	var drops []string
	for rows.Next() {
		var typ, name string
		require.NoError(t, rows.Scan(&typ, &name))
		drops = append(drops, fmt.Sprintf(`DROP %s IF EXISTS "%s"`, typ, name))
	}
	require.NoError(t, rows.Err())
	rows.Close()
	sort.Slice(drops, func(i, j int) bool { return drops[i] > drops[j] }) // triggers and views first
	fixturetest.Exec(t, path, drops...)
	require.Zero(t, fixturetest.Count(t, db, "SELECT count(*) FROM sqlite_master WHERE name IN ('messages_fts', 'messages_fts_trigram')"))
	for _, readOnly := range []bool{true, false} {
		st, err := hs.Open(ctx, hs.Config{Path: path, ReadOnly: readOnly})
		require.NoError(t, err)
		for _, q := range errorQueries {
			hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{})
			require.Errorf(t, err, "%q on a file without a word index (read-only %v) came back as %d hits and no error", q, readOnly, len(hits))
			require.ErrorIs(t, err, hs.ErrUnsupported, q)
			require.Contains(t, err.Error(), "messages_fts")
			require.Contains(t, err.Error(), "`hermes-state --db "+path+" fts rebuild`", "the advice names the file (issue 28, item 9)")
		}
		require.NoError(t, st.Close())
	}
}

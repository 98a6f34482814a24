package hermesstate_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// requireSameStore asserts that two stores return the same data through
// the public API: table counts, every session and its messages and replay,
// listings, titles, state_meta.
func requireSameStore(t *testing.T, a, b *hs.Store) {
	t.Helper()
	ctx := fixturetest.Ctx(t)
	ca, err := a.TableCounts(ctx)
	require.NoError(t, err)
	cb, err := b.TableCounts(ctx)
	require.NoError(t, err)
	require.Equal(t, ca, cb, "table counts")

	la, err := a.Sessions().List(ctx, repo.ListOptions{Limit: 100000})
	require.NoError(t, err)
	lb, err := b.Sessions().List(ctx, repo.ListOptions{Limit: 100000})
	require.NoError(t, err)
	require.Equal(t, jsonOf(t, la), jsonOf(t, lb), "sessions list")
	for _, s := range la {
		ga, err := a.Sessions().Get(ctx, s.ID)
		require.NoError(t, err)
		gb, err := b.Sessions().Get(ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, jsonOf(t, ga), jsonOf(t, gb), "session %s", s.ID)
		ma, err := a.Messages().List(ctx, s.ID)
		require.NoError(t, err)
		mb, err := b.Messages().List(ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, jsonOf(t, ma), jsonOf(t, mb), "messages of %s", s.ID)
		for i := range ma {
			require.Equal(t, ma[i].DisplayIdentity, mb[i].DisplayIdentity, "display_identity of %d", ma[i].ID)
			require.Equal(t, ma[i].DisplayOrder, mb[i].DisplayOrder, "display_order of %d", ma[i].ID)
		}
		va, err := a.Messages().Conversation(ctx, s.ID, repo.ConversationOptions{})
		require.NoError(t, err)
		vb, err := b.Messages().Conversation(ctx, s.ID, repo.ConversationOptions{})
		require.NoError(t, err)
		require.Equal(t, jsonOf(t, va), jsonOf(t, vb), "conversation of %s", s.ID)
		ua, err := a.ModelUsage(ctx, s.ID)
		require.NoError(t, err)
		ub, err := b.ModelUsage(ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, jsonOf(t, ua), jsonOf(t, ub), "usage of %s", s.ID)
	}
	for _, opt := range []repo.RichOptions{{Limit: 1000}, {Limit: 1000, IncludeChildren: true, IncludeArchived: true, IncludeHidden: true},
		{Limit: 1000, OrderByLastActive: true, IncludePinned: true}} {
		ra, err := a.Listing().Rich(ctx, opt)
		require.NoError(t, err)
		rb, err := b.Listing().Rich(ctx, opt)
		require.NoError(t, err)
		require.Equal(t, jsonOf(t, ra), jsonOf(t, rb), "rich listing %+v", opt)
	}
	ta, err := a.Titles().Stored(ctx)
	require.NoError(t, err)
	tb, err := b.Titles().Stored(ctx)
	require.NoError(t, err)
	require.Equal(t, ta, tb, "titles")
	for _, ti := range ta {
		ra, errA := a.Titles().Resolve(ctx, ti)
		rb, errB := b.Titles().Resolve(ctx, ti)
		require.Equal(t, errA == nil, errB == nil)
		require.Equal(t, ra, rb, "resolve %q", ti)
	}
	ma, err := a.Meta().All(ctx)
	require.NoError(t, err)
	mb, err := b.Meta().All(ctx)
	require.NoError(t, err)
	require.Equal(t, ma, mb, "state_meta")
	var ea, eb bytes.Buffer
	_, err = a.Portability().WriteJSONL(ctx, &ea, repo.ExportFilter{}, nil, nil)
	require.NoError(t, err)
	_, err = b.Portability().WriteJSONL(ctx, &eb, repo.ExportFilter{}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, ea.String(), eb.String(), "JSONL export")
	ea.Reset()
	eb.Reset()
	_, err = a.Portability().WriteMarkdown(ctx, &ea, repo.ExportFilter{}, nil, nil)
	require.NoError(t, err)
	_, err = b.Portability().WriteMarkdown(ctx, &eb, repo.ExportFilter{}, nil, nil)
	require.NoError(t, err)
	require.Equal(t, ea.String(), eb.String(), "Markdown export")
	va, err := a.SchemaVersion(ctx)
	require.NoError(t, err)
	vb, err := b.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, va, vb)
}

// TestCopyFixturesToPostgres copies every Hermes-made fixture (a temp copy)
// into a fresh PostgreSQL schema and expects the same store back, the
// source file unchanged.
func TestCopyFixturesToPostgres(t *testing.T) {
	pgtest.DSN(t)
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			ctx := fixturetest.Ctx(t)
			path := f.CopyDB(t)
			before, listing := fileHash(t, path), fixturetest.Listing(t, filepath.Dir(path))
			src, cleanup, err := hs.OpenSnapshot(ctx, path, hs.Config{})
			require.NoError(t, err)
			defer cleanup()
			require.Equal(t, listing, fixturetest.Listing(t, filepath.Dir(path)), "the snapshot left files beside the source")
			dst := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
			var calls int
			var last int64
			stats, err := hs.Copy(ctx, src, dst, hs.CopyOptions{BatchRows: 7, Progress: func(table string, done, total int64) {
				calls++
				require.GreaterOrEqual(t, done, last)
				require.LessOrEqual(t, done, total)
				last = done
			}})
			require.NoError(t, err)
			require.Equal(t, before, fileHash(t, path), "the source file is untouched")
			require.Positive(t, stats.Rows["messages"])
			require.Equal(t, stats.Total, last)
			require.Positive(t, calls)
			counts, err := dst.TableCounts(ctx)
			require.NoError(t, err)
			require.Equal(t, stats.Rows, counts)
			requireSameStore(t, src, dst)

			// New messages continue after the copied ids.
			list, err := src.Sessions().List(ctx, repo.ListOptions{Limit: 1})
			require.NoError(t, err)
			n, err := dst.Messages().Count(ctx, "")
			require.NoError(t, err)
			id, err := dst.Messages().Append(ctx, list[0].ID, repo.MessageInput{Role: "user", Content: models.Text("after copy")})
			if err == nil {
				require.Greater(t, id, n)
			} else {
				fixturetest.RequireKind(t, err, hs.ErrConflict) // ended by compression
			}

			// A second copy into the now non-empty target is refused.
			_, err = hs.Copy(ctx, src, dst, hs.CopyOptions{})
			fixturetest.RequireKind(t, err, hs.ErrConflict)
		})
	}
}

func TestCopyRefusals(t *testing.T) {
	ctx := context.Background()
	a := hermesstatetest.Open(t, hermesstatetest.SQLite, hs.Config{})
	b := hermesstatetest.Open(t, hermesstatetest.SQLite, hs.Config{})
	_, err := hs.Copy(ctx, a, b, hs.CopyOptions{})
	fixturetest.RequireKind(t, err, hs.ErrInvalid)
	_, _, err = hs.OpenSnapshot(ctx, "/nonexistent/state.db", hs.Config{})
	fixturetest.RequireKind(t, err, hs.ErrNotFound)
}

// TestCopyAnalyzes (issue 21, item 1): a copy ends with ANALYZE of the
// tables it filled, so the planner has statistics at once (a server with
// autovacuum off or slow would plan the first searches without them):
// every table that received rows has pg_stat_user_tables.last_analyze, the
// word search's plan reads the GIN index of hs_messages_fts, and the
// activity table the copy filled in one pass agrees with the rows.
func TestCopyAnalyzes(t *testing.T) {
	pgtest.DSN(t)
	ctx := context.Background()
	src := hermesstatetest.Fresh(t)
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
	for s := 0; s < 60; s++ {
		id := fmt.Sprintf("cp%03d", s)
		_, err := src.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli", StartedAt: models.Epoch(1767225600 + float64(s)*60)})
		require.NoError(t, err)
		batch := make([]repo.MessageInput, 200)
		for i := range batch {
			batch[i] = repo.MessageInput{Role: "user", Content: models.Text(copyText(words[(s+i)%10], s*200+i)),
				Timestamp: models.Epoch(1767225600 + float64(s)*60 + float64(i))}
		}
		_, err = src.Messages().AppendBatch(ctx, id, batch)
		require.NoError(t, err)
	}
	_, err := src.Messages().Append(ctx, "cp007", repo.MessageInput{Role: "user", Content: models.Text("zebracrossing"), Timestamp: models.Epoch(1767239999)})
	require.NoError(t, err)
	dst := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
	raw := hermesstatetest.SQL(t, dst)
	_, err = hs.Copy(ctx, src, dst, hs.CopyOptions{})
	require.NoError(t, err)

	for _, tbl := range []string{"sessions", "messages", "system_prompts", "hs_messages_fts", "hermesstate_session_activity"} {
		var analyzed bool
		require.NoError(t, raw.QueryRow(`SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`,
			dst.Schema(), tbl).Scan(&analyzed), tbl)
		if tbl == "system_prompts" {
			continue // empty here: ANALYZE of an empty table may leave no mark
		}
		require.True(t, analyzed, "%s was not analyzed after the copy", tbl)
	}
	res, err := dst.Search().Explain(ctx, "zebracrossing", repo.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)
	require.Contains(t, strings.Join(res.Plan, "\n"), "idx_hs_messages_fts_doc", "the word search does not read the GIN index:\n%s", strings.Join(res.Plan, "\n"))

	var drift int
	require.NoError(t, raw.QueryRow(`SELECT COUNT(*) FROM sessions s LEFT JOIN hermesstate_session_activity a ON a.session_id = s.id
		WHERE a.active_at IS DISTINCT FROM (SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id)`).Scan(&drift))
	require.Zero(t, drift, "sessions whose activity the copy did not fill")
	rows, err := dst.Listing().Rich(ctx, repo.RichOptions{OrderByLastActive: true, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, "cp007", rows[0].ID)
}

// copyText is a message of about 120 distinct words (w0..w4999): wide rows,
// as real transcripts are, so the planner weighs a scan of the word table
// against its GIN index as it would on a real store.
func copyText(head string, n int) string {
	var b strings.Builder
	b.WriteString(head)
	for k := 0; k < 120; k++ {
		fmt.Fprintf(&b, " w%d", (n*7919+k*104729)%5000)
	}
	return b.String()
}

// TestCopyRefusesANewerSchema (issue 28, item 5): a SQLite file of a newer
// Hermes (schema_version 99, a table and a key column v30 does not have)
// is not copied: ErrUnsupported naming the file and both versions, and the
// target schema stays empty (no rows, still stamped v30). Before, the copy
// dropped the unknown table and column and stamped the target version 99.
func TestCopyRefusesANewerSchema(t *testing.T) {
	ctx := context.Background()
	path := fixturetest.Copy(t, "hermes-v30.db")
	fixturetest.MakeNewer(t, path, 99)
	src, cleanup, err := hs.OpenSnapshot(ctx, path, hs.Config{})
	require.NoError(t, err)
	defer cleanup()
	require.Equal(t, 99, src.NewerSchema())
	dst := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
	_, err = hs.Copy(ctx, src, dst, hs.CopyOptions{})
	fixturetest.RequireKind(t, err, hs.ErrUnsupported)
	require.Contains(t, err.Error(), path)
	require.Contains(t, err.Error(), "schema version 99, newer than 30")
	v, err := dst.SchemaVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, hs.HermesSchemaVersion, v, "the target was stamped with the source's version")
	n, err := dst.Sessions().Count(ctx, "")
	require.NoError(t, err)
	require.Zero(t, n, "rows were copied")
}

package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func metaValue(t *testing.T, path, key string) (string, bool) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	var v string
	err := db.QueryRow("SELECT value FROM state_meta WHERE key = ?", key).Scan(&v)
	if err != nil {
		return "", false
	}
	return v, true
}

// A rebuild runs in chunks, stops and resumes from its state_meta marker;
// while it is pending, searches still find every row (FTS hits topped up by
// a LIKE over the not-yet-indexed gap) and new writes are indexed.
func TestSearchRebuildChunkedResumable(t *testing.T) {
	ctx := context.Background()
	st, path := openSearchStore(t)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	var batch []repo.MessageInput
	for i := 0; i < 250; i++ {
		batch = append(batch, repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("row %d wombat 桂林", i))})
	}
	_, err = st.Messages().AppendBatch(ctx, s.ID, batch)
	require.NoError(t, err)

	var calls int
	require.NoError(t, st.Search().Rebuild(ctx, repo.RebuildOptions{Chunk: 50, MaxChunks: 2, Progress: func(done, total int64) {
		calls++
		require.EqualValues(t, 250, total)
	}}))
	require.Equal(t, 2, calls)
	p, ok := metaValue(t, path, ftsql.MetaProgress)
	require.True(t, ok)
	require.Equal(t, "100", p)
	hw, _ := metaValue(t, path, ftsql.MetaHighWater)
	require.Equal(t, "250", hw)

	// Pending: a new row is indexed by the trigger, old rows come from the
	// index (<= progress) or the gap scan.
	_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("late wombat")})
	require.NoError(t, err)
	hits, err := st.Search().Messages(ctx, "wombat", repo.SearchOptions{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, hits, 251)
	hits, err = st.Search().Messages(ctx, "桂林", repo.SearchOptions{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, hits, 250)

	// Resume to the end.
	require.NoError(t, st.Search().Rebuild(ctx, repo.RebuildOptions{Chunk: 50}))
	_, ok = metaValue(t, path, ftsql.MetaHighWater)
	require.False(t, ok)
	v, _ := metaValue(t, path, "fts_storage_version")
	require.Equal(t, "3", v)
	checks, err := st.Search().Check(ctx)
	require.NoError(t, err)
	for _, c := range checks {
		require.True(t, c.OK, "%s: %s", c.Table, c.Detail)
	}
	res, err := st.Search().Run(ctx, "wombat", repo.SearchOptions{Limit: 1000})
	require.NoError(t, err)
	require.Equal(t, repo.RouteWord, res.Route)
	require.Len(t, res.Hits, 251)
}

// fts rebuild converts an old Hermes layout to the current one; search
// answers the same afterwards.
func TestSearchRebuildConvertsLegacyLayout(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadFixtures(t) {
		if f.Version != 1 && f.Version != 11 {
			continue
		}
		st, path := hermesstatetest.Fixture(t, f)
		before, err := st.Search().Messages(ctx, "docker", repo.SearchOptions{})
		require.NoError(t, err)
		require.NoError(t, st.Search().Rebuild(ctx, repo.RebuildOptions{Chunk: 7}))
		db := fixturetest.Raw(t, path)
		var n int
		require.NoError(t, db.QueryRow("SELECT count(*) FROM pragma_table_info('messages_fts') WHERE name = 'tool_name'").Scan(&n))
		require.Equal(t, 1, n, f.Name)
		checks, err := st.Search().Check(ctx)
		require.NoError(t, err)
		for _, c := range checks {
			require.True(t, c.OK, "%s %s: %s", f.Name, c.Table, c.Detail)
		}
		after, err := st.Search().Messages(ctx, "docker", repo.SearchOptions{})
		require.NoError(t, err)
		require.ElementsMatch(t, hitIDs(before), hitIDs(after), f.Name)
	}
}

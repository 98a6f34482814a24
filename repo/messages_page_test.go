package repo_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestContractMessagePage walks a session window by window (by id forwards
// and backwards, and by offset) on both backends and checks every window's
// rows, position and total against the full list.
func TestContractMessagePage(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss, ms := st.Sessions(), st.Messages()
		for _, id := range []string{"p", "other"} {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
			require.NoError(t, err)
		}
		// Interleave another session's rows so ids of "p" have gaps.
		for b := 0; b < 5; b++ {
			var batch []repo.MessageInput
			for i := 0; i < 50; i++ {
				batch = append(batch, repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("m%03d", b*50+i))})
			}
			_, err := ms.AppendBatch(ctx, "p", batch)
			require.NoError(t, err)
			_, err = ms.Append(ctx, "other", repo.MessageInput{Role: "user", Content: models.Text("x")})
			require.NoError(t, err)
		}
		all, err := ms.List(ctx, "p")
		require.NoError(t, err)
		require.Len(t, all, 250)

		check := func(pg repo.MessagePage, start, n int) {
			t.Helper()
			require.EqualValues(t, 250, pg.Total)
			require.EqualValues(t, start, pg.Start)
			require.Len(t, pg.Messages, n)
			for i, m := range pg.Messages {
				require.Equal(t, all[start+i].ID, m.ID)
				require.Equal(t, fmt.Sprintf("m%03d", start+i), *m.Content)
			}
		}
		pg, err := ms.Page(ctx, "p", repo.PageOptions{})
		require.NoError(t, err)
		check(pg, 0, 100)
		pg, err = ms.Page(ctx, "p", repo.PageOptions{AfterID: pg.Messages[99].ID})
		require.NoError(t, err)
		check(pg, 100, 100)
		next := pg.Messages[0].ID
		pg, err = ms.Page(ctx, "p", repo.PageOptions{BeforeID: next, Limit: 30})
		require.NoError(t, err)
		check(pg, 70, 30)
		pg, err = ms.Page(ctx, "p", repo.PageOptions{BeforeID: next, Limit: 30, Offset: 60})
		require.NoError(t, err)
		check(pg, 10, 30)
		pg, err = ms.Page(ctx, "p", repo.PageOptions{Offset: 240, Limit: 50})
		require.NoError(t, err)
		check(pg, 240, 10)
		pg, err = ms.Page(ctx, "p", repo.PageOptions{AfterID: all[9].ID, BeforeID: all[20].ID, Limit: 5, Offset: 2})
		require.NoError(t, err)
		check(pg, 12, 5)
		// The last window: before an id past the end.
		pg, err = ms.Page(ctx, "p", repo.PageOptions{BeforeID: all[249].ID + 1000, Limit: 25})
		require.NoError(t, err)
		check(pg, 225, 25)
		// Empty windows say where they are.
		pg, err = ms.Page(ctx, "p", repo.PageOptions{Offset: 300})
		require.NoError(t, err)
		check(pg, 250, 0)
		pg, err = ms.Page(ctx, "p", repo.PageOptions{BeforeID: all[0].ID})
		require.NoError(t, err)
		check(pg, 0, 0)
		pg, err = ms.Page(ctx, "p", repo.PageOptions{Limit: repo.MaxPageLimit})
		require.NoError(t, err)
		check(pg, 0, 250)

		// An empty session has an empty first window; a missing one is not found.
		pg, err = ms.Page(ctx, "other", repo.PageOptions{Offset: 5})
		require.NoError(t, err)
		require.EqualValues(t, 5, pg.Total)
		require.Empty(t, pg.Messages)
		_, err = ss.Create(ctx, repo.SessionInput{ID: "empty", Source: "cli"})
		require.NoError(t, err)
		pg, err = ms.Page(ctx, "empty", repo.PageOptions{})
		require.NoError(t, err)
		require.Zero(t, pg.Total)
		require.NotNil(t, pg.Messages)
		_, err = ms.Page(ctx, "missing", repo.PageOptions{})
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		for _, bad := range []repo.PageOptions{{Limit: -1}, {Limit: repo.MaxPageLimit + 1}, {Offset: -1}, {AfterID: -1}, {BeforeID: -2}} {
			_, err = ms.Page(ctx, "p", bad)
			fixturetest.RequireKind(t, err, hs.ErrInvalid)
		}
		_, err = ms.Page(ctx, "", repo.PageOptions{})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
	})
}

// TestMessagePageInactive: rewound rows are left out of windows and totals
// unless asked for.
func TestMessagePageInactive(t *testing.T) {
	ctx := fixturetest.Ctx(t)
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
	require.NoError(t, err)
	var batch []repo.MessageInput
	for i := 0; i < 10; i++ {
		batch = append(batch, repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprint(i))})
	}
	ids, err := st.Messages().AppendBatch(ctx, "s", batch)
	require.NoError(t, err)
	_, err = fixturetest.Raw(t, path).Exec("UPDATE messages SET active = 0 WHERE id IN (?, ?, ?)", ids[0], ids[4], ids[5])
	require.NoError(t, err)

	pg, err := st.Messages().Page(ctx, "s", repo.PageOptions{Limit: 3})
	require.NoError(t, err)
	require.EqualValues(t, 7, pg.Total)
	require.Equal(t, []int64{ids[1], ids[2], ids[3]}, pageIDs(pg))
	pg, err = st.Messages().Page(ctx, "s", repo.PageOptions{AfterID: ids[3], Limit: 2})
	require.NoError(t, err)
	require.EqualValues(t, 3, pg.Start)
	require.Equal(t, []int64{ids[6], ids[7]}, pageIDs(pg))
	pg, err = st.Messages().Page(ctx, "s", repo.PageOptions{AfterID: ids[3], Limit: 2, IncludeInactive: true})
	require.NoError(t, err)
	require.EqualValues(t, 10, pg.Total)
	require.EqualValues(t, 4, pg.Start)
	require.Equal(t, []int64{ids[4], ids[5]}, pageIDs(pg))
}

func pageIDs(pg repo.MessagePage) []int64 {
	out := make([]int64, 0, len(pg.Messages))
	for _, m := range pg.Messages {
		out = append(out, m.ID)
	}
	return out
}

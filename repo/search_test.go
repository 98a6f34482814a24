package repo_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func openSearchStore(t testing.TB) (*hs.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(context.Background(), hs.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st, path
}

func hitIDs(h []repo.SearchHit) []int64 {
	out := []int64{}
	for _, x := range h {
		out = append(out, x.ID)
	}
	return out
}

// A row written by another program with plain SQL (as Hermes writes) is
// found by every route: the word index, trigram, the CJK index, and the
// tool-role LIKE route.
func TestSearchFindsRowsInsertedByPlainSQL(t *testing.T) {
	ctx := context.Background()
	st, path := openSearchStore(t)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	db := fixturetest.Raw(t, path)
	_, err = db.Exec(`INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'the zanzibar deployment in 桂林 failed', 100.0)`, s.ID)
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO messages (session_id, role, content, tool_name, timestamp) VALUES (?, 'tool', 'output of 桂 probe', 'zanzitool', 101.0)`, s.ID)
	require.NoError(t, err)

	for _, c := range []struct {
		q     string
		opt   repo.SearchOptions
		route repo.Route
		want  []int64
	}{
		{"zanzibar", repo.SearchOptions{}, repo.RouteWord, []int64{1}},
		{"zanzitool", repo.SearchOptions{}, repo.RouteWord, []int64{2}},
		{"anzibar", repo.SearchOptions{}, repo.RouteWordRetry, []int64{1}},
		{"桂林", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{1}},
		{"桂", repo.SearchOptions{}, repo.RouteCJKIndex, []int64{2, 1}},
		{"probe", repo.SearchOptions{Roles: []string{"tool"}}, repo.RouteToolLike, []int64{2}},
	} {
		res, err := st.Search().Run(ctx, c.q, c.opt)
		require.NoError(t, err, c.q)
		require.Equal(t, c.route, res.Route, c.q)
		require.Equal(t, c.want, hitIDs(res.Hits), c.q)
	}
	// Edited and deleted by plain SQL: gone from every index.
	_, err = db.Exec(`UPDATE messages SET content = 'nothing here' WHERE id = 1`)
	require.NoError(t, err)
	_, err = db.Exec(`DELETE FROM messages WHERE id = 2`)
	require.NoError(t, err)
	for _, q := range []string{"zanzibar", "zanzitool", "桂林", "桂"} {
		hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{})
		require.NoError(t, err)
		require.Empty(t, hits, q)
	}
	checks, err := st.Search().Check(ctx)
	require.NoError(t, err)
	for _, c := range checks {
		require.True(t, c.OK, "%s: %s", c.Table, c.Detail)
	}
	require.Len(t, checks, 3)
}

func TestSearchInvalidAndEmpty(t *testing.T) {
	ctx := context.Background()
	st, _ := openSearchStore(t)
	_, err := st.Search().Messages(ctx, "x", repo.SearchOptions{Limit: -1})
	require.ErrorIs(t, err, hs.ErrInvalid)
	for _, q := range []string{"", "   "} {
		hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{})
		require.NoError(t, err)
		require.Empty(t, hits)
	}
	// Nothing to search is said, not answered with no hits (issue 28, item 6).
	for _, q := range []string{"AND", "((()", "*"} {
		_, err := st.Search().Messages(ctx, q, repo.SearchOptions{})
		require.ErrorIs(t, err, hs.ErrUnsearchableQuery, q)
		require.ErrorIs(t, err, hs.ErrInvalid, q)
	}
}

// FuzzSearch: no input makes Search fail, except a query with more than
// repo.MaxQueryTerms terms (ErrInvalid) and one with nothing to search
// (ErrUnsearchableQuery, only when its sanitized form holds no term);
// every answer is a list. Every query FTS5 refuses in Hermes' sanitized
// form is searched in its repaired form, which FTS5 must accept.
func FuzzSearch(f *testing.F) {
	ctx := context.Background()
	st, _ := openSearchStore(f)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(f, err)
	for _, c := range []string{"docker image deploy", "广西桂林 旅游", "修改youer服务端的配置文件", "my-app.config.ts c++ TODO: fix"} {
		_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text(c)})
		require.NoError(f, err)
	}
	for _, q := range []string{"docker", "-", `"" OR ""`, "\x00", "桂", "广西 OR 桂林", "a NOT", "x - y", "NEAR(a b)", "deploy*", "%", "_"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, opt := range []repo.SearchOptions{{}, {Roles: []string{"tool"}}, {Sort: "oldest", Sources: []string{"cli"}}} {
			hits, err := st.Search().Messages(ctx, q, opt)
			if err != nil && errors.Is(err, hs.ErrInvalid) && strings.Contains(err.Error(), "terms") {
				continue
			}
			if errors.Is(err, hs.ErrUnsearchableQuery) {
				if s := fts.Sanitize(q); fts.HasTerm(s) {
					t.Fatalf("Search(%q): %v, but its sanitized form %q holds a term", q, err, s)
				}
				continue
			}
			if err != nil {
				t.Fatalf("Search(%q): %v", q, err)
			}
			if hits == nil {
				t.Fatalf("Search(%q): nil list", q)
			}
		}
	})
}

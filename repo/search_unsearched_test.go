package repo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// unsearchedStore holds one message per text the queries of issue 28,
// item 6 name, and returns the message id of each.
func unsearchedStore(t *testing.T, st *hs.Store) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	texts := []string{"deploy on kubernetes e.g. with helm", "node.js is the runtime", "pass --flag=value to the tool",
		"the file is $HOME/.config/app.toml", "a visit to the U.S.A. in May", "docker compose up"}
	ids := map[string]int64{}
	for _, text := range texts {
		ids[text] = hermesstatetest.AppendAll(t, st, s.ID, repo.MessageInput{Role: "user", Content: models.Text(text)})[0]
	}
	return ids
}

// TestSearchNeverAnswersUnsearched (issue 28, item 6): a query whose
// Hermes sanitization FTS5 refuses (Hermes v21/v30 answer []) finds the
// messages that hold its terms (dotted terms, flags and paths searched as
// phrases of their tokens, the repaired query in Searched), and reports
// Hermes' sanitized string as before; a query with nothing an index can
// search is ErrUnsearchableQuery naming why, on both backends. Before,
// each came back as no hits and no error ("no messages match").
func TestSearchNeverAnswersUnsearched(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		ids := unsearchedStore(t, st)
		for q, text := range map[string]string{
			"kubernetes e.g.": "deploy on kubernetes e.g. with helm",
			"e.g.":            "deploy on kubernetes e.g. with helm",
			"node.js.":        "node.js is the runtime",
			"--flag=value":    "pass --flag=value to the tool",
			"$HOME/.config":   "the file is $HOME/.config/app.toml",
			"U.S.A.":          "a visit to the U.S.A. in May",
		} {
			res, err := st.Search().Run(ctx, q, repo.SearchOptions{})
			require.NoError(t, err, q)
			require.Equal(t, fts.Sanitize(q), res.Sanitized, "%q: the sanitized string is Hermes'", q)
			var got []int64
			for _, h := range res.Hits {
				got = append(got, h.ID)
			}
			require.Equal(t, []int64{ids[text]}, got, "%q (route %s, searched %q) finds the message holding it", q, res.Route, res.Searched)
			if st.Driver() == hs.DriverSQLite {
				require.Equal(t, repo.RouteRepaired, res.Route, q)
				require.Equal(t, fts.Repair(q), res.Searched, q)
			}
		}
		// Hermes' answer where Hermes finds something: unchanged.
		res, err := st.Search().Run(ctx, "docker", repo.SearchOptions{})
		require.NoError(t, err)
		require.Len(t, res.Hits, 1)
		require.Equal(t, repo.RouteWord, res.Route)
		require.Empty(t, res.Searched)

		for _, q := range []string{`"*"`, "-", "🚀", "AND", `"" OR ""`, "((()"} {
			hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{})
			require.ErrorIs(t, err, hs.ErrUnsearchableQuery, "%q came back as %d hits and no error", q, len(hits))
			require.ErrorIs(t, err, hs.ErrInvalid, q)
			require.Contains(t, err.Error(), "cannot be searched", q)
		}
		// A tool role filter searches any text (LIKE): "-" is searched there.
		_, err = st.Search().Messages(ctx, "-", repo.SearchOptions{Roles: []string{"tool"}})
		require.NoError(t, err)
	})
}

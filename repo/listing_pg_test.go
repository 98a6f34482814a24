package repo_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestListingFilterValuesAsWritten: the filter values of a listing reach
// the statement unchanged whatever they hold. On PostgreSQL they are
// written into the statement as literals (so it is planned once per
// connection): quotes, backslashes, LIKE wildcards, an escaped character
// and a value that looks like SQL must select exactly the sessions they
// name, in every order and with the id search, on both backends.
func TestListingFilterValuesAsWritten(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		base := 1767225600.0
		sources := []string{"o'brien", `back\slash`, `back\\slash`, "50%_off", "x' OR '1'='1", "\ue000tab", "cli"}
		for i, src := range sources {
			for j := 0; j < 2; j++ {
				id := src + "-" + string(rune('a'+j))
				_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: src, StartedAt: models.Epoch(base + float64(i*10+j))})
				require.NoError(t, err)
				_, err = st.Messages().Append(ctx, id, repo.MessageInput{Role: "user", Content: models.Text("hello " + src),
					Timestamp: models.Epoch(base + 1000 - float64(i*10+j))})
				require.NoError(t, err)
			}
		}
		ids := func(rows []repo.RichSession) []string {
			out := []string{}
			for _, r := range rows {
				out = append(out, r.ID)
			}
			return out
		}
		for _, byActivity := range []bool{false, true} {
			for _, src := range sources {
				rows, err := st.Listing().Rich(ctx, repo.RichOptions{Source: src, OrderByLastActive: byActivity})
				require.NoError(t, err)
				want := []string{src + "-b", src + "-a"}
				if byActivity {
					want = []string{src + "-a", src + "-b"}
				}
				require.Equal(t, want, ids(rows), "source %q, by activity %v", src, byActivity)

				rows, err = st.Listing().Rich(ctx, repo.RichOptions{ExcludeSources: []string{src}, OrderByLastActive: byActivity, Limit: 100})
				require.NoError(t, err)
				require.Len(t, rows, 2*(len(sources)-1), "all but source %q", src)
				for _, r := range rows {
					require.NotEqual(t, src, r.Source)
				}

				rows, err = st.Listing().Rich(ctx, repo.RichOptions{SearchQuery: src + "-b", OrderByLastActive: byActivity, Limit: 100})
				require.NoError(t, err)
				require.Equal(t, []string{src + "-b"}, ids(rows), "id search %q", src)
			}
			rows, err := st.Listing().Rich(ctx, repo.RichOptions{Sources: []string{"o'brien", `back\slash`}, OrderByLastActive: byActivity,
				StartedSince: base + 1, StartedBefore: base + 11})
			require.NoError(t, err)
			require.ElementsMatch(t, []string{"o'brien-b", `back\slash-a`}, ids(rows))
		}
	})
}

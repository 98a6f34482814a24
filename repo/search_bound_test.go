package repo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestSearchHugeMessageIsBounded (issue 11, item 6): a matching message of
// 2 MiB whose every other word matches (FTS5's snippet() is quadratic in the
// matches: minutes for this one) is found within the deadline with a short
// snippet around a match, by rank and by date, on both hermesstatetest.Backends; normal
// messages keep their usual snippet.
func TestSearchHugeMessageIsBounded(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		huge := "intro text first. " + strings.Repeat("kubernetes pods ", 1<<17)
		hugeID, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text(huge)})
		require.NoError(t, err)
		smallID, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "assistant", Content: models.Text("restart the kubernetes deployment")})
		require.NoError(t, err)
		for _, sort := range []string{"", "newest", "oldest"} {
			dctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			hits, err := st.Search().Messages(dctx, "kubernetes", repo.SearchOptions{Sort: sort})
			cancel()
			require.NoError(t, err, "sort %q", sort)
			require.Len(t, hits, 2)
			for _, h := range hits {
				require.NotNil(t, h.Snippet)
				require.Contains(t, *h.Snippet, ">>>kubernetes<<<")
				switch h.ID {
				case hugeID:
					require.Less(t, len(*h.Snippet), 2000, "the snippet of a huge message is bounded")
				case smallID:
					require.Equal(t, "restart the >>>kubernetes<<< deployment", *h.Snippet)
				}
			}
		}
	})
}

// TestSearchQueryTermCap (issue 11, item 6): a query with more terms than
// MaxQueryTerms is refused with ErrInvalid and a message saying the limit;
// one at the limit runs.
func TestSearchQueryTermCap(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text("a b c d e f g h")})
		require.NoError(t, err)
		long := strings.TrimSpace(strings.Repeat("a b ", 400))
		_, err = st.Search().Messages(ctx, long, repo.SearchOptions{Sort: "newest"})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		require.Contains(t, err.Error(), "at most")
		ok := strings.TrimSpace(strings.Repeat("a ", repo.MaxQueryTerms))
		_, err = st.Search().Messages(ctx, ok, repo.SearchOptions{Sort: "newest"})
		require.NoError(t, err)
	})
}

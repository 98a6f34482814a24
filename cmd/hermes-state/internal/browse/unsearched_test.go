package browse

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestSearchNeverAnswersUnsearched (issue 28, item 6): in browse a dotted
// term finds the message that holds it, and a query with nothing to search
// says why instead of "no hits".
func TestSearchNeverAnswersUnsearched(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "state.db"), false)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli", StartedAt: 1767000000})
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, "s", repo.MessageInput{Role: "user", Content: models.Text("node.js is the runtime")})
	require.NoError(t, err)
	d := newDriver(t, Options{Store: st})
	d.typeText("node.js.")
	require.NoError(t, d.m.searchErr)
	require.Len(t, d.m.hits, 1)
	require.Contains(t, d.screen(), "runtime")

	d = newDriver(t, Options{Store: st})
	d.typeText("-")
	require.Empty(t, d.m.hits)
	require.Contains(t, d.screen(), "cannot be searched")
	require.NotContains(t, d.screen(), "0 hits for")
}

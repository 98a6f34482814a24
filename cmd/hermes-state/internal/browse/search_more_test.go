package browse

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestSearchSaysThereIsMore (issue 23 §4): with more matches than a page
// holds, the header said "100 hits"; it says there are more, and scrolling
// to the end loads them.
func TestSearchSaysThereIsMore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st := openStore(t, path, false)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "many", Source: "cli", StartedAt: 1767000000})
	require.NoError(t, err)
	var ms []repo.MessageInput
	for i := 0; i < 230; i++ {
		ms = append(ms, repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("note %d about the okapi", i)), Timestamp: models.Epoch(1767000000 + float64(i))})
	}
	_, err = st.Messages().AppendBatch(ctx, "many", ms)
	require.NoError(t, err)
	d := newDriver(t, Options{Store: st})
	d.typeText("okapi")
	require.Len(t, d.m.hits, searchLimit)
	require.Contains(t, d.screen(), fmt.Sprintf("first %d hits for \"okapi\"", searchLimit))
	require.NotContains(t, d.screen(), fmt.Sprintf("  %d hits for", searchLimit))
	for i := 0; i < 30 && len(d.m.hits) < 230; i++ {
		d.key("pgdown")
	}
	require.Len(t, d.m.hits, 230, "scrolling to the end loads the rest")
	require.Contains(t, d.screen(), "230 hits for \"okapi\"")
	seen := map[int64]bool{}
	for _, h := range d.m.hits {
		require.False(t, seen[h.msgID], "hit %d twice", h.msgID)
		seen[h.msgID] = true
	}
}

// TestSearchFindsTitles (issue 23 §4): a session is found by its title
// too, even when no message holds the words.
func TestSearchFindsTitles(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, filepath.Join(t.TempDir(), "state.db"), false)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "titled", Source: "cli", StartedAt: 1767000000})
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, "titled", repo.MessageInput{Role: "user", Content: models.Text("hello there")})
	require.NoError(t, err)
	_, err = st.Titles().Set(ctx, "titled", "Quarterly narwhal review")
	require.NoError(t, err)
	d := newDriver(t, Options{Store: st})
	d.typeText("narwhal")
	require.Len(t, d.m.hits, 1)
	require.Equal(t, "titled", d.m.hits[0].id)
	require.Equal(t, "title", d.m.hits[0].role)
	require.Contains(t, d.screen(), "Quarterly narwhal review")
	d.key("enter")
	require.Equal(t, screenConv, d.m.screen)
	require.Contains(t, d.screen(), "hello there")
}

// TestEscOnAnErrorLineDoesNotQuit (issue 23 §4): esc on an error status
// dismisses it; only the next esc quits.
func TestEscOnAnErrorLineDoesNotQuit(t *testing.T) {
	_, st := v30(t)
	d := newDriver(t, Options{Store: st, ExportDir: filepath.Join(t.TempDir(), "no", "such")})
	d.key("ctrl+e")
	require.Contains(t, d.screen(), "export failed:")
	d.key("esc")
	require.False(t, d.quit, "esc on the error line quit the browser")
	require.False(t, strings.Contains(d.screen(), "export failed:"), "the error is dismissed")
	d.key("esc")
	require.True(t, d.quit)
}

package browse

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestBrowseNeutralisesBidiAndControls (issue 28, item 7): a title holding
// a right-to-left override (written by another program: the API strips
// bidi controls from titles) and content holding escape sequences and
// isolates show neutralised in the list, the search and the conversation,
// as on every terminal surface (termtext). Before, browse showed the
// U+202E as it was.
func TestBrowseNeutralisesBidiAndControls(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st := openStore(t, path, false)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli", StartedAt: 1767000000})
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, "s", repo.MessageInput{Role: "user", Content: models.Text("okapi \u2066iso\u2069 \x1b]0;pwned\x07 \u202Eevil")})
	require.NoError(t, err)
	fixturetest.Exec(t, path, "UPDATE sessions SET title = 'Quarterly \u202Eweiver' WHERE id = 's'")
	d := newDriver(t, Options{Store: st})
	screens := []string{d.screen()}
	d.typeText("okapi")
	screens = append(screens, d.screen())
	d.key("enter")
	screens = append(screens, d.screen())
	for i, s := range screens {
		for _, bad := range []string{"\u202e", "\u2066", "\u2069", "\x07", "]0;pwned\x07"} {
			require.False(t, strings.Contains(s, bad), "screen %d shows %q raw:\n%s", i, bad, s)
		}
	}
	require.Contains(t, screens[0], "Quarterly \uFFFDweiver")
}

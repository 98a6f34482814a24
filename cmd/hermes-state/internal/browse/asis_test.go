package browse

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestBrowseHermesFilesAsTheyAre (issue 20, section 2): browse on an
// unmigrated copy of every Hermes fixture (opened read-only, as the command
// opens it) lists the sessions the store's listing gives for that version,
// searches as that version of Hermes did ("docker": the hits of Hermes'
// recorded answer, in its order), opens a hit's session, and leaves the
// file and its directory as they were.
func TestBrowseHermesFilesAsTheyAre(t *testing.T) {
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			path := fixtureCopy(t, f.Name+".db")
			hash, listing := fixturetest.SHA256(t, path), fixturetest.Listing(t, filepath.Dir(path))
			st := openStore(t, path, true)
			d := newDriver(t, Options{Store: st, Location: "fixture"})
			want := richIDs(t, st, repo.RichOptions{Limit: 50})
			require.NotEmpty(t, want)
			require.Equal(t, want, rowIDs(d.m.sessions))

			var cases []struct {
				Query   string          `json:"query"`
				Kwargs  map[string]any  `json:"kwargs"`
				Results json.RawMessage `json:"results"`
			}
			f.Get(t, "search", &cases)
			var hermes []struct {
				ID        int64  `json:"id"`
				SessionID string `json:"session_id"`
			}
			require.Equal(t, "docker", cases[0].Query)
			require.Empty(t, cases[0].Kwargs)
			require.NoError(t, json.Unmarshal(cases[0].Results, &hermes))
			require.NotEmpty(t, hermes)
			d.typeText("docker")
			hits := messageHits(d.m.hits) // sessions titled "Docker ..." come first, as title rows
			require.Len(t, hits, len(hermes))
			for i, h := range hermes {
				require.Equal(t, h.ID, hits[i].msgID)
				require.Equal(t, h.SessionID, hits[i].id)
			}
			for d.m.hits[d.m.cursor].role == "title" {
				d.key("down") // to the first message hit
			}
			d.key("enter")
			require.Equal(t, screenConv, d.m.screen)
			require.Equal(t, hermes[0].SessionID, d.m.conv.id)
			all, err := st.Messages().List(context.Background(), d.m.conv.id)
			require.NoError(t, err)
			require.EqualValues(t, len(all), d.m.conv.total)
			require.True(t, strings.Contains(d.screen(), "◀ search hit"))
			d.key("q")
			require.NoError(t, st.Close())
			require.Equal(t, hash, fixturetest.SHA256(t, path), "browsing changed the file")
			require.Equal(t, listing, fixturetest.Listing(t, filepath.Dir(path)), "browsing left files beside the file")
		})
	}
}

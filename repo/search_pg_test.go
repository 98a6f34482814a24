package repo_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest/storetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestSearchFixturesOnPostgres: every Hermes fixture copied into
// PostgreSQL answers every fixture search case with the same sessions and
// messages as the SQLite store (which gives Hermes' answers), ranking aside:
// where a page is cut by limit/offset in rank order, only the page size is
// compared. Older files are compared after their SQLite FTS layout is
// rebuilt to the current one (which is what PostgreSQL indexes by).
func TestSearchFixturesOnPostgres(t *testing.T) {
	pgtest.DSN(t)
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			ctx := fixturetest.Ctx(t)
			src, cleanup, err := hs.OpenSnapshot(ctx, f.CopyDB(t), hs.Config{})
			require.NoError(t, err)
			defer cleanup()
			dst := storetest.Open(t, storetest.Postgres, hs.Config{})
			_, err = hs.Copy(ctx, src, dst, hs.CopyOptions{})
			require.NoError(t, err)
			// PostgreSQL indexes with the current (v30) layout's rules; so
			// must the SQLite snapshot of an older file.
			require.NoError(t, src.Search().Rebuild(ctx, repo.RebuildOptions{}))
			var cases []searchCase
			f.Get(t, "search", &cases)
			for i, c := range cases {
				opt := searchOpts(c.Kwargs)
				a, err := src.Search().Run(ctx, c.Query, opt)
				require.NoError(t, err, "case %d", i)
				b, err := dst.Search().Run(ctx, c.Query, opt)
				require.NoError(t, err, "case %d %q", i, c.Query)
				require.Equal(t, a.Sanitized, b.Sanitized)
				if opt.Offset > 0 && opt.Sort == "" {
					require.Len(t, b.Hits, len(a.Hits), "case %d %q", i, c.Query)
					continue
				}
				ids := func(r []int64) []int64 { sort.Slice(r, func(i, j int) bool { return r[i] < r[j] }); return r }
				var ma, mb []int64
				sa, sb := map[string]bool{}, map[string]bool{}
				for _, h := range a.Hits {
					ma = append(ma, h.ID)
					sa[h.SessionID] = true
				}
				for _, h := range b.Hits {
					mb = append(mb, h.ID)
					sb[h.SessionID] = true
					require.NotNil(t, h.Source)
					require.NotEmpty(t, h.Context, "case %d: context", i)
				}
				require.Equal(t, sa, sb, "case %d %q (%s): sessions; sqlite route %s, postgres route %s", i, c.Query, c.Kind, a.Route, b.Route)
				require.Equal(t, ids(ma), ids(mb), "case %d %q (%s): messages; sqlite route %s, postgres route %s", i, c.Query, c.Kind, a.Route, b.Route)
				if opt.Sort != "" {
					var oa, ob []int64
					for _, h := range a.Hits {
						oa = append(oa, h.ID)
					}
					for _, h := range b.Hits {
						ob = append(ob, h.ID)
					}
					require.Equal(t, oa, ob, "case %d: order with sort %s", i, opt.Sort)
				}
			}
		})
	}
}

package repo_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestMetaRoutingLineageFixtures(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			if !f.Absent("get_meta") {
				for _, e := range f.ExtrasOf("get_meta") {
					v, ok, err := st.Meta().Get(ctx, e.Args[0].(string))
					require.NoError(t, err)
					var want *string
					require.NoError(t, json.Unmarshal(e.Result, &want))
					require.Equal(t, want != nil, ok, e.Args[0])
					require.Equal(t, fixturetest.Deref(want), v)
				}
			}
			if !f.Absent("load_gateway_routing_entries") {
				for _, e := range f.ExtrasOf("load_gateway_routing_entries") {
					scope, _ := e.Kwargs["scope"].(string)
					got, err := st.Routing().Entries(ctx, scope)
					require.NoError(t, err)
					fixturetest.JSONEq(t, e.Result, got, "scope %q", scope)
				}
			}
			// The stored routing rows read back exactly (entry_json text kept).
			for _, row := range f.Rows["gateway_routing"] {
				g, err := st.Routing().Get(ctx, row["scope"].(string), row["session_key"].(string))
				require.NoError(t, err)
				require.Equal(t, row["updated_at"], float64(g.UpdatedAt))
				require.JSONEq(t, row["entry_json"].(string), string(g.EntryJSON))
			}
			lin := st.Lineage()
			if !f.Absent("get_compression_tip") {
				for _, e := range f.ExtrasOf("get_compression_tip") {
					got, err := lin.CompressionTip(ctx, e.Args[0].(string))
					require.NoError(t, err)
					fixturetest.JSONEq(t, e.Result, got, "tip of %v", e.Args[0])
				}
			}
			if !f.Absent("get_compression_lineage") {
				for _, e := range f.ExtrasOf("get_compression_lineage") {
					got, err := lin.CompressionLineage(ctx, e.Args[0].(string))
					require.NoError(t, err)
					fixturetest.JSONEq(t, e.Result, got, "lineage of %v", e.Args[0])
					chain, err := lin.CompressionChain(ctx, e.Args[0].(string))
					require.NoError(t, err)
					fixturetest.JSONEq(t, e.Result, chain, "chain of %v (one continuation: the same ids)", e.Args[0])
				}
			}
			for _, m := range []string{"resolve_session_id", "resolve_resume_session_id"} {
				if f.Absent(m) {
					continue
				}
				for _, e := range f.ExtrasOf(m) {
					var got string
					var err error
					if m == "resolve_session_id" {
						got, err = lin.ResolveID(ctx, e.Args[0].(string))
					} else {
						got, err = lin.ResolveResume(ctx, e.Args[0].(string))
					}
					if string(e.Result) == "null" {
						require.Error(t, err, "%s(%v)", m, e.Args[0])
						continue
					}
					if m == "resolve_resume_session_id" && f.SchemaVersion < 16 {
						// Hermes before v16 resumed the id itself; current Hermes
						// (and we) resume the compression tip.
						tip, terr := lin.CompressionTip(ctx, e.Args[0].(string))
						require.NoError(t, terr)
						require.Equal(t, tip, got)
						continue
					}
					require.NoError(t, err)
					fixturetest.JSONEq(t, e.Result, got, "%s(%v)", m, e.Args[0])
				}
			}
		})
	}
}

func TestMetaFresh(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		m := st.Meta()
		_, ok, err := m.Get(ctx, "nope")
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, m.SetFloat(ctx, "last_auto_prune", 1767225600))
		v, ok, err := m.Get(ctx, "last_auto_prune")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, "1767225600.0", v, "Python str(float) form")
		f, ok, err := m.Float(ctx, "last_auto_prune")
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, 1767225600.0, f)
		require.NoError(t, m.SetInt(ctx, "n", 42))
		n, ok, err := m.Int(ctx, "n")
		require.NoError(t, err)
		require.True(t, ok)
		require.EqualValues(t, 42, n)
		require.NoError(t, m.Set(ctx, "n", "not a number"))
		_, _, err = m.Int(ctx, "n")
		require.ErrorIs(t, err, hs.ErrInvalid)
		ok, err = m.Delete(ctx, "n")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = m.Delete(ctx, "n")
		require.NoError(t, err)
		require.False(t, ok)
		_, _, err = m.Get(ctx, "")
		require.ErrorIs(t, err, hs.ErrInvalid)
		all, err := m.All(ctx)
		require.NoError(t, err)
		require.Equal(t, "1767225600.0", all["last_auto_prune"])

		for in, want := range map[float64]string{0: "0.0", 0.25: "0.25", 1e16: "1e+16", 1e-5: "1e-05", 1767225600.5: "1767225600.5", -3: "-3.0"} {
			require.Equal(t, want, repo.PyFloat(in))
		}
	})
}

func TestRoutingFresh(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		r := st.Routing()
		entry := models.MustJSON(map[string]any{"session_id": "s1", "display_name": "Zoë"})
		require.NoError(t, r.Upsert(ctx, "", "agent:main:telegram:dm:1", entry))
		require.NoError(t, r.Upsert(ctx, "/scope", "agent:main:telegram:dm:1", models.MustJSON(map[string]any{"session_id": "s2"})))
		g, err := r.Get(ctx, "", "agent:main:telegram:dm:1")
		require.NoError(t, err)
		require.JSONEq(t, `{"session_id":"s1","display_name":"Zoë"}`, string(g.EntryJSON))
		// Stored in Python's json.dumps form.
		m, err := r.Entries(ctx, "")
		require.NoError(t, err)
		require.Contains(t, m["agent:main:telegram:dm:1"], `"display_name": "Zo\u00eb"`)
		// Upsert replaces.
		require.NoError(t, r.Upsert(ctx, "", "agent:main:telegram:dm:1", models.MustJSON(map[string]any{"session_id": "s3"})))
		l, err := r.List(ctx, "")
		require.NoError(t, err)
		require.Len(t, l, 1)
		require.JSONEq(t, `{"session_id":"s3"}`, string(l[0].EntryJSON))
		l, err = r.List(ctx, "/scope")
		require.NoError(t, err)
		require.Len(t, l, 1)
		require.ErrorIs(t, r.Upsert(ctx, "", "k", models.JSON(`[1]`)), hs.ErrInvalid)
		require.ErrorIs(t, r.Upsert(ctx, "", "", entry), hs.ErrInvalid)
		ok, err := r.Delete(ctx, "", "agent:main:telegram:dm:1")
		require.NoError(t, err)
		require.True(t, ok)
		_, err = r.Get(ctx, "", "agent:main:telegram:dm:1")
		require.ErrorIs(t, err, hs.ErrNotFound)
	})
}

func TestLineageFresh(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		ss, lin := st.Sessions(), st.Lineage()
		mk := func(id, parent string, mc map[string]any) {
			ns := repo.SessionInput{ID: id, Source: "cli", ParentSessionID: parent}
			if mc != nil {
				ns.ModelConfig = models.MustJSON(mc)
			}
			_, err := ss.Create(ctx, ns)
			require.NoError(t, err)
		}
		mk("r", "", nil)
		_, err := ss.End(ctx, "r", "compression")
		require.NoError(t, err)
		mk("r2", "r", nil)
		mk("sub", "r", map[string]any{"_delegate_from": "r"})
		_, err = ss.End(ctx, "r2", "compression")
		require.NoError(t, err)
		mk("r3", "r2", nil)
		mk("other", "", nil)

		tip, err := lin.CompressionTip(ctx, "r")
		require.NoError(t, err)
		require.Equal(t, "r3", tip)
		tip, err = lin.CompressionTip(ctx, "other")
		require.NoError(t, err)
		require.Equal(t, "other", tip)
		chain, err := lin.CompressionChain(ctx, "r2")
		require.NoError(t, err)
		require.Equal(t, []string{"r", "r2", "r3"}, chain)
		anc, err := lin.Ancestors(ctx, "r3")
		require.NoError(t, err)
		require.Equal(t, []string{"r2", "r"}, anc)
		des, err := lin.Descendants(ctx, "r")
		require.NoError(t, err)
		require.ElementsMatch(t, []string{"r2", "sub", "r3"}, des)
		require.Equal(t, "r3", des[2])
		_, err = lin.CompressionTip(ctx, "missing")
		require.ErrorIs(t, err, hs.ErrNotFound)

		id, err := lin.ResolveID(ctx, "oth")
		require.NoError(t, err)
		require.Equal(t, "other", id)
		_, err = lin.ResolveID(ctx, "r")
		require.NoError(t, err, "an exact id wins over prefix ambiguity")
		_, err = lin.ResolveID(ctx, "s%")
		require.ErrorIs(t, err, hs.ErrNotFound, "LIKE wildcards are literal")
		mk("rx", "", nil)
		_, err = lin.ResolveID(ctx, "r")
		require.NoError(t, err)
		id, err = lin.ResolveResume(ctx, "r")
		require.NoError(t, err)
		require.Equal(t, "r3", id)

		// Flags cover the whole compression lineage, not delegate runs.
		ok, err := lin.SetArchived(ctx, "r2", true)
		require.NoError(t, err)
		require.True(t, ok)
		for id, want := range map[string]int64{"r": 1, "r2": 1, "r3": 1, "sub": 0, "other": 0} {
			s, err := ss.Get(ctx, id)
			require.NoError(t, err)
			require.Equal(t, want, s.Archived, id)
		}
		_, err = lin.SetHidden(ctx, "r", true)
		require.NoError(t, err)
		_, err = lin.SetPinned(ctx, "r3", true)
		require.NoError(t, err)
		s, err := ss.Get(ctx, "r")
		require.NoError(t, err)
		require.EqualValues(t, 1, s.Pinned)
		require.EqualValues(t, 0, s.Hidden, "pinning unhides")
	})
}

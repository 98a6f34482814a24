package repo_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestGatewayExportFixtures: list_gateway_sessions and
// export_session_lineage against what Hermes returned, and
// fts_optimize_available by the layout each fixture has.
func TestGatewayExportFixtures(t *testing.T) {
	checked := map[string]int{}
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			ctx := fixturetest.Ctx(t)
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			for _, e := range f.ExtrasOf("list_gateway_sessions") {
				if string(e.Result) == "null" {
					continue
				}
				got, err := st.Gateway().ListSessions(ctx, "", true)
				require.NoError(t, err)
				want := fixturetest.ToAny(e.Result).([]any)
				require.Len(t, got, len(want))
				for i, w := range want {
					if d := fixturetest.JSONDiff("list_gateway_sessions", fixturetest.Upgraded(t, f, w.(map[string]any), got[i]), fixturetest.ToAny(got[i]), true); d != "" {
						t.Errorf("list_gateway_sessions()[%d] differs:\n%s", i, d)
					}
				}
				checked["list_gateway_sessions"]++
			}
			for _, e := range f.ExtrasOf("export_session_lineage") {
				if string(e.Result) == "null" {
					continue // the fixture's notes: the method is absent from that version
				}
				got, err := st.Portability().Lineage(ctx, e.Args[0].(string))
				require.NoError(t, err)
				if d := fixturetest.JSONDiff("export_session_lineage", fixturetest.ToAny(e.Result), fixturetest.ToAny(got), true); d != "" {
					t.Errorf("export_session_lineage(%v) differs:\n%s", e.Args, d)
				}
				checked["export_session_lineage"]++
			}
			for _, e := range f.ExtrasOf("load_gateway_routing_entries") {
				if string(e.Result) == "null" || len(e.Kwargs) > 0 {
					continue // the default scope's row is the table's first
				}
				// The routing entry of the fixture's Telegram session.
				var entries map[string]string
				require.NoError(t, json.Unmarshal(e.Result, &entries))
				for _, entry := range entries {
					var obj map[string]any
					require.NoError(t, json.Unmarshal([]byte(entry), &obj))
					got, ok, err := st.Gateway().RoutingEntryForSession(ctx, obj["session_id"].(string))
					require.NoError(t, err)
					require.True(t, ok)
					require.JSONEq(t, entry, string(got))
				}
				checked["gateway_routing_entry_for_session"]++
			}
			avail, err := st.Search().OptimizeAvailable(ctx)
			require.NoError(t, err)
			// v10-v22 files keep the inline layout until optimize-storage;
			// v1-v9 files have the external content-only layout; v30 was
			// born current.
			require.Equal(t, f.SchemaVersion < 30, avail, "fts_optimize_available at v%d", f.SchemaVersion)
		})
	}
	require.GreaterOrEqual(t, checked["list_gateway_sessions"], 4)
	require.GreaterOrEqual(t, checked["export_session_lineage"], 3)
	require.GreaterOrEqual(t, checked["gateway_routing_entry_for_session"], 3)
}

func TestContractGateway(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss, gw := st.Sessions(), st.Gateway()
		mk := func(ns repo.SessionInput) {
			_, err := ss.Create(ctx, ns)
			require.NoError(t, err)
		}

		// Routing index replaced as a whole, per scope.
		require.NoError(t, st.Routing().Upsert(ctx, "other", "k0", models.MustJSON(map[string]any{"session_id": "x"})))
		require.NoError(t, gw.ReplaceRoutingEntries(ctx, "", map[string]string{
			"k1": `{"session_id":"g1","n":1}`, "k2": `{"session_id": "g2"}`, "": `{"x":1}`, "k3": ""}))
		got, err := st.Routing().Entries(ctx, "")
		require.NoError(t, err)
		require.Equal(t, map[string]string{"k1": `{"session_id": "g1", "n": 1}`, "k2": `{"session_id": "g2"}`}, got)
		require.NoError(t, gw.ReplaceRoutingEntries(ctx, "", map[string]string{"k2": `{"session_id": "g2b"}`}))
		got, err = st.Routing().Entries(ctx, "")
		require.NoError(t, err)
		require.Len(t, got, 1)
		others, err := st.Routing().Entries(ctx, "other")
		require.NoError(t, err)
		require.Len(t, others, 1, "other scopes are untouched")
		fixturetest.RequireKind(t, gw.ReplaceRoutingEntries(ctx, "", map[string]string{"k": "[1]"}), hs.ErrInvalid)
		entry, ok, err := gw.RoutingEntryForSession(ctx, "g2b")
		require.NoError(t, err)
		require.True(t, ok)
		require.JSONEq(t, `{"session_id": "g2b"}`, string(entry))
		_, ok, err = gw.RoutingEntryForSession(ctx, "g1")
		require.NoError(t, err)
		require.False(t, ok)

		// Gateway sessions: newest row per key, open ones, by activity.
		mk(repo.SessionInput{ID: "t_old", Source: "telegram", SessionKey: "kA", ChatID: "c1", StartedAt: 1700000000})
		mk(repo.SessionInput{ID: "t_new", Source: "telegram", SessionKey: "kA", ChatID: "c1", UserID: "u1", StartedAt: 1700000100})
		mk(repo.SessionInput{ID: "d1", Source: "Discord", SessionKey: "kB", ChatID: "c2", StartedAt: 1700000200})
		mk(repo.SessionInput{ID: "cli", Source: "cli", StartedAt: 1700000300})
		hermesstatetest.AppendAll(t, st, "t_new", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("hi"), Timestamp: 1700000500})
		list, err := gw.ListSessions(ctx, "", true)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "t_new", list[0].ID)
		require.EqualValues(t, 1700000500, list[0].LastActive)
		list, err = gw.ListSessions(ctx, "discord", true)
		require.NoError(t, err)
		require.Len(t, list, 1)
		_, err = ss.End(ctx, "d1", "user_exit")
		require.NoError(t, err)
		list, err = gw.ListSessions(ctx, "DISCORD", true)
		require.NoError(t, err)
		require.Empty(t, list)
		list, err = gw.ListSessions(ctx, "DISCORD", false)
		require.NoError(t, err)
		require.Len(t, list, 1)

		// Origin lookup: sender match wins; ambiguity gives none.
		id, err := gw.FindByOrigin(ctx, repo.OriginQuery{Platform: "TELEGRAM", ChatID: "c1", UserID: "u1"})
		require.NoError(t, err)
		require.Equal(t, "t_new", id)
		id, err = gw.FindByOrigin(ctx, repo.OriginQuery{Platform: "telegram", ChatID: "c1"})
		require.NoError(t, err)
		require.Equal(t, "t_new", id, "one distinct sender")
		mk(repo.SessionInput{ID: "t_other", Source: "telegram", SessionKey: "kC", ChatID: "c1", UserID: "u2", StartedAt: 1700000050})
		id, err = gw.FindByOrigin(ctx, repo.OriginQuery{Platform: "telegram", ChatID: "c1"})
		require.NoError(t, err)
		require.Equal(t, "", id, "two senders and no user id")
		id, err = gw.FindByOrigin(ctx, repo.OriginQuery{Platform: "telegram", ChatID: "c1", UserID: "u3"})
		require.NoError(t, err)
		require.Equal(t, "", id)
		thread := "t9"
		id, err = gw.FindByOrigin(ctx, repo.OriginQuery{Platform: "telegram", ChatID: "c1", ThreadID: &thread})
		require.NoError(t, err)
		require.Equal(t, "", id)

		require.NoError(t, gw.SetExpiryFinalized(ctx, "t_new", true))
		s, err := ss.Get(ctx, "t_new")
		require.NoError(t, err)
		require.EqualValues(t, 1, s.ExpiryFinalized)
		fixturetest.RequireKind(t, gw.SetExpiryFinalized(ctx, "missing", true), hs.ErrNotFound)

		// Peer recovery: by key; a recoverable end is recoverable; a reset
		// boundary after the last activity fences older rows.
		peer, err := gw.FindLatestForPeer(ctx, repo.PeerQuery{Source: "telegram", SessionKey: "kA"})
		require.NoError(t, err)
		require.Equal(t, "t_new", peer.ID, "the row with messages wins")
		_, err = ss.End(ctx, "t_new", "agent_close")
		require.NoError(t, err)
		peer, err = gw.FindLatestForPeer(ctx, repo.PeerQuery{Source: "telegram", SessionKey: "kA"})
		require.NoError(t, err)
		require.Equal(t, "t_new", peer.ID)
		_, err = ss.End(ctx, "t_old", "session_reset")
		require.NoError(t, err)
		peer, err = gw.FindLatestForPeer(ctx, repo.PeerQuery{Source: "telegram", SessionKey: "kA"})
		require.NoError(t, err)
		require.Nil(t, peer, "a /new after the last activity fences recovery")
		c1, dm := "c1", "dm"
		hermesstatetest.Exec(t, st, `UPDATE sessions SET chat_type = 'dm' WHERE id = 't_other'`)
		hermesstatetest.AppendAll(t, st, "t_other", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("x")})
		peer, err = gw.FindLatestForPeer(ctx, repo.PeerQuery{Source: "telegram", SessionKey: "kZ", UserID: "u2", ChatID: &c1, ChatType: &dm})
		require.NoError(t, err)
		require.Equal(t, "t_other", peer.ID, "the peer tuple when the key is unknown")
		peer, err = gw.FindLatestForPeer(ctx, repo.PeerQuery{Source: "telegram", SessionKey: "kZ", UserID: "u2", ChatID: &c1})
		require.NoError(t, err)
		require.Nil(t, peer, "no tuple fallback without a chat type")

		// Never-active keyed rows, and their pruning with routing entries.
		mk(repo.SessionInput{ID: "ghost", Source: "telegram", SessionKey: "kG", StartedAt: 1600000000})
		mk(repo.SessionInput{ID: "ghost_kid", Source: "subagent", ParentSessionID: "ghost", StartedAt: 1600000001,
			ModelConfig: models.MustJSON(map[string]any{"_delegate_from": "ghost"})})
		mk(repo.SessionInput{ID: "fresh_ghost", Source: "telegram", SessionKey: "kH"})
		require.NoError(t, st.Routing().Upsert(ctx, "s2", "kG", models.MustJSON(map[string]any{"session_id": "ghost"})))
		never, err := gw.ListNeverActiveKeyed(ctx, 24*time.Hour)
		require.NoError(t, err)
		var nids []string
		for _, n := range never {
			nids = append(nids, n.ID)
		}
		require.Contains(t, nids, "ghost")
		require.NotContains(t, nids, "fresh_ghost")
		require.NotContains(t, nids, "t_other")
		_, err = gw.ListNeverActiveKeyed(ctx, -time.Hour)
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		sessions, entries, err := gw.PruneNeverActiveKeyed(ctx, 24*time.Hour)
		require.NoError(t, err)
		require.Equal(t, len(never), sessions)
		require.Equal(t, 1, entries)
		_, err = ss.Get(ctx, "ghost_kid")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		_, err = st.Routing().Get(ctx, "s2", "kG")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
	})
}

func TestContractExportLineageAndFTSStatus(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ss := st.Sessions()
		mk := func(id, parent string, started float64, mc models.JSON) {
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli", ParentSessionID: parent, StartedAt: models.Epoch(started), ModelConfig: mc})
			require.NoError(t, err)
		}
		mk("r", "", 1700000000, nil)
		hermesstatetest.AppendAll(t, st, "r", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("one")}, repo.MessageInput{Role: "assistant", Content: fixturetest.Ptr("two")})
		_, err := ss.End(ctx, "r", "compression")
		require.NoError(t, err)
		mk("c", "r", 1700000100, nil)
		mk("reset", "r", 1700000050, models.MustJSON(map[string]any{"_reset_from": "r"}))
		hermesstatetest.AppendAll(t, st, "c", repo.MessageInput{Role: "user", Content: fixturetest.Ptr("three")})

		lin, err := st.Portability().Lineage(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, []string{"r", "c"}, lin.LineageSessionIDs)
		require.Equal(t, "c", lin.ID)
		require.EqualValues(t, 3, lin.MessageCount)
		require.Len(t, lin.Messages, 3)
		require.Len(t, lin.Segments, 2)
		b, err := json.Marshal(lin)
		require.NoError(t, err)
		var flat map[string]any
		require.NoError(t, json.Unmarshal(b, &flat))
		require.Equal(t, "c", flat["id"])
		require.Len(t, flat["segments"], 2)
		lin, err = st.Portability().Lineage(ctx, "r")
		require.NoError(t, err)
		require.Equal(t, []string{"r", "c"}, lin.LineageSessionIDs, "from the root, the oldest continuation")
		lin, err = st.Portability().Lineage(ctx, "reset")
		require.NoError(t, err)
		require.Equal(t, []string{"reset"}, lin.LineageSessionIDs, "a reset fork stands alone")
		require.Equal(t, "r", lin.ResetFrom, "the marker is lifted")
		// Hermes returns None for a missing id; the Go call keeps ErrNotFound
		// (issue 30 item 5).
		_, err = st.Portability().Lineage(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		ids, err := st.Lineage().CompressionLineage(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, []string{"r", "c"}, ids)
		ids, err = st.Lineage().CompressionLineage(ctx, "reset")
		require.NoError(t, err)
		require.Equal(t, []string{"reset"}, ids)
		_, err = st.Lineage().CompressionLineage(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		status, err := st.Search().RebuildStatus(ctx)
		require.NoError(t, err)
		require.Nil(t, status)
		avail, err := st.Search().OptimizeAvailable(ctx)
		require.NoError(t, err)
		require.False(t, avail, "a fresh store has Hermes' current layout")
		require.NoError(t, st.Meta().Set(ctx, "fts_rebuild_high_water", "200"))
		require.NoError(t, st.Meta().Set(ctx, "fts_rebuild_progress", "50"))
		status, err = st.Search().RebuildStatus(ctx)
		require.NoError(t, err)
		require.Equal(t, &repo.RebuildStatus{Pending: true, Total: 200, Indexed: 50, Percent: 25}, status)
		avail, err = st.Search().OptimizeAvailable(ctx)
		require.NoError(t, err)
		require.Equal(t, st.Driver() == hs.DriverSQLite, avail, "an interrupted optimize (SQLite layouts only)")
		require.NoError(t, st.Meta().Set(ctx, "fts_rebuild_high_water", "0"))
		status, err = st.Search().RebuildStatus(ctx)
		require.NoError(t, err)
		require.Nil(t, status)
	})
}

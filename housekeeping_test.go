package hermesstate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestHousekeepingSweepAndArchive(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		hk := st.Housekeeping()
		old := models.Epoch(1_700_000_000)
		now := time.Unix(1_700_100_000, 0)
		mk := func(id, source string, started models.Epoch) {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: source, StartedAt: started})
			require.NoError(t, err)
		}
		mk("tui-old", "tui", old)
		mk("tui-leased", "tui", old)
		mk("tui-kept", "tui", old)
		mk("tg-old", "telegram", old)
		mk("tui-new", "tui", models.EpochOf(now.Add(-time.Minute)))
		ok, err := st.TurnLeases().TryAcquire(ctx, "tui-leased", "agent", repo.LeaseOptions{Now: now, TTL: time.Hour})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = st.SessionState().UpdateCwd(ctx, "tui-kept", "/x", "", "", false)
		require.NoError(t, err)
		// A live gateway whose process started before the rows owns them.
		require.NoError(t, st.Heartbeats().Register(ctx, repo.Heartbeat{BackendID: "b", PID: 1, StartedAt: old - 10, LastHeartbeat: models.EpochOf(now)}))
		swept, err := hk.SweepOrphans(ctx, repo.SweepOptions{MaxIdle: time.Hour, Now: now, ExcludeIDs: []string{"tui-kept"}})
		require.NoError(t, err)
		require.Empty(t, swept, "a live backend could own them")
		swept, err = hk.SweepOrphans(ctx, repo.SweepOptions{MaxIdle: time.Hour, Now: now, ExcludeIDs: []string{"tui-kept"}, IgnoreHeartbeats: true})
		require.NoError(t, err)
		require.Equal(t, []string{"tui-old"}, swept, "leased, excluded, messaging and fresh rows are spared")
		s, err := st.Sessions().Get(ctx, "tui-old")
		require.NoError(t, err)
		require.Equal(t, "startup_orphan_reap", *s.EndReason)
		require.Equal(t, models.EpochOf(now), *s.EndedAt)
		_, err = hk.SweepOrphans(ctx, repo.SweepOptions{})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)

		// Archive stale: tips only, pinned and the Bot Chat kept.
		mk("a-root", "cli", old)
		mk("a-tip", "cli", old+1)
		hermesstatetest.Exec(t, st, "UPDATE sessions SET parent_session_id = 'a-root' WHERE id = 'a-tip'")
		_, err = st.Sessions().End(ctx, "a-root", "compression")
		require.NoError(t, err)
		mk("pinned", "cli", old)
		_, err = st.Lineage().SetPinned(ctx, "pinned", true)
		require.NoError(t, err)
		mk("bot", "cli", old)
		_, err = st.Titles().Set(ctx, "bot", "Bot Chat")
		require.NoError(t, err)
		_, err = st.Lineage().SetHidden(ctx, "bot", true)
		require.NoError(t, err)
		res, err := hk.ArchiveStale(ctx, repo.ArchiveStaleOptions{IdleFor: time.Hour, Now: now, MinInterval: 24 * time.Hour})
		require.NoError(t, err)
		require.False(t, res.Skipped)
		root, err := st.Sessions().Get(ctx, "a-root")
		require.NoError(t, err)
		require.EqualValues(t, 1, root.Archived, "the tip archives its lineage")
		for _, id := range []string{"pinned", "bot", "tui-new"} {
			s, err := st.Sessions().Get(ctx, id)
			require.NoError(t, err)
			require.EqualValues(t, 0, s.Archived, id)
		}
		v, _, err := st.Meta().Get(ctx, "last_auto_archive")
		require.NoError(t, err)
		require.Equal(t, "1700100000.0", v, "str(time.time())")
		res, err = hk.ArchiveStale(ctx, repo.ArchiveStaleOptions{IdleFor: time.Hour, Now: now.Add(time.Hour), MinInterval: 24 * time.Hour})
		require.NoError(t, err)
		require.True(t, res.Skipped)

		// Ghosts.
		mk("ghost", "tui", old)
		_, err = st.Sessions().End(ctx, "ghost", "tui_close")
		require.NoError(t, err)
		n, err := hk.PruneGhosts(ctx, now)
		require.NoError(t, err)
		require.Equal(t, 2, n, "ghost and the swept tui-old (ended, untitled, empty)")
		_, err = st.Sessions().Get(ctx, "ghost")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		// Expired leases and locks.
		ok, err = st.CompressionLocks().TryAcquire(ctx, "x", "h", repo.LeaseOptions{Now: now, TTL: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		leases, locks, err := hk.ClearExpired(ctx, now.Add(2*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, leases)
		require.EqualValues(t, 1, locks)
	})
}

func TestHousekeepingRepairs(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		hk := st.Housekeeping()
		for _, c := range []struct{ id, cwd string }{{"k1", "/boards/ws"}, {"k2", "/boards/ws/a_b"}, {"k3", "/boardsX"}, {"k4", "/Boards/ws/x"}} {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: c.id, Source: "cli", Cwd: c.cwd})
			require.NoError(t, err)
		}
		n, err := hk.RetagKanban(ctx, "/boards/ws/")
		require.NoError(t, err)
		require.EqualValues(t, 3, n, "/boards/ws, under it, and /Boards/ws/x: Hermes' LIKE is ASCII case-insensitive")
		n, err = hk.RetagKanban(ctx, "/boards/ws")
		require.NoError(t, err)
		require.Zero(t, n, "once per root")
		k3, err := st.Sessions().Get(ctx, "k3")
		require.NoError(t, err)
		require.Equal(t, "cli", k3.Source)
		owned, err := st.Inventory().IsKanbanOwned(ctx, "k2")
		require.NoError(t, err)
		require.True(t, owned)

		n, err = hk.BackfillRepoRoots(ctx, map[string]string{"/boardsX": "/repo", "": "/x"})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		n, err = hk.BackfillNullProfiles(ctx, " default ")
		require.NoError(t, err)
		require.EqualValues(t, 4, n)
		n, err = hk.BackfillNullProfiles(ctx, "   ")
		require.NoError(t, err)
		require.Zero(t, n)

		_, err = st.Messages().Append(ctx, "k1", repo.MessageInput{Role: "assistant", Content: models.Text(" [memory] "),
			ToolCalls: models.MustJSON([]any{map[string]any{"id": "c1"}})})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "k1", repo.MessageInput{Role: "assistant", Content: models.Text("[not a marker] ok")})
		require.NoError(t, err)
		dry, err := hk.PurgeStaleToolCallMarkers(ctx, true, false)
		require.NoError(t, err)
		require.Len(t, dry.RowIDs, 1)
		res, err := hk.PurgeStaleToolCallMarkers(ctx, false, false)
		require.NoError(t, err)
		require.Len(t, res.RowIDs, 1)
		msgs, err := st.Messages().List(ctx, "k1")
		require.NoError(t, err)
		require.Equal(t, "", *msgs[0].Content)
		if res.BackupPath != "" {
			require.FileExists(t, res.BackupPath)
		}
		_, err = hk.OptimizeFTS(ctx)
		require.NoError(t, err)

		counts, err := st.Inventory().CountBySource(ctx, repo.CountBySourceOptions{})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"kanban": 3, "cli": 1}, counts)
		hermesstatetest.Exec(t, st, "UPDATE sessions SET source = '' WHERE id = 'k3'")
		_, err = st.Lineage().SetArchived(ctx, "k4", true)
		require.NoError(t, err)
		counts, err = st.Inventory().CountBySource(ctx, repo.CountBySourceOptions{})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"kanban": 2, "cli": 1}, counts, "'' counts as cli, archived rows out")

		_, err = st.Sessions().End(ctx, "k1", "cli_close")
		require.NoError(t, err)
		ended, err := st.Inventory().PruneCount(ctx, repo.PruneCountOptions{})
		require.NoError(t, err)
		require.EqualValues(t, 1, ended)
		open, err := st.Inventory().PruneCount(ctx, repo.PruneCountOptions{Open: true})
		require.NoError(t, err)
		require.EqualValues(t, 3, open)
		recent, err := st.Inventory().PruneCount(ctx, repo.PruneCountOptions{OlderThan: time.Hour})
		require.NoError(t, err)
		require.Zero(t, recent)

		fork, src, err := st.Inventory().DeclaredScope(ctx, "k2")
		require.NoError(t, err)
		require.False(t, fork)
		require.Equal(t, "kanban", src)
		fork, src, err = st.Inventory().DeclaredScope(ctx, "missing")
		require.NoError(t, err)
		require.False(t, fork)
		require.Empty(t, src)
	})
}

func TestStoreHousekeep(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		now := time.Unix(1_700_100_000, 0)
		empty, err := st.Housekeep(ctx, hs.HousekeepOptions{})
		require.NoError(t, err)
		require.Equal(t, &hs.HousekeepReport{Swept: []string{}, Heartbeats: []string{}, Handoffs: []string{}}, empty, "nothing unless asked")
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "h", Source: "cli", StartedAt: 1_700_000_000})
		require.NoError(t, err)
		ok, err := st.Handoffs().Request(ctx, "h", "telegram")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = st.Handoffs().Claim(ctx, "h")
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, st.Heartbeats().Register(ctx, repo.Heartbeat{BackendID: "dead", PID: 1, StartedAt: 1, LastHeartbeat: 1_700_000_000}))
		rep, err := st.Housekeep(ctx, hs.HousekeepOptions{Now: now, StaleHandoffs: true, StaleHeartbeats: time.Hour, ExpiredLeases: true,
			SweepOrphans: &repo.SweepOptions{MaxIdle: time.Hour, Sources: repo.StateOwnedSources, IgnoreHeartbeats: true}})
		require.NoError(t, err)
		require.Equal(t, []string{"h"}, rep.Handoffs)
		require.Equal(t, []string{"dead"}, rep.Heartbeats)
		require.Equal(t, []string{"h"}, rep.Swept)
		state, err := st.Handoffs().Get(ctx, "h")
		require.NoError(t, err)
		require.Equal(t, "failed", *state.State)
		require.Equal(t, hs.StaleHandoffReason, *state.Error)
	})
}

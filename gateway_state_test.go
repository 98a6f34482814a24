package hermesstate_test

import (
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

func TestHeartbeats(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		hb := st.Heartbeats()
		require.NoError(t, hb.Register(ctx, repo.Heartbeat{BackendID: "default@h:1", PID: 1, StartedAt: 1000.5, LastHeartbeat: 2000, Profile: "default", Host: "h"}))
		require.NoError(t, hb.Register(ctx, repo.Heartbeat{BackendID: "work@h:2", PID: 2, StartedAt: 1500}))
		// Re-registering replaces every column.
		require.NoError(t, hb.Register(ctx, repo.Heartbeat{BackendID: "default@h:1", PID: 11, StartedAt: 1100, LastHeartbeat: 2100, Profile: "default", Host: "h2"}))
		list, err := hb.List(ctx)
		require.NoError(t, err)
		require.Len(t, list, 2)
		require.Equal(t, "work@h:2", list[0].BackendID, "newest heartbeat first (the zero one was stamped now)")
		require.InDelta(t, float64(models.Now()), float64(list[0].LastHeartbeat), 5)
		require.Equal(t, "", list[0].Profile)
		require.Equal(t, repo.Heartbeat{BackendID: "default@h:1", PID: 11, StartedAt: 1100, LastHeartbeat: 2100, Profile: "default", Host: "h2"}, list[1])

		gone, err := hb.Prune(ctx, 0, time.Time{})
		require.NoError(t, err)
		require.Empty(t, gone, "a max age <= 0 deletes nothing")
		gone, err = hb.Prune(ctx, 100*time.Second, time.Unix(2200, 0))
		require.NoError(t, err)
		require.Empty(t, gone, "2100 is not older than 2200-100")
		gone, err = hb.Prune(ctx, 99*time.Second, time.Unix(2200, 0))
		require.NoError(t, err)
		require.Equal(t, []string{"default@h:1"}, gone)
		ok, err := hb.Clear(ctx, "work@h:2")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = hb.Clear(ctx, "work@h:2")
		require.NoError(t, err)
		require.False(t, ok)
		_, err = hb.Clear(ctx, "")
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
	})
}

func TestHandoffs(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		h := st.Handoffs()
		for i, id := range []string{"a", "b", "c"} {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli", StartedAt: models.Epoch(1000 + i)})
			require.NoError(t, err)
		}
		state, err := h.Get(ctx, "a")
		require.NoError(t, err)
		require.Nil(t, state.State)
		_, err = h.Get(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		ok, err := h.Request(ctx, "a", "telegram")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = h.Request(ctx, "a", "discord")
		require.NoError(t, err)
		require.False(t, ok, "a handoff in flight")
		ok, err = h.Request(ctx, "missing", "discord")
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = h.Request(ctx, "b", "discord")
		require.NoError(t, err)
		require.True(t, ok)

		pending, err := h.Pending(ctx, repo.PendingOptions{})
		require.NoError(t, err)
		require.Len(t, pending, 2)
		require.Equal(t, "a", pending[0].ID, "oldest first")
		one, err := h.Pending(ctx, repo.PendingOptions{Limit: 1})
		require.NoError(t, err)
		require.Len(t, one, 1)

		ok, err = h.Claim(ctx, "a")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = h.Claim(ctx, "a")
		require.NoError(t, err)
		require.False(t, ok, "one claimer wins")
		// A waiter's compare-and-swap fail does not override a claim.
		ok, err = h.Fail(ctx, "a", "gave up", repo.FailOptions{OnlyStates: []string{repo.HandoffPending}})
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, h.Complete(ctx, "a"))
		state, err = h.Get(ctx, "a")
		require.NoError(t, err)
		require.Equal(t, "completed", *state.State)
		require.Equal(t, "telegram", *state.Platform)
		require.Nil(t, state.Error)
		fixturetest.RequireKind(t, h.Complete(ctx, "missing"), hs.ErrNotFound)

		// Stale running handoffs are failed; the reason keeps 500 characters.
		ok, err = h.Claim(ctx, "b")
		require.NoError(t, err)
		require.True(t, ok)
		long := strings.Repeat("é", 600)
		ids, err := h.ReclaimStaleRunning(ctx, long)
		require.NoError(t, err)
		require.Equal(t, []string{"b"}, ids)
		state, err = h.Get(ctx, "b")
		require.NoError(t, err)
		require.Equal(t, "failed", *state.State)
		require.Equal(t, strings.Repeat("é", 500), *state.Error)
		ids, err = h.ReclaimStaleRunning(ctx, "x")
		require.NoError(t, err)
		require.Empty(t, ids)
		// A failed handoff may be requested again; Fail without states
		// fails it whatever it is.
		ok, err = h.Request(ctx, "b", "slack")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = h.Fail(ctx, "b", "down", repo.FailOptions{})
		require.NoError(t, err)
		require.True(t, ok)
		has, err := h.Pending(ctx, repo.PendingOptions{Limit: 1})
		require.NoError(t, err)
		require.Empty(t, has)
	})
}

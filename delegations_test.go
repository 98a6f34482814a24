package hermesstate_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestDelegations(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		d := st.Delegations()
		t0 := time.Unix(1_700_000_000, 0)
		require.NoError(t, d.Dispatch(ctx, repo.DelegationDispatch{DelegationID: "deleg_1", OriginSession: "agent:main:telegram:dm:1",
			Task: map[string]any{"goal": "summarise", "toolsets": []string{"web"}}, OwnerPID: 1, DispatchedAt: t0, Now: t0}))
		fixturetest.RequireKind(t, d.Dispatch(ctx, repo.DelegationDispatch{DelegationID: "deleg_1"}), hs.ErrConflict)
		got, err := d.Get(ctx, "deleg_1")
		require.NoError(t, err)
		require.Equal(t, "running", got.State)
		require.Equal(t, "pending", got.DeliveryState)
		require.Equal(t, `{"goal": "summarise", "toolsets": ["web"]}`, *got.TaskJSON)
		require.Equal(t, models.Epoch(1_700_000_000), got.DispatchedAt)

		// The owner (pid 1 here) is alive: nothing recovered; then it is not.
		n, err := d.RecoverAbandoned(ctx, nil, t0)
		require.NoError(t, err)
		require.Zero(t, n)
		require.NoError(t, d.Dispatch(ctx, repo.DelegationDispatch{DelegationID: "deleg_2", OwnerPID: 1}))
		n, err = d.RecoverAbandoned(ctx, func(pid int64, _ *int64) bool { return false }, t0.Add(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		got, err = d.Get(ctx, "deleg_2")
		require.NoError(t, err)
		require.Equal(t, "unknown", got.State)
		require.Contains(t, *got.EventJSON, `"status": "unknown"`)
		require.Equal(t, `{"status": "unknown", "summary": null, "error": "Delegation owner exited before recording a terminal result; outcome unknown."}`, *got.ResultJSON)

		require.NoError(t, d.Complete(ctx, "deleg_1", repo.DelegationCompletion{Event: models.MustJSON(map[string]any{"type": "async_delegation"}),
			Result: models.MustJSON(map[string]any{"summary": "done"}), CompletedAt: t0.Add(2 * time.Minute)}))
		fixturetest.RequireKind(t, d.Complete(ctx, "nope", repo.DelegationCompletion{}), hs.ErrNotFound)
		und, err := d.Undelivered(ctx)
		require.NoError(t, err)
		require.Len(t, und, 2)
		require.Equal(t, "deleg_2", und[0].DelegationID, "by completion time")

		// One of N concurrent consumers claims a delivery.
		var wins int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				ok, err := d.ClaimDelivery(ctx, "deleg_1", fmt.Sprintf("c%d", i), time.Time{})
				require.NoError(t, err)
				if ok {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			}(i)
		}
		wg.Wait()
		require.Equal(t, 1, wins)
		got, err = d.Get(ctx, "deleg_1")
		require.NoError(t, err)
		claim := *got.DeliveryClaim
		require.EqualValues(t, 1, got.DeliveryAttempts)
		ok, err := d.SettleDelivery(ctx, "deleg_1", repo.Settlement{ClaimID: "other", Outcome: repo.DeliveryDelivered})
		require.NoError(t, err)
		require.False(t, ok, "another claim cannot settle it")
		// A stale claim is taken over.
		ok, err = d.ClaimDelivery(ctx, "deleg_1", "late", time.Now().Add(repo.DeliveryClaimTTL+time.Second))
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = d.SettleDelivery(ctx, "deleg_1", repo.Settlement{ClaimID: claim, Outcome: repo.DeliveryReleased})
		require.NoError(t, err)
		require.False(t, ok, "the first claim lost it")
		ok, err = d.SettleDelivery(ctx, "deleg_1", repo.Settlement{ClaimID: "late", Outcome: repo.DeliveryDelivered})
		require.NoError(t, err)
		require.True(t, ok)
		got, err = d.Get(ctx, "deleg_1")
		require.NoError(t, err)
		require.Equal(t, "delivered", got.DeliveryState)
		require.Nil(t, got.DeliveryClaim)

		// Released claims burn attempts: the 8th release drops the delivery.
		for i := 0; i < repo.MaxDeliveryAttempts; i++ {
			ok, err = d.ClaimDelivery(ctx, "deleg_2", "c", time.Time{})
			require.NoError(t, err)
			require.True(t, ok)
			ok, err = d.SettleDelivery(ctx, "deleg_2", repo.Settlement{ClaimID: "c", Outcome: repo.DeliveryReleased})
			require.NoError(t, err)
			require.True(t, ok)
		}
		got, err = d.Get(ctx, "deleg_2")
		require.NoError(t, err)
		require.Equal(t, "dropped", got.DeliveryState)
		ok, err = d.ClaimDelivery(ctx, "legacy-event", "c", time.Time{})
		require.NoError(t, err)
		require.True(t, ok, "an event older than the ledger is claimable")
		_, err = d.SettleDelivery(ctx, "deleg_2", repo.Settlement{ClaimID: "c", Outcome: "bogus"})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
	})
}

func TestDelegationAppendDelivery(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		d := st.Delegations()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "root", Source: "cli"})
		require.NoError(t, err)
		meta := models.MustJSON(map[string]any{"delegation_id": "deleg_9"})
		id, err := d.AppendDelivery(ctx, "root", "result text", meta)
		require.NoError(t, err)
		require.Positive(t, id)
		// Rotation: the tip finds the delivery its ancestor holds.
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "tip", Source: "cli", ParentSessionID: "root"})
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, "root", "compression")
		require.NoError(t, err)
		again, err := d.AppendDelivery(ctx, "tip", "result text", meta)
		require.NoError(t, err)
		require.Equal(t, id, again, "recorded once across the lineage")
		// Another notice of the same delegation is a row of its own.
		other, err := d.AppendDelivery(ctx, "tip", "progress", models.MustJSON(map[string]any{"delegation_id": "deleg_9", "delivery_notice": "progress"}))
		require.NoError(t, err)
		require.NotEqual(t, id, other)
		tip, err := st.Sessions().Get(ctx, "tip")
		require.NoError(t, err)
		require.EqualValues(t, 1, tip.MessageCount)
		msgs, err := st.Messages().List(ctx, "tip")
		require.NoError(t, err)
		require.Equal(t, "async_delegation_complete", *msgs[0].DisplayKind)
		require.NotNil(t, msgs[0].DisplayIdentity)

		// Guards: a session ended by compression, another holder's live lease.
		_, err = d.AppendDelivery(ctx, "root", "x", models.MustJSON(map[string]any{"delegation_id": "deleg_10"}))
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		ok, err := st.TurnLeases().TryAcquire(ctx, "tip", "agent-1", repo.LeaseOptions{})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = d.AppendDelivery(ctx, "tip", "x", models.MustJSON(map[string]any{"delegation_id": "deleg_11"}))
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		_, err = d.AppendDelivery(ctx, "tip", "x", models.MustJSON(map[string]any{"other": 1}))
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = d.AppendDelivery(ctx, "missing", "x", models.MustJSON(map[string]any{"delegation_id": "d"}))
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
	})
}

package hermesstate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestTranscriptFences: Hermes' transcript write guards on the turn lease.
// An append naming a holder (turn_lease_holder) lands only while that
// holder holds the conversation's lease (keyed by the compression root),
// renewing its expired row nobody took; a rewrite with
// RejectActiveTurnLease (reject_active_turn_lease) is refused under any
// live lease and clears a stale one. Refused writes leave nothing.
func TestTranscriptFences(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tl := st.TurnLeases()
		for _, id := range []string{"root", "tip"} {
			in := repo.SessionInput{ID: id, Source: "cli"}
			if id == "tip" {
				in.ParentSessionID = "root"
			}
			_, err := st.Sessions().Create(ctx, in)
			require.NoError(t, err)
		}
		_, err := st.Sessions().End(ctx, "root", "compression")
		require.NoError(t, err)
		msg := func(text, holder string) repo.MessageInput {
			return repo.MessageInput{Role: "user", Content: &text, TurnLeaseHolder: holder}
		}
		count := func() int64 {
			n, err := st.Messages().Count(ctx, "tip")
			require.NoError(t, err)
			return n
		}

		// No lease: a fenced append is refused.
		_, err = st.Messages().Append(ctx, "tip", msg("a", "A"))
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		require.Zero(t, count())

		// A holds the conversation's lease (taken on the root): A writes, B
		// does not.
		ok, err := tl.TryAcquire(ctx, "root", "A", repo.LeaseOptions{TTL: time.Minute, Now: time.Now().Add(-2 * time.Minute)})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = st.Messages().Append(ctx, "tip", msg("b", "B"))
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		// A's lease expired and nobody took it: A's write renews it.
		_, err = st.Messages().Append(ctx, "tip", msg("a1", "A"))
		require.NoError(t, err)
		l, found, err := tl.Get(ctx, "tip", time.Time{})
		require.NoError(t, err)
		require.True(t, found)
		require.True(t, l.Live, "renewed by the fenced write")
		require.Equal(t, "A", l.Holder)
		require.InDelta(t, float64(time.Now().Add(repo.DefaultLeaseTTL).Unix()), float64(l.ExpiresAt), 5)

		// A batch is fenced once; two holders in one batch are refused.
		_, err = st.Messages().AppendBatch(ctx, "tip", []repo.MessageInput{msg("x", "A"), msg("y", "B")})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		ids, err := st.Messages().AppendBatch(ctx, "tip", []repo.MessageInput{msg("a2", "A"), msg("a3", "")})
		require.NoError(t, err)
		require.Len(t, ids, 2)
		_, err = st.Messages().AppendBatch(ctx, "tip", []repo.MessageInput{msg("b1", ""), msg("b2", "B")})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		require.EqualValues(t, 3, count())
		// Unfenced appends are not concerned by the lease.
		_, err = st.Messages().Append(ctx, "tip", msg("free", ""))
		require.NoError(t, err)

		// A rewrite rejecting an active lease is refused while A holds it,
		// and leaves the transcript as it was.
		_, err = st.Transcript().Replace(ctx, "tip", []repo.MessageInput{msg("new", "")}, repo.ReplaceOptions{ArchiveDropped: true, RejectActiveTurnLease: true})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		require.EqualValues(t, 4, count())
		// After B takes the expired lease over, A's fenced write is refused.
		ok, err = tl.TryAcquire(ctx, "tip", "B", repo.LeaseOptions{TTL: time.Second, Now: time.Now().Add(repo.DefaultLeaseTTL + time.Minute)})
		require.NoError(t, err)
		require.True(t, ok, "taken over after expiry")
		_, err = st.Messages().Append(ctx, "tip", msg("late", "A"))
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		// B lets go; C leaves a lease that expired a minute ago.
		ok, err = tl.Release(ctx, "tip", "B")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tl.TryAcquire(ctx, "tip", "C", repo.LeaseOptions{TTL: time.Second, Now: time.Now().Add(-time.Minute)})
		require.NoError(t, err)
		require.True(t, ok)
		// A stale lease does not stop the rewrite, and is cleared by it.
		n, err := st.Transcript().Replace(ctx, "tip", []repo.MessageInput{msg("new", "")}, repo.ReplaceOptions{ArchiveDropped: true, RejectActiveTurnLease: true})
		require.NoError(t, err)
		require.Equal(t, 1, n)
		_, found, err = tl.Get(ctx, "tip", time.Time{})
		require.NoError(t, err)
		require.False(t, found, "the stale lease went with the rewrite")
		// Without the option a rewrite ignores leases (Hermes' default).
		ok, err = tl.TryAcquire(ctx, "tip", "D", repo.LeaseOptions{TTL: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = st.Transcript().Replace(ctx, "tip", []repo.MessageInput{msg("again", "")}, repo.ReplaceOptions{ArchiveDropped: true})
		require.NoError(t, err)
	})
}

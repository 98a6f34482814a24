package hermesstate_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

func fp(f float64) *float64 { return &f }

// TestTokenQueue: queued reports end in the rows exactly as the same reports
// applied one by one (merged adjacent deltas, absolute reports and route
// changes kept apart), Flush makes them visible, Close drains the queue.
func TestTokenQueue(t *testing.T) {
	reports := []struct {
		sid string
		u   repo.TokenUpdate
	}{
		{"a", repo.TokenUpdate{InputTokens: 10, OutputTokens: 1, APICallCount: 1, Model: "m", BillingProvider: "p", EstimatedCostUSD: fp(0.5)}},
		{"a", repo.TokenUpdate{InputTokens: 20, OutputTokens: 2, APICallCount: 1, Model: "m", BillingProvider: "p"}},
		{"b", repo.TokenUpdate{InputTokens: 5, APICallCount: 1, Model: "m", BillingProvider: "p", ActualCostUSD: fp(0.25)}},
		{"a", repo.TokenUpdate{InputTokens: 7, APICallCount: 1, Model: "m2", BillingProvider: "p"}},
		{"a", repo.TokenUpdate{InputTokens: 100, OutputTokens: 50, APICallCount: 9, Absolute: true}},
		{"a", repo.TokenUpdate{InputTokens: 1, APICallCount: 1, Model: "m2", BillingProvider: "p", EstimatedCostUSD: fp(0.125)}},
	}
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		ref := hermesstatetest.Open(t, hermesstatetest.SQLite, hs.Config{Path: filepath.Join(t.TempDir(), "ref.db")})
		for _, s := range []*hs.Store{st, ref} {
			for _, id := range []string{"a", "b"} {
				_, err := s.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
				require.NoError(t, err)
			}
		}
		for _, r := range reports {
			require.NoError(t, st.TokenQueue().Queue(ctx, r.sid, r.u))
			require.NoError(t, ref.Sessions().UpdateTokenCounts(ctx, r.sid, r.u))
		}
		require.NoError(t, st.TokenQueue().Flush(ctx))
		for _, id := range []string{"a", "b"} {
			got, err := st.Sessions().Get(ctx, id)
			require.NoError(t, err)
			want, err := ref.Sessions().Get(ctx, id)
			require.NoError(t, err)
			require.Equal(t, [6]int64{want.InputTokens, want.OutputTokens, want.CacheReadTokens, want.CacheWriteTokens, want.ReasoningTokens, want.APICallCount},
				[6]int64{got.InputTokens, got.OutputTokens, got.CacheReadTokens, got.CacheWriteTokens, got.ReasoningTokens, got.APICallCount}, id)
			require.Equal(t, want.EstimatedCostUSD, got.EstimatedCostUSD, id)
			require.Equal(t, want.ActualCostUSD, got.ActualCostUSD, id)
			require.Equal(t, want.Model, got.Model, id)
			gu, err := st.Usage().Rows(ctx, id)
			require.NoError(t, err)
			wu, err := ref.Usage().Rows(ctx, id)
			require.NoError(t, err)
			require.Equal(t, len(wu), len(gu), id)
		}
		fixturetest.RequireKind(t, st.TokenQueue().Queue(ctx, "", repo.TokenUpdate{}), hs.ErrInvalid)
		// Close drains what is still queued.
		require.NoError(t, st.TokenQueue().Queue(ctx, "b", repo.TokenUpdate{InputTokens: 1000, APICallCount: 1}))
		require.NoError(t, st.TokenQueue().Close(ctx))
		b, err := st.Sessions().Get(ctx, "b")
		require.NoError(t, err)
		require.EqualValues(t, 1005, b.InputTokens)
		// After Close the queue applies synchronously.
		require.NoError(t, st.TokenQueue().Queue(ctx, "b", repo.TokenUpdate{InputTokens: 1, APICallCount: 1}))
		b, err = st.Sessions().Get(ctx, "b")
		require.NoError(t, err)
		require.EqualValues(t, 1006, b.InputTokens)
	})
}

// TestTokenQueueStoreClose: the store's Close applies what is still queued.
func TestTokenQueueStoreClose(t *testing.T) {
	ctx := fixturetest.Ctx(t)
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
	require.NoError(t, err)
	for i := 0; i < 50; i++ {
		require.NoError(t, st.TokenQueue().Queue(ctx, "s", repo.TokenUpdate{InputTokens: 2, APICallCount: 1, Model: "m"}))
	}
	require.NoError(t, st.Close())
	fixturetest.RequireKind(t, st.TokenQueue().Queue(ctx, "s", repo.TokenUpdate{InputTokens: 1}), hs.ErrClosed)
	st, err = hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()
	s, err := st.Sessions().Get(ctx, "s")
	require.NoError(t, err)
	require.EqualValues(t, 100, s.InputTokens)
	require.EqualValues(t, 50, s.APICallCount)
}

package mcpserver_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/repo"
)

// TestGetSessionCoordination: get_session carries the session's handoff,
// its conversation's turn lease and its compression lock, read only (the
// call takes and clears nothing), on SQLite and PostgreSQL.
func TestGetSessionCoordination(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		checkCoordinationTool(t, openSQLite(t, filepath.Join(t.TempDir(), "state.db")))
	})
	t.Run("postgres", func(t *testing.T) { checkCoordinationTool(t, openPG(t)) })
}

func checkCoordinationTool(t *testing.T, st *hs.Store) {
	ctx := context.Background()
	for _, id := range []string{"20260101_a", "20260101_b"} {
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
		require.NoError(t, err)
	}
	type coordOut struct {
		Session struct {
			Handoff         *mcpserver.HandoffInfo `json:"handoff"`
			TurnLease       *mcpserver.LeaseInfo   `json:"turn_lease"`
			CompressionLock *mcpserver.LeaseInfo   `json:"compression_lock"`
		} `json:"session"`
	}
	cs := connect(t, st, mcpserver.Options{})
	get := func(id string) coordOut {
		return call[coordOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": id})
	}
	none := get("20260101_a")
	require.Nil(t, none.Session.Handoff)
	require.Nil(t, none.Session.TurnLease)
	require.Nil(t, none.Session.CompressionLock)

	ok, err := st.TurnLeases().TryAcquire(ctx, "20260101_a", "gw-1", repo.LeaseOptions{TTL: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	old := time.Now().Add(-time.Hour)
	ok, err = st.CompressionLocks().TryAcquire(ctx, "20260101_a", "cmp-1", repo.LeaseOptions{Now: old, TTL: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = st.Handoffs().Request(ctx, "20260101_a", "telegram")
	require.NoError(t, err)
	require.True(t, ok)

	g := get("20260101_a")
	require.NotNil(t, g.Session.TurnLease)
	require.Equal(t, "gw-1", g.Session.TurnLease.Holder)
	require.True(t, g.Session.TurnLease.Live)
	require.Equal(t, "20260101_a", g.Session.TurnLease.Key)
	require.NotNil(t, g.Session.CompressionLock)
	require.Equal(t, "cmp-1", g.Session.CompressionLock.Holder)
	require.False(t, g.Session.CompressionLock.Live, "an expired lock is shown as such")
	require.InDelta(t, float64(old.Add(time.Minute).Unix()), g.Session.CompressionLock.ExpiresAt, 1)
	require.Equal(t, &mcpserver.HandoffInfo{State: "pending", Platform: "telegram"}, g.Session.Handoff)
	require.Nil(t, get("20260101_b").Session.TurnLease)

	// Reading cleared nothing: the expired lock is still there.
	l, found, err := st.CompressionLocks().Get(ctx, "20260101_a", time.Now())
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "cmp-1", l.Holder)
}

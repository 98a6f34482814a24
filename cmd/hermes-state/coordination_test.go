package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// coordStore writes a store with a live turn lease (holder with an escape
// sequence: stored text is hostile), an expired compression lock and a
// running handoff, and returns its path.
func coordStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: db})
	require.NoError(t, err)
	defer st.Close()
	for _, id := range []string{"20260101_root", "20260101_tip", "20260102_other"} {
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
		require.NoError(t, err)
	}
	require.NoError(t, st.Compressor().PublishChild(ctx, repo.PublishChildInput{ParentID: "20260101_root", ChildID: "20260101_tip2", Source: "cli",
		SkipLeaseCheck: true, Messages: []repo.MessageInput{{Role: "user", Content: textPtr("carry")}}}))
	ok, err := st.TurnLeases().TryAcquire(ctx, "20260101_tip2", "agent\x1b[31m-1", repo.LeaseOptions{TTL: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = st.CompressionLocks().TryAcquire(ctx, "20260102_other", "compressor", repo.LeaseOptions{Now: time.Now().Add(-time.Hour), TTL: time.Minute})
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = st.Handoffs().Request(ctx, "20260102_other", "telegram")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = st.Handoffs().Claim(ctx, "20260102_other")
	require.NoError(t, err)
	require.True(t, ok)
	return db
}

func textPtr(s string) *string { return &s }

// TestCLICoordinationViews: `sessions show` prints a session's lease (keyed
// by its compression root), lock and handoff, `sessions leases` lists them,
// doctor reports the expired lock and the running handoff as information
// with the command that clears them — and none of these reads takes or
// clears anything.
func TestCLICoordinationViews(t *testing.T) {
	db := coordStore(t)
	out, err := run(t, "--db", db, "sessions", "show", "20260101_tip2")
	require.NoError(t, err)
	require.Contains(t, out, "turn lease:")
	require.Contains(t, out, "held by agent\uFFFD[31m-1 until", "the holder's escape sequence is neutralised")
	require.NotContains(t, out, "\x1b")
	require.Contains(t, out, "(conversation 20260101_root)")
	out, err = run(t, "--db", db, "sessions", "show", "20260102_other")
	require.NoError(t, err)
	require.Contains(t, out, "compression:")
	require.Contains(t, out, "held by compressor expired at")
	require.Contains(t, out, "handoff:")
	require.Contains(t, out, "running to telegram")

	js, err := run(t, "--db", db, "--json", "sessions", "show", "20260101_tip2")
	require.NoError(t, err)
	var v struct {
		ID        string      `json:"id"`
		TurnLease *repo.Lease `json:"turn_lease"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &v))
	require.Equal(t, "20260101_tip2", v.ID)
	require.NotNil(t, v.TurnLease)
	require.True(t, v.TurnLease.Live)
	require.Equal(t, "20260101_root", v.TurnLease.Key)

	out, err = run(t, "--db", db, "sessions", "leases")
	require.NoError(t, err)
	require.Contains(t, out, "turn lease")
	require.Contains(t, out, "compression")
	require.NotContains(t, out, "handoff", "a running handoff is not pending")

	out, _ = run(t, "--db", db, "doctor")
	require.Contains(t, out, "expired compression lock")
	require.Contains(t, out, "clear: hermes-state --db "+db+" maintain --expired-leases", "the clearing command names the file")
	require.Contains(t, out, "handoff(s) in state running")
	require.Contains(t, out, "clear: hermes-state --db "+db+" maintain --stale-handoffs")

	// Nothing above took, refreshed or cleared a row.
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: db, ReadOnly: true})
	require.NoError(t, err)
	defer st.Close()
	leases, err := st.TurnLeases().List(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, leases, 1)
	require.Equal(t, "agent\x1b[31m-1", leases[0].Holder)
	locks, err := st.CompressionLocks().List(ctx, time.Time{})
	require.NoError(t, err)
	require.Len(t, locks, 1)
	h, err := st.Handoffs().Get(ctx, "20260102_other")
	require.NoError(t, err)
	require.Equal(t, "running", *h.State)
}

// TestCLIMaintainHousekeeping: maintain's housekeeping steps clear the
// expired lock and fail the running handoff, keep the live lease, and say
// so in text and JSON.
func TestCLIMaintainHousekeeping(t *testing.T) {
	db := coordStore(t)
	out, err := run(t, "--db", db, "maintain", "--expired-leases", "--stale-handoffs")
	require.NoError(t, err)
	require.Contains(t, out, "leases     0 turn leases and 1 compression lock expired, cleared")
	require.Contains(t, out, "handoffs   1 handoff left running failed")
	js, err := run(t, "--db", db, "--json", "maintain", "--expired-leases")
	require.NoError(t, err)
	var rep struct {
		Checkpointed bool `json:"checkpointed"`
		Housekeeping struct {
			ExpiredLocks int64 `json:"expired_locks"`
		} `json:"housekeeping"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &rep))
	require.Zero(t, rep.Housekeeping.ExpiredLocks)
	out, err = run(t, "--db", db, "sessions", "show", "20260101_tip2")
	require.NoError(t, err)
	require.Contains(t, out, "until", "the live lease stays")
	out, err = run(t, "--db", db, "sessions", "show", "20260102_other")
	require.NoError(t, err)
	require.True(t, strings.Contains(out, "failed to telegram"), out)
	_, err = run(t, "--db", db, "maintain", "--sweep-orphans", "-1s")
	require.Error(t, err)
}

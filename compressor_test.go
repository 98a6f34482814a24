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

func TestCompressorPublishChild(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		c := st.Compressor()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "p", Source: "telegram", SessionKey: "agent:main:telegram:dm:1",
			ChatID: "1", ChatType: "dm", UserID: "u1", DisplayName: "Ann", Cwd: "/w", GitRepoRoot: "/w",
			OriginJSON: models.MustJSON(map[string]any{"platform": "telegram"})})
		require.NoError(t, err)
		require.NoError(t, st.SessionState().UpdateToolNames(ctx, "p", []string{"a", "b"}))
		_, err = st.Lineage().SetPinned(ctx, "p", true)
		require.NoError(t, err)
		var ids []int64
		for i, txt := range []string{"q1", "a1", "q2", "late1", "late2"} {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			id, err := st.Messages().Append(ctx, "p", repo.MessageInput{Role: role, Content: models.Text(txt), Timestamp: models.Epoch(1_700_000_000 + i)})
			require.NoError(t, err)
			ids = append(ids, id)
		}
		wm := ids[2]
		handoff := []repo.MessageInput{{Role: "user", Content: models.Text("[CONTEXT COMPACTION] summary"), CompressedSummary: true},
			{Role: "user", Content: models.Text("q2")}}

		// Without the lease nothing is written.
		err = c.PublishChild(ctx, repo.PublishChildInput{ParentID: "p", ChildID: "c", Source: "telegram", Messages: handoff, LockHolder: "H"})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		_, err = st.Sessions().Get(ctx, "c")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		ok, err := st.CompressionLocks().TryAcquire(ctx, "p", "H", repo.LeaseOptions{})
		require.NoError(t, err)
		require.True(t, ok)
		err = c.PublishChild(ctx, repo.PublishChildInput{ParentID: "p", ChildID: "c", Source: "telegram", Messages: handoff,
			LockHolder: "H", Watermark: &wm, WatermarkCeiling: &ids[3], ModelConfig: map[string]any{"model": "m"}, Now: time.Now()})
		require.NoError(t, err)

		p, err := st.Sessions().Get(ctx, "p")
		require.NoError(t, err)
		require.Equal(t, "compression", *p.EndReason)
		child, err := st.Sessions().Get(ctx, "c")
		require.NoError(t, err)
		require.Equal(t, "p", *child.ParentSessionID)
		require.Equal(t, "agent:main:telegram:dm:1", *child.SessionKey)
		require.Equal(t, "Ann", *child.DisplayName)
		require.Equal(t, "/w", *child.Cwd)
		require.Equal(t, int64(1), child.Pinned)
		require.Equal(t, `{"model": "m"}`, string(child.ModelConfig))
		require.Equal(t, string(p.OriginJSON), string(child.OriginJSON))
		require.Equal(t, string(p.ToolNames), string(child.ToolNames))
		require.EqualValues(t, 3, child.MessageCount, "handoff (2) + the tail up to the ceiling (1)")
		msgs, err := st.Messages().List(ctx, "c")
		require.NoError(t, err)
		require.Len(t, msgs, 3)
		require.Equal(t, "late1", *msgs[2].Content)
		require.Equal(t, models.Epoch(1_700_000_002), msgs[1].Timestamp, "a handoff row carries its original's timestamp")
		// The parent keeps its rows; a compression lineage has one lease key.
		n, err := st.Messages().Count(ctx, "p")
		require.NoError(t, err)
		require.EqualValues(t, 5, n)

		// The parent is closed: publishing again is refused; the child id
		// is taken.
		err = c.PublishChild(ctx, repo.PublishChildInput{ParentID: "p", ChildID: "c2", Source: "telegram", Messages: handoff, LockHolder: "H"})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		err = c.PublishChild(ctx, repo.PublishChildInput{ParentID: "p", ChildID: "c2", Source: "telegram", Messages: nil, LockHolder: "H"})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)

		// An automatic end stamp is cleared by the lease holder's rotation.
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "q", Source: "tui"})
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, "q", "tui_shutdown")
		require.NoError(t, err)
		err = c.PublishChild(ctx, repo.PublishChildInput{ParentID: "q", ChildID: "q2", Source: "tui", Messages: handoff, SkipLeaseCheck: true})
		require.NoError(t, err)
		q, err := st.Sessions().Get(ctx, "q")
		require.NoError(t, err)
		require.Equal(t, "compression", *q.EndReason)
		// A deliberate one is not.
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "r", Source: "cli"})
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, "r", "session_reset")
		require.NoError(t, err)
		err = c.PublishChild(ctx, repo.PublishChildInput{ParentID: "r", ChildID: "r2", Source: "cli", Messages: handoff, SkipLeaseCheck: true})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
	})
}

func TestCompressorRecovery(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		c := st.Compressor()
		mk := func(id, parent string, cfg map[string]any) {
			in := repo.SessionInput{ID: id, Source: "cli", ParentSessionID: parent}
			if cfg != nil {
				in.ModelConfig = models.MustJSON(cfg)
			}
			_, err := st.Sessions().Create(ctx, in)
			require.NoError(t, err)
		}
		// reopen_if_explicitly_closed
		mk("x", "", nil)
		_, err := st.Sessions().End(ctx, "x", "cli_close")
		require.NoError(t, err)
		r, err := c.ReopenIfExplicitlyClosed(ctx, "x")
		require.NoError(t, err)
		require.Equal(t, "cli_close", r)
		x, err := st.Sessions().Get(ctx, "x")
		require.NoError(t, err)
		require.Nil(t, x.EndedAt)
		for _, reason := range []string{"tui_shutdown", "compression", "session_reset", "new_session"} {
			mk("y-"+reason, "", nil)
			_, err = st.Sessions().End(ctx, "y-"+reason, reason)
			require.NoError(t, err)
			r, err = c.ReopenIfExplicitlyClosed(ctx, "y-"+reason)
			require.NoError(t, err)
			require.Empty(t, r, reason)
		}
		mk("z", "", nil)
		mk("z-child", "z", nil)
		_, err = st.Sessions().End(ctx, "z", "cli_close")
		require.NoError(t, err)
		r, err = c.ReopenIfExplicitlyClosed(ctx, "z")
		require.NoError(t, err)
		require.Empty(t, r, "a published continuation owns the lineage")
		_, err = c.ReopenIfExplicitlyClosed(ctx, "nope")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		// find_live_compression_child
		mk("p", "", nil)
		_, err = st.Sessions().End(ctx, "p", "compression")
		require.NoError(t, err)
		live, err := c.LiveChild(ctx, "p")
		require.NoError(t, err)
		require.Nil(t, live)
		mk("p-c1", "p", nil)
		mk("p-branch", "p", map[string]any{"_branched_from": "p"})
		live, err = c.LiveChild(ctx, "p")
		require.NoError(t, err)
		require.NotNil(t, live)
		require.Equal(t, "p-c1", live.ID)
		mk("p-c2", "p", nil)
		live, err = c.LiveChild(ctx, "p")
		require.NoError(t, err)
		require.Nil(t, live, "two live continuations: ambiguous")

		// reopen_orphaned_compression_session
		mk("o", "", nil)
		_, err = st.Sessions().End(ctx, "o", "compression")
		require.NoError(t, err)
		now := time.Now()
		ok, err := st.CompressionLocks().TryAcquire(ctx, "o", "H", repo.LeaseOptions{Now: now, TTL: time.Minute})
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = c.ReopenOrphaned(ctx, "o", now)
		require.NoError(t, err)
		require.False(t, ok, "a live lock: another path owns the lineage")
		ok, err = c.ReopenOrphaned(ctx, "o", now.Add(2*time.Minute))
		require.NoError(t, err)
		require.True(t, ok)
		_, found, err := st.CompressionLocks().Get(ctx, "o", time.Time{})
		require.NoError(t, err)
		require.False(t, found, "the expired lock was reclaimed")
		ok, err = c.ReopenOrphaned(ctx, "p", now)
		require.NoError(t, err)
		require.False(t, ok, "p has continuations")

		// finalize_orphaned_compression_sessions
		mk("f", "", nil)
		mk("f-c", "f", nil)
		_, err = st.Sessions().End(ctx, "f", "compression")
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "f-c", repo.MessageInput{Role: "user", Content: models.Text("hi")})
		require.NoError(t, err)
		n, err := c.FinalizeOrphaned(ctx, time.Now())
		require.NoError(t, err)
		require.Zero(t, n, "younger than 7 days")
		n, err = c.FinalizeOrphaned(ctx, time.Now().Add(8*24*time.Hour))
		require.NoError(t, err)
		require.EqualValues(t, 1, n, "p-c1 and p-c2 have no messages")
		fc, err := st.Sessions().Get(ctx, "f-c")
		require.NoError(t, err)
		require.Equal(t, "orphaned_compression", *fc.EndReason)
	})
}

func TestCompressorCooldownAndCounters(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		c := st.Compressor()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
		require.NoError(t, err)
		cd, err := c.Cooldown(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, repo.CooldownState{Exists: true}, cd)
		e1 := "boom"
		require.NoError(t, c.RecordCooldown(ctx, "s", time.Unix(2000, 0), &e1))
		e2 := "later"
		require.NoError(t, c.RecordCooldown(ctx, "s", time.Unix(1500, 0), &e2))
		cd, err = c.Cooldown(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, models.Epoch(2000), *cd.Until, "merge-max keeps the later deadline")
		require.Equal(t, "later", *cd.Error, "the error is the latest")
		require.True(t, cd.Active(time.Unix(1999, 0)))
		require.False(t, cd.Active(time.Unix(2000, 0)))
		require.NoError(t, c.ClearCooldown(ctx, "s"))
		require.NoError(t, c.RestoreCooldown(ctx, "s", cd))
		back, err := c.Cooldown(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, cd, back)
		miss, err := c.Cooldown(ctx, "missing")
		require.NoError(t, err)
		require.False(t, miss.Exists)
		require.NoError(t, c.RestoreCooldown(ctx, "missing", miss))
		fixturetest.RequireKind(t, c.RestoreCooldown(ctx, "s", miss), hs.ErrConflict)
		fixturetest.RequireKind(t, c.RecordCooldown(ctx, "missing", time.Unix(1, 0), nil), hs.ErrNotFound)

		cs, err := c.Counters(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, repo.CompressionCounters{}, cs)
		neg, three, dl := int64(-4), int64(3), 1234.5
		require.NoError(t, c.SetCounters(ctx, "s", repo.CounterUpdate{FallbackStreak: &three, IneffectiveCount: &neg, RecoveryDeadline: &dl}))
		for i := 1; i <= 2; i++ {
			v, err := c.IncrementOverloadStreak(ctx, "s")
			require.NoError(t, err)
			require.EqualValues(t, i, v)
		}
		cs, err = c.Counters(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, repo.CompressionCounters{FallbackStreak: 3, IneffectiveCount: 0, OverloadStreak: 2, RecoveryDeadline: 1234.5}, cs)
		zero := 0.0
		require.NoError(t, c.SetCounters(ctx, "s", repo.CounterUpdate{RecoveryDeadline: &zero}))
		var stored *float64
		hermesstatetest.QueryRow(t, st, "SELECT compression_recovery_deadline FROM sessions WHERE id = 's'", nil, &stored)
		require.Nil(t, stored, "a disarmed deadline is NULL")
		_, err = c.IncrementOverloadStreak(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
		_, err = c.Counters(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)
	})
}

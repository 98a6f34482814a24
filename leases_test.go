package hermesstate_test

import (
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// leaseRow reads one row of a lease table as stored.
func leaseRowOf(t *testing.T, st *hs.Store, table, keyCol, key string) (holder string, acquired, expires float64, ok bool) {
	t.Helper()
	db := hermesstatetest.SQL(t, st)
	err := db.QueryRow("SELECT holder, acquired_at, expires_at FROM "+table+" WHERE "+keyCol+" = $1", key).Scan(&holder, &acquired, &expires)
	if err != nil {
		return "", 0, 0, false
	}
	return holder, acquired, expires, true
}

var noDeadHolders = func(string) bool { return false }

func TestTurnLeases(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tl := st.TurnLeases()
		t0 := time.Unix(1_700_000_000, 250_000_000)
		opt := func(at time.Time) repo.LeaseOptions {
			return repo.LeaseOptions{TTL: 60 * time.Second, Now: at, HolderDead: noDeadHolders}
		}

		// A compression lineage shares one lease, keyed by its root; a
		// branch child has its own.
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "root", Source: "cli"})
		require.NoError(t, err)
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "tip", Source: "cli", ParentSessionID: "root"})
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, "root", "compression")
		require.NoError(t, err)
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "branch", Source: "cli", ParentSessionID: "root",
			ModelConfig: models.MustJSON(map[string]any{"_branched_from": "root"})})
		require.NoError(t, err)

		ok, err := tl.TryAcquire(ctx, "tip", "A", opt(t0))
		require.NoError(t, err)
		require.True(t, ok)
		holder, acq, exp, found := leaseRowOf(t, st, "session_turn_leases", "conversation_id", "root")
		require.True(t, found, "the lease is keyed by the compression root")
		require.Equal(t, "A", holder)
		require.Equal(t, models.EpochOf(t0).Float(), acq, "acquired_at is REAL epoch seconds")
		require.InDelta(t, models.EpochOf(t0).Float()+60, exp, 1e-6)

		l, ok, err := tl.Get(ctx, "root", t0.Add(time.Second))
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, l.Live)
		require.Equal(t, "root", l.Key)

		// Another holder is refused on every segment; the branch is free.
		for _, sid := range []string{"root", "tip"} {
			ok, err = tl.TryAcquire(ctx, sid, "B", opt(t0.Add(time.Second)))
			require.NoError(t, err)
			require.False(t, ok, sid)
		}
		ok, err = tl.TryAcquire(ctx, "branch", "B", opt(t0))
		require.NoError(t, err)
		require.True(t, ok)

		// The holder acquiring again keeps its expiry.
		ok, err = tl.TryAcquire(ctx, "root", "A", opt(t0.Add(10*time.Second)))
		require.NoError(t, err)
		require.True(t, ok)
		_, _, exp2, _ := leaseRowOf(t, st, "session_turn_leases", "conversation_id", "root")
		require.Equal(t, exp, exp2)

		// Refresh and release by a non-holder are refused.
		ok, err = tl.Refresh(ctx, "tip", "B", opt(t0.Add(5*time.Second)))
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = tl.Release(ctx, "tip", "B")
		require.NoError(t, err)
		require.False(t, ok)
		_, _, exp3, found := leaseRowOf(t, st, "session_turn_leases", "conversation_id", "root")
		require.True(t, found)
		require.Equal(t, exp, exp3)

		// The holder refreshes, even after expiry while nobody took it.
		ok, err = tl.Refresh(ctx, "tip", "A", opt(t0.Add(120*time.Second)))
		require.NoError(t, err)
		require.True(t, ok)
		_, _, exp4, _ := leaseRowOf(t, st, "session_turn_leases", "conversation_id", "root")
		require.InDelta(t, models.EpochOf(t0).Float()+180, exp4, 1e-6)

		// At expiry (expires_at <= now) another holder takes over.
		at := models.Epoch(exp4).Time().Add(-time.Millisecond)
		ok, err = tl.TryAcquire(ctx, "root", "B", opt(at))
		require.NoError(t, err)
		require.False(t, ok, "not before expiry")
		ok, err = tl.TryAcquire(ctx, "root", "B", repo.LeaseOptions{Now: models.Epoch(exp4).Time().Add(time.Millisecond), HolderDead: noDeadHolders})
		require.NoError(t, err)
		require.True(t, ok, "after expiry")
		_, _, expB, _ := leaseRowOf(t, st, "session_turn_leases", "conversation_id", "root")
		require.InDelta(t, models.Epoch(exp4).Float()+0.001+300, expB, 1e-3, "TTL 0 is Hermes' 300 s")
		ok, err = tl.Refresh(ctx, "root", "A", opt(t0))
		require.NoError(t, err)
		require.False(t, ok, "the old holder lost it")

		// A lease whose holder is dead is taken at once.
		ok, err = tl.TryAcquire(ctx, "root", "C", repo.LeaseOptions{Now: at, HolderDead: func(h string) bool { return h == "B" }})
		require.NoError(t, err)
		require.True(t, ok)

		// Release by the holder; the second release finds nothing.
		ok, err = tl.Release(ctx, "tip", "C")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = tl.Release(ctx, "tip", "C")
		require.NoError(t, err)
		require.False(t, ok)
		_, found, err = tl.Get(ctx, "root", time.Time{})
		require.NoError(t, err)
		require.False(t, found)

		// Rows a day past expiry are swept by any acquisition.
		hermesstatetest.Exec(t, st, "INSERT INTO session_turn_leases (conversation_id, holder, acquired_at, expires_at) VALUES ('old', 'x', 1, 2)")
		ok, err = tl.TryAcquire(ctx, "other", "A", opt(t0.Add(time.Hour)))
		require.NoError(t, err)
		require.True(t, ok)
		_, _, _, found = leaseRowOf(t, st, "session_turn_leases", "conversation_id", "old")
		require.False(t, found)

		list, err := tl.List(ctx, time.Time{})
		require.NoError(t, err)
		require.Len(t, list, 2) // branch (expired by now) and other
		require.Equal(t, "branch", list[0].Key)
		require.False(t, list[0].Live)

		// A live lease refuses a rewind; a dead holder's does not.
		_, err = st.Messages().Append(ctx, "branch", repo.MessageInput{Role: "user", Content: models.Text("hi")})
		require.NoError(t, err)
		ok, err = tl.TryAcquire(ctx, "branch", "pid=999999999:pidns=1:x", repo.LeaseOptions{HolderDead: noDeadHolders})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = st.Rewind().UserTurn(ctx, "branch", 1)
		fixturetest.RequireKind(t, err, hs.ErrConflict)

		// Bad input.
		_, err = tl.TryAcquire(ctx, "root", "", repo.LeaseOptions{})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = tl.TryAcquire(ctx, "", "A", repo.LeaseOptions{})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
		_, err = tl.TryAcquire(ctx, "root", "A", repo.LeaseOptions{TTL: -time.Second})
		fixturetest.RequireKind(t, err, hs.ErrInvalid)
	})
}

func TestTurnLeaseAcquireWaits(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tl := st.TurnLeases()
		ok, err := tl.TryAcquire(ctx, "s", "A", repo.LeaseOptions{TTL: 300 * time.Millisecond, HolderDead: noDeadHolders})
		require.NoError(t, err)
		require.True(t, ok)
		var waits int
		start := time.Now()
		err = tl.Acquire(ctx, "s", "B", repo.AcquireOptions{Poll: 50 * time.Millisecond,
			LeaseOptions: repo.LeaseOptions{HolderDead: noDeadHolders}, OnWait: func(time.Duration) { waits++ }})
		require.NoError(t, err)
		require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "B waited for A's lease to expire")
		require.Equal(t, 1, waits, "one notice within the first 15 s")
		l, _, err := tl.Get(ctx, "s", time.Time{})
		require.NoError(t, err)
		require.Equal(t, "B", l.Holder)

		// A context that ends stops the wait with its error.
		short, cancel := contextWithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err = tl.Acquire(short, "s", "C", repo.AcquireOptions{Poll: 20 * time.Millisecond})
		require.Error(t, err)
		require.True(t, errors.Is(err, errDeadline), err)
	})
}

func TestCompressionLocks(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		cl := st.CompressionLocks()
		t0 := time.Unix(1_700_000_000, 0)
		opt := func(at time.Time) repo.LeaseOptions {
			return repo.LeaseOptions{TTL: 30 * time.Second, Now: at, HolderDead: noDeadHolders}
		}
		ok, err := cl.TryAcquire(ctx, "s1", "A", opt(t0))
		require.NoError(t, err)
		require.True(t, ok)
		holder, acq, exp, _ := leaseRowOf(t, st, "compression_locks", "session_id", "s1")
		require.Equal(t, "A", holder)
		require.Equal(t, float64(1_700_000_000), acq)
		require.Equal(t, float64(1_700_000_030), exp)

		ok, err = cl.TryAcquire(ctx, "s1", "B", opt(t0.Add(30*time.Second)))
		require.NoError(t, err)
		require.False(t, ok, "a lock is live through its expiry second (expires_at < now is stale)")
		l, found, err := cl.Get(ctx, "s1", t0.Add(30*time.Second))
		require.NoError(t, err)
		require.True(t, found)
		require.True(t, l.Live, "get_compression_lock_holder: expires_at >= now")

		ok, err = cl.Refresh(ctx, "s1", "B", opt(t0))
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = cl.Release(ctx, "s1", "B")
		require.NoError(t, err)
		require.False(t, ok)

		ok, err = cl.TryAcquire(ctx, "s1", "B", opt(t0.Add(31*time.Second)))
		require.NoError(t, err)
		require.True(t, ok, "expired: taken over")
		ok, err = cl.Refresh(ctx, "s1", "A", opt(t0))
		require.NoError(t, err)
		require.False(t, ok)
		ok, err = cl.Refresh(ctx, "s1", "B", opt(t0.Add(40*time.Second)))
		require.NoError(t, err)
		require.True(t, ok)
		_, _, exp, _ = leaseRowOf(t, st, "compression_locks", "session_id", "s1")
		require.Equal(t, float64(1_700_000_070), exp)

		// A live lock refuses a compaction under another holder and a rewind.
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s1", Source: "cli"})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "s1", repo.MessageInput{Role: "user", Content: models.Text("x")})
		require.NoError(t, err)
		live := time.Now()
		ok, err = cl.TryAcquire(ctx, "s1", "C", repo.LeaseOptions{Now: live.Add(time.Hour)})
		require.NoError(t, err)
		require.True(t, ok)
		_, err = st.Compaction().ArchiveAndCompact(ctx, "s1", []repo.MessageInput{{Role: "user", Content: models.Text("sum")}}, repo.CompactOptions{LockHolder: "A"})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		_, err = st.Rewind().UserTurn(ctx, "s1", 1)
		fixturetest.RequireKind(t, err, hs.ErrConflict)

		ok, err = cl.Release(ctx, "s1", "C")
		require.NoError(t, err)
		require.True(t, ok)
		list, err := cl.List(ctx, time.Time{})
		require.NoError(t, err)
		require.Empty(t, list)
	})
}

// TestHolderID: HolderID's holders are what Hermes writes and
// LocalHolderDead probes them as Hermes does: a dead process of this PID
// namespace is dead; this process, an unstamped or foreign holder, never.
func TestHolderID(t *testing.T) {
	h := repo.HolderID("turn=abc")
	require.Regexp(t, `^pid=\d+(:pidns=\d+)?:turn=abc$`, h)
	require.False(t, repo.LocalHolderDead(h), "this process is alive")
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	pid := cmd.Process.Pid
	dead := "pid=" + itoa(pid)
	if m := regexpNS.FindString(h); m != "" {
		dead += m
		require.True(t, repo.LocalHolderDead(dead+":turn=x"), "a finished process of this namespace")
		require.False(t, repo.LocalHolderDead("pid="+itoa(pid)+":turn=x"), "unstamped: waits for the TTL")
		require.False(t, repo.LocalHolderDead("pid="+itoa(pid)+":pidns=1:turn=x"), "another namespace")
	}
	require.False(t, repo.LocalHolderDead("worker-7"), "an opaque holder")
	require.False(t, repo.LocalHolderDead("pid=0:pidns=1"))
}

package repo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestListingByActivityTable: the listing by last activity read from the
// activity table (hermesstate_session_activity, kept by triggers) gives
// exactly the rows of the listing computed without it, on the corpus shapes
// that defeat a bound taken from message timestamps or started_at: sessions
// created after their last message (imported transcripts), empty sessions,
// last_activity_at newer than every message, timestamps outside the sane
// window, compression chains with a busy tip, delegate children, archived
// rows; and after writes made with plain SQL as Hermes' own code makes them
// (inserts, deletes, timestamp and session moves, heartbeats, a session
// deleted), the table matches the value computed from scratch.
func TestListingByActivityTable(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	raw, err := sqlitex.OpenEnv(path + "?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	defer raw.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := raw.Exec(q, args...)
		require.NoError(t, err, q)
	}
	drift := func() int {
		var n int
		require.NoError(t, raw.QueryRow(repo.ActivityDriftSQL()).Scan(&n))
		return n
	}
	r := rand.New(rand.NewPCG(7, 13))
	now := 1767950000.0
	ss, ms := st.Sessions(), st.Messages()
	for i := 0; i < 700; i++ {
		id := fmt.Sprintf("s%04d", i)
		source := []string{"cli", "cli", "cli", "telegram", "discord", "rare"}[r.IntN(6)]
		if source == "rare" && r.IntN(4) > 0 {
			source = "cli"
		}
		start := now - float64(r.IntN(400000))
		switch shape := r.IntN(10); {
		case shape < 4: // messages long before the session was created
			_, err = ss.Create(ctx, repo.SessionInput{ID: id, Source: source, StartedAt: models.Epoch(now + float64(i))})
			require.NoError(t, err)
			batch := make([]repo.MessageInput, 1+r.IntN(5))
			t0 := now - 300000 - float64(r.IntN(200000))
			for j := range batch {
				batch[j] = repo.MessageInput{Role: "user", Content: models.Text("old"), Timestamp: models.Epoch(t0 + float64(j))}
			}
			_, err = ms.AppendBatch(ctx, id, batch)
			require.NoError(t, err)
		case shape < 6: // empty session
			_, err = ss.Create(ctx, repo.SessionInput{ID: id, Source: source, StartedAt: models.Epoch(start)})
			require.NoError(t, err)
		case shape < 8: // written by Hermes' code: plain SQL
			exec("INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)", id, source, start)
			for j := 0; j < r.IntN(4); j++ {
				exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'x', ?)", id, start+float64(r.IntN(90000)))
			}
			if r.IntN(3) == 0 {
				exec("UPDATE sessions SET last_activity_at = ? WHERE id = ?", start+200000, id)
			}
		default: // insane stamps
			_, err = ss.Create(ctx, repo.SessionInput{ID: id, Source: source, StartedAt: models.Epoch(start)})
			require.NoError(t, err)
			exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'x', ?)", id, []float64{0, 5e12, start + 10}[r.IntN(3)])
			if r.IntN(2) == 0 {
				exec("UPDATE sessions SET started_at = ? WHERE id = ?", []float64{0, 9e12}[r.IntN(2)], id)
			}
		}
	}
	// Compression chains whose continuation is the busy part, delegate
	// children, archived rows.
	for i := 0; i < 40; i++ {
		root := fmt.Sprintf("s%04d", r.IntN(700))
		if _, err := ss.End(ctx, root, "compression"); err != nil {
			continue
		}
		child := fmt.Sprintf("c%04d", i)
		_, err = ss.Create(ctx, repo.SessionInput{ID: child, Source: "cli", ParentSessionID: root})
		if err != nil {
			continue
		}
		_, err = ms.Append(ctx, child, repo.MessageInput{Role: "user", Content: models.Text("tip"), Timestamp: models.Epoch(now + 50000 + float64(r.IntN(50000)))})
		require.NoError(t, err)
	}
	for i := 0; i < 30; i++ {
		exec(`INSERT INTO sessions (id, source, started_at, parent_session_id, model_config) VALUES (?, 'cli', ?, ?, '{"_delegate_from": "x"}')`,
			fmt.Sprintf("d%04d", i), now+float64(i), fmt.Sprintf("s%04d", r.IntN(700)))
		exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'x', ?)", fmt.Sprintf("d%04d", i), now+200000)
	}
	exec("UPDATE sessions SET archived = 1 WHERE id IN (SELECT id FROM sessions ORDER BY id LIMIT 20 OFFSET 100)")
	require.Zero(t, drift(), "after the inserts")

	// Deletes, moves, heartbeats, a deleted session.
	exec("DELETE FROM messages WHERE id IN (SELECT id FROM messages ORDER BY timestamp DESC LIMIT 25)")
	exec("UPDATE messages SET timestamp = timestamp + 777777 WHERE id IN (SELECT id FROM messages ORDER BY id LIMIT 10 OFFSET 40)")
	exec("UPDATE messages SET session_id = 's0001' WHERE id IN (SELECT id FROM messages WHERE session_id <> 's0001' ORDER BY id LIMIT 3 OFFSET 90)")
	exec("UPDATE sessions SET last_activity_at = ? WHERE id IN ('s0002', 's0003', 's0004')", now+900000)
	exec("UPDATE sessions SET last_activity_at = NULL WHERE id = 's0003'")
	exec("DELETE FROM messages WHERE session_id = 's0005'")
	exec("DELETE FROM sessions WHERE id = 's0005'")
	require.Zero(t, drift(), "after deletes and moves")
	var rows int
	require.NoError(t, raw.QueryRow("SELECT COUNT(*) FROM hermesstate_session_activity").Scan(&rows))
	var sessions int
	require.NoError(t, raw.QueryRow("SELECT COUNT(*) FROM sessions").Scan(&sessions))
	require.Equal(t, sessions, rows)
	require.NoError(t, st.Close())

	// The reference: the same file without the table (the listing then
	// derives activity from messages and sessions).
	ref := filepath.Join(t.TempDir(), "ref.db")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(ref, b, 0o600))
	rr, err := sqlitex.OpenEnv(ref)
	require.NoError(t, err)
	_, err = rr.Exec("DROP TABLE hermesstate_session_activity")
	require.NoError(t, err)
	require.NoError(t, rr.Close())

	st, err = hs.Open(ctx, hs.Config{Path: path, ReadOnly: true})
	require.NoError(t, err)
	defer st.Close()
	rs, err := hs.Open(ctx, hs.Config{Path: ref, ReadOnly: true})
	require.NoError(t, err)
	defer rs.Close()
	for _, o := range []repo.RichOptions{
		{Limit: 20}, {Limit: 5, Offset: 3}, {Limit: 50, Offset: 200}, {Limit: 20, Offset: 690}, {Limit: 300},
		{Limit: 20, Source: "rare"}, {Limit: 20, Source: "nobody"}, {Limit: 20, ExcludeSources: []string{"cli"}},
		{Limit: 20, IncludeChildren: true}, {Limit: 20, NoProjectCompressionTips: true}, {Limit: 20, IncludeArchived: true},
		{Limit: 20, ArchivedOnly: true}, {Limit: 20, MinMessageCount: 2}, {Limit: 10, IncludePinned: true},
	} {
		o.OrderByLastActive = true
		got, err := st.Listing().Rich(ctx, o)
		require.NoError(t, err)
		want, err := rs.Listing().Rich(ctx, o)
		require.NoError(t, err)
		require.Equal(t, ids(want), ids(got), "%+v", o)
		for i := range want {
			require.Equal(t, want[i].LastActive, got[i].LastActive, "%+v row %d", o, i)
		}
	}
}

func ids(rows []repo.RichSession) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.ID + "/" + r.LineageRootID
	}
	return out
}

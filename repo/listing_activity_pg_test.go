package repo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// pgActivityDrift counts sessions of a PostgreSQL store whose activity row
// is missing or differs from the value computed from the session and its
// messages, plus rows of sessions that do not exist.
const pgActivityDrift = `SELECT (SELECT COUNT(*) FROM sessions s LEFT JOIN hermesstate_session_activity a ON a.session_id = s.id
	WHERE a.session_id IS NULL OR a.active_at IS DISTINCT FROM COALESCE(GREATEST(
		CASE WHEN s.last_activity_at BETWEEN 946684800.0 AND 4102444800.0 THEN s.last_activity_at END,
		(SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id AND m.timestamp BETWEEN 946684800.0 AND 4102444800.0)),
		CASE WHEN s.started_at BETWEEN 946684800.0 AND 4102444800.0 THEN s.started_at END))
	+ (SELECT COUNT(*) FROM hermesstate_session_activity a WHERE NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = a.session_id))`

// TestPostgresActivityTable (issue 21, item 1): on PostgreSQL the activity
// table (migration 0106) is kept in the writing transaction by its
// triggers through every kind of write, the API's and plain SQL as other
// programs write (batches, sessions created after their messages, empty
// sessions, heartbeats, insane stamps, deletes, timestamp and session
// moves, a deleted session), and the listing by last activity read from
// it gives the same rows, projections and last_active as the SQLite store
// given the same writes, for every filter and page.
func TestPostgresActivityTable(t *testing.T) {
	ctx := context.Background()
	stores := map[hermesstatetest.Backend]*hs.Store{}
	for _, b := range hermesstatetest.Backends {
		st := hermesstatetest.Open(t, b, hs.Config{})
		raw := hermesstatetest.SQL(t, st)
		activityScenario(t, st, func(q string, args ...any) {
			t.Helper()
			_, err := raw.Exec(hermesstatetest.Rebind(st, q), args...)
			require.NoError(t, err, q)
		}, func(step string) {
			if b != hermesstatetest.Postgres {
				return
			}
			var n int
			require.NoError(t, raw.QueryRow(pgActivityDrift).Scan(&n))
			require.Zero(t, n, "sessions whose activity row is missing or wrong %s", step)
			require.NoError(t, raw.QueryRow(repo.ListedDriftPostgres()).Scan(&n))
			require.Zero(t, n, "sessions whose listed, source or started_at in the activity table is wrong %s", step)
		})
		stores[b] = st
		if b == hermesstatetest.Postgres {
			var rows, sessions int
			require.NoError(t, raw.QueryRow("SELECT COUNT(*) FROM hermesstate_session_activity").Scan(&rows))
			require.NoError(t, raw.QueryRow("SELECT COUNT(*) FROM sessions").Scan(&sessions))
			require.Equal(t, sessions, rows)
		}
	}
	lite, pg := stores[hermesstatetest.SQLite], stores[hermesstatetest.Postgres]
	for _, o := range []repo.RichOptions{
		{Limit: 20}, {Limit: 5, Offset: 3}, {Limit: 50, Offset: 150}, {Limit: 20, Offset: 290}, {Limit: 400},
		{Limit: 20, Source: "rare"}, {Limit: 20, Source: "nobody"}, {Limit: 20, ExcludeSources: []string{"cli"}},
		{Limit: 20, IncludeChildren: true}, {Limit: 20, NoProjectCompressionTips: true}, {Limit: 20, IncludeArchived: true},
		{Limit: 20, ArchivedOnly: true}, {Limit: 20, MinMessageCount: 2}, {Limit: 10, IncludePinned: true},
	} {
		o.OrderByLastActive = true
		want, err := lite.Listing().Rich(ctx, o)
		require.NoError(t, err)
		got, err := pg.Listing().Rich(ctx, o)
		require.NoError(t, err)
		require.Equal(t, ids(want), ids(got), "%+v", o)
		for i := range want {
			require.Equal(t, want[i].LastActive, got[i].LastActive, "%+v row %d", o, i)
		}
	}
}

// activityScenario writes the same sessions and messages on any backend
// (exec runs plain SQL with ? placeholders), calling check after the
// inserts and after the deletes and moves.
func activityScenario(t *testing.T, st *hs.Store, exec func(string, ...any), check func(step string)) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(21, 4))
	now := 1767950000.0
	ss, ms := st.Sessions(), st.Messages()
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("s%04d", i)
		source := []string{"cli", "cli", "cli", "telegram", "discord", "rare"}[r.IntN(6)]
		start := now - float64(r.IntN(400000))
		switch shape := r.IntN(10); {
		case shape < 4: // messages long before the session was created
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: source, StartedAt: models.Epoch(now + float64(i))})
			require.NoError(t, err)
			batch := make([]repo.MessageInput, 1+r.IntN(5))
			t0 := now - 300000 - float64(r.IntN(200000))
			for j := range batch {
				batch[j] = repo.MessageInput{Role: "user", Content: models.Text("old"), Timestamp: models.Epoch(t0 + float64(j))}
			}
			_, err = ms.AppendBatch(ctx, id, batch)
			require.NoError(t, err)
		case shape < 6: // empty session
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: source, StartedAt: models.Epoch(start)})
			require.NoError(t, err)
		case shape < 8: // written by other programs: plain SQL
			exec("INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)", id, source, start)
			for j := 0; j < r.IntN(4); j++ {
				exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'x', ?)", id, start+float64(r.IntN(90000)))
			}
			if r.IntN(3) == 0 {
				exec("UPDATE sessions SET last_activity_at = ? WHERE id = ?", start+200000, id)
			}
		default: // insane stamps
			_, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: source, StartedAt: models.Epoch(start)})
			require.NoError(t, err)
			exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'x', ?)", id, []float64{0, 5e12, start + 10}[r.IntN(3)])
			if r.IntN(2) == 0 {
				exec("UPDATE sessions SET started_at = ? WHERE id = ?", []float64{0, 9e12}[r.IntN(2)], id)
			}
		}
	}
	for i := 0; i < 25; i++ {
		root := fmt.Sprintf("s%04d", r.IntN(300))
		if _, err := ss.End(ctx, root, "compression"); err != nil {
			continue
		}
		child := fmt.Sprintf("c%04d", i)
		if _, err := ss.Create(ctx, repo.SessionInput{ID: child, Source: "cli", ParentSessionID: root, StartedAt: models.Epoch(now + 40000 + float64(i))}); err != nil {
			continue
		}
		_, err := ms.Append(ctx, child, repo.MessageInput{Role: "user", Content: models.Text("tip"), Timestamp: models.Epoch(now + 50000 + float64(r.IntN(50000)))})
		require.NoError(t, err)
	}
	for i := 0; i < 20; i++ {
		exec(`INSERT INTO sessions (id, source, started_at, parent_session_id, model_config) VALUES (?, 'cli', ?, ?, '{"_delegate_from": "x"}')`,
			fmt.Sprintf("d%04d", i), now+float64(i), fmt.Sprintf("s%04d", r.IntN(300)))
		exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'x', ?)", fmt.Sprintf("d%04d", i), now+200000)
	}
	// Children the listing shows or hides by their parent (branched,
	// reset with the same session key) or by their own markers.
	exec("INSERT INTO sessions (id, source, started_at, ended_at, end_reason, session_key) VALUES ('b-parent', 'cli', ?, ?, 'branched', 'k1')", now, now+10)
	exec("INSERT INTO sessions (id, source, started_at, parent_session_id) VALUES ('b-after', 'cli', ?, 'b-parent'), ('b-before', 'telegram', ?, 'b-parent')", now+20, now+5)
	exec("INSERT INTO sessions (id, source, started_at, ended_at, end_reason, session_key) VALUES ('r-parent', 'cli', ?, ?, 'idle', 'k2')", now, now+10)
	exec("INSERT INTO sessions (id, source, started_at, parent_session_id, session_key) VALUES ('r-same', 'cli', ?, 'r-parent', 'k2'), ('r-other', 'cli', ?, 'r-parent', 'k3')", now+20, now+21)
	exec(`INSERT INTO sessions (id, source, started_at, parent_session_id, model_config) VALUES ('m-branch', 'rare', ?, 's0007', '{"_branched_from": "s0007"}'),
		('m-reset', 'cli', ?, 's0008', ' {"_reset_from": "s0008"}'), ('m-other', 'cli', ?, 's0009', '{"model": "x"}'), ('m-root', 'cli', ?, NULL, '[1, 2]')`,
		now+30, now+31, now+32, now+33)
	exec("INSERT INTO sessions (id, source, started_at) VALUES ('late-parent', 'discord', ?)", now)
	exec("INSERT INTO sessions (id, source, started_at, parent_session_id, session_key) VALUES ('late-child', 'discord', ?, 'late-parent', 'k4')", now+50)
	for _, id := range []string{"b-after", "b-before", "r-same", "r-other", "m-branch", "m-reset", "m-other", "m-root", "late-child"} {
		exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', 'child', ?)", id, now+100000+float64(len(id)))
	}
	_, err := st.Lineage().SetPinned(ctx, "s0042", true)
	require.NoError(t, err)
	exec("UPDATE sessions SET archived = 1 WHERE id IN (SELECT id FROM sessions ORDER BY id LIMIT 20 OFFSET 100)")
	exec("UPDATE sessions SET hidden = 1 WHERE id IN ('s0010', 's0011', 'r-same')")
	check("after the inserts")

	// The parent's end decides about its children after they exist.
	exec("UPDATE sessions SET ended_at = ?, end_reason = 'branched' WHERE id = 'late-parent'", now+40)
	check("after a parent branched")
	exec("UPDATE sessions SET end_reason = 'daily', session_key = 'k4' WHERE id = 'late-parent'")
	check("after a parent reset")
	exec("UPDATE sessions SET session_key = 'k5' WHERE id = 'late-parent'")
	exec("UPDATE sessions SET hidden = 0 WHERE id = 'r-same'")
	exec("UPDATE sessions SET parent_session_id = 'b-parent' WHERE id = 'r-other'")
	exec("UPDATE sessions SET parent_session_id = NULL WHERE id = 'b-before'")
	exec(`UPDATE sessions SET model_config = '{"_delegate_from": "y"}' WHERE id = 'm-branch'`)
	exec("UPDATE sessions SET source = 'rare', archived = 0 WHERE id IN (SELECT id FROM sessions WHERE archived = 1 ORDER BY id LIMIT 3)")
	exec("UPDATE sessions SET started_at = started_at + 3 WHERE id IN ('s0012', 'b-after')")
	check("after writes to children and flags")

	exec("DELETE FROM messages WHERE id IN (SELECT id FROM messages ORDER BY timestamp DESC, id LIMIT 25)")
	exec("UPDATE messages SET timestamp = timestamp + 777777 WHERE id IN (SELECT id FROM messages ORDER BY id LIMIT 10 OFFSET 40)")
	exec("UPDATE messages SET session_id = 's0001' WHERE id IN (SELECT id FROM messages WHERE session_id <> 's0001' ORDER BY id LIMIT 3 OFFSET 90)")
	exec("UPDATE sessions SET last_activity_at = ? WHERE id IN ('s0002', 's0003', 's0004')", now+900000)
	exec("UPDATE sessions SET last_activity_at = NULL WHERE id = 's0003'")
	exec("DELETE FROM messages WHERE session_id = 's0005'")
	exec("DELETE FROM sessions WHERE id = 's0005'")
	exec("UPDATE sessions SET parent_session_id = NULL WHERE parent_session_id = 'r-parent'")
	exec("DELETE FROM sessions WHERE id = 'r-parent'")
	check("after deletes and moves")
}

package hermesstate_test

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/repo"
)

// damageTarget is a closed, adopted state.db to damage.
type damageTarget struct {
	name string
	path string
}

// damageTargets returns adopted copies of every fixture plus a store built
// here through the public API (3 sessions x 20 messages, tool calls).
func damageTargets(t *testing.T) []damageTarget {
	t.Helper()
	ctx := context.Background()
	var out []damageTarget
	for _, f := range fixturetest.LoadFixtures(t) {
		p := f.CopyDB(t)
		st, err := hs.Open(ctx, hs.Config{Path: p})
		require.NoError(t, err)
		require.NoError(t, st.Close())
		out = append(out, damageTarget{f.Name, p})
	}
	p := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: p})
	require.NoError(t, err)
	ids := fillStore(t, st, 3, 20)
	_, err = st.Messages().Append(ctx, ids[0], repo.MessageInput{Role: "assistant",
		ToolCalls: []byte(`[{"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}]`)})
	require.NoError(t, err)
	// A longer session, so that the table pages outnumber the schema pages
	// and a truncated file keeps a readable schema.
	big, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "telegram", Model: "m"})
	require.NoError(t, err)
	var batch []repo.MessageInput
	for i := 0; i < 500; i++ {
		batch = append(batch, repo.MessageInput{Role: "user", Content: strp(fmt.Sprintf("long session line %d: %s", i, strings.Repeat("lorem ipsum ", 8)))})
	}
	_, err = st.Messages().AppendBatch(ctx, big.ID, batch)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	out = append(out, damageTarget{"built", p})
	return out
}

// copyTarget copies a target (a closed file without sidecars) to a new dir.
func copyTarget(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "state.db")
	require.NoError(t, os.WriteFile(dst, b, 0o600))
	return dst
}

// rowTables are the ordinary tables whose rows recover must keep.
var rowTables = []string{"sessions", "messages", "session_model_usage", "state_meta", "gateway_routing", "system_prompts", "schema_version"}

// rowids returns the rowids of every row table, read from a healthy file.
func rowids(t *testing.T, path string) map[string][]int64 {
	t.Helper()
	db := fixturetest.Raw(t, path)
	out := map[string][]int64{}
	for _, tb := range rowTables {
		rows, err := db.Query("SELECT rowid FROM " + tb + " ORDER BY rowid")
		require.NoError(t, err, tb)
		for rows.Next() {
			var id int64
			require.NoError(t, rows.Scan(&id))
			out[tb] = append(out[tb], id)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	require.NoError(t, db.Close())
	return out
}

// readable probes every original rowid of the damaged file one by one
// (read-only, immutable) and returns those that can still be read. It reads
// through the pure-Go engine, as recover reads a damaged source on either
// engine (doctor/recover.go).
func readable(t *testing.T, path string, orig map[string][]int64) map[string][]int64 {
	t.Helper()
	u := &url.URL{Scheme: "file", Path: path}
	db, err := sqlitex.GoEngine.OpenDB(u.String() + "?mode=ro&immutable=1&_pragma=writable_schema(1)")
	require.NoError(t, err)
	defer db.Close()
	out := map[string][]int64{}
	for tb, ids := range orig {
		out[tb] = []int64{}
		for _, id := range ids {
			rows, err := db.Query("SELECT * FROM "+tb+" WHERE rowid = ?", id)
			if err != nil {
				continue
			}
			okRow := false
			for rows.Next() {
				okRow = true
			}
			if rows.Err() == nil && okRow {
				out[tb] = append(out[tb], id)
			}
			rows.Close()
		}
	}
	return out
}

func seedOf(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

func pageSizeOf(t *testing.T, path string) int64 {
	var ps int64
	db := fixturetest.Raw(t, path)
	require.NoError(t, db.QueryRow("PRAGMA page_size").Scan(&ps))
	require.NoError(t, db.Close())
	return ps
}

// usedPages returns the pages of name (table or index) from dbstat,
// through the pure-Go engine whatever the engine under test: dbstat is
// compiled into it, not into the C engine (mattn's tag sqlite_dbstat). No
// store has the file open meanwhile.
func usedPages(t *testing.T, path, name string) []int64 {
	db, err := sqlitex.GoEngine.OpenDB(sqlitex.GoEngine.DSN(sqlitex.ConnConfig{Path: path, BusyTimeout: 5 * time.Second}))
	require.NoError(t, err)
	defer db.Close()
	rows, err := db.Query("SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", name)
	require.NoError(t, err)
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var p int64
		require.NoError(t, rows.Scan(&p))
		out = append(out, p)
	}
	return out
}

func execRaw(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	for _, s := range stmts {
		_, err := db.Exec(s)
		require.NoError(t, err, s)
	}
	require.NoError(t, db.Close())
}

// damage is one way of breaking a file. apply damages path and returns a
// cleanup (for a writer it keeps open) and the rows it added (if any).
type damage struct {
	name    string
	fixable bool // repair fixes it in place
	// check is the doctor check that must name the problem.
	check string
	apply func(t *testing.T, target damageTarget, path string) (added int)
}

func damages() []damage {
	return []damage{
		{name: "truncate", check: "file", apply: func(t *testing.T, _ damageTarget, path string) int {
			st, err := os.Stat(path)
			require.NoError(t, err)
			ps := pageSizeOf(t, path)
			require.NoError(t, os.Truncate(path, (st.Size()/ps*3/4)*ps))
			return 0
		}},
		{name: "random_pages", check: "integrity", apply: func(t *testing.T, tg damageTarget, path string) int {
			r := rand.New(rand.NewPCG(seedOf(tg.name), 7))
			ps := pageSizeOf(t, path)
			msg := usedPages(t, path, "messages")
			ses := usedPages(t, path, "sessions")
			targets := []int64{msg[r.IntN(len(msg))], ses[r.IntN(len(ses))]}
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			for _, p := range targets {
				buf := make([]byte, ps)
				for i := range buf {
					buf[i] = byte(r.IntN(256))
				}
				_, err = f.WriteAt(buf, (p-1)*ps)
				require.NoError(t, err)
			}
			require.NoError(t, f.Close())
			return 0
		}},
		{name: "zero_header", check: "file", apply: func(t *testing.T, _ damageTarget, path string) int {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt(make([]byte, 100), 0)
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return 0
		}},
		{name: "drop_fts_shadow", fixable: true, check: "fts", apply: func(t *testing.T, _ damageTarget, path string) int {
			execRaw(t, path, "DROP TABLE messages_fts_data")
			return 0
		}},
		{name: "drop_fts_config", fixable: true, check: "fts", apply: func(t *testing.T, _ damageTarget, path string) int {
			// quick_check fails at its first step (the FTS5 constructor):
			// an FTS problem for repair, not page-level damage.
			execRaw(t, path, "DROP TABLE messages_fts_config")
			return 0
		}},
		{name: "stale_activity", fixable: true, check: "activity", apply: func(t *testing.T, _ damageTarget, path string) int {
			// A program that dropped a trigger of the activity table wrote a
			// newer message, and a row was overwritten: the listing by last
			// activity would be wrong until repair recomputes the table.
			execRaw(t, path, "DROP TRIGGER hermesstate_activity_message_insert",
				`INSERT INTO messages (session_id, role, content, timestamp) SELECT id, 'user', 'later', 4000000000 FROM sessions ORDER BY rowid LIMIT 1`,
				`UPDATE sessions SET message_count = message_count + 1 WHERE rowid = (SELECT rowid FROM sessions ORDER BY rowid LIMIT 1)`,
				`UPDATE hermesstate_session_activity SET active_at = 12345 WHERE session_id = (SELECT id FROM sessions ORDER BY rowid DESC LIMIT 1)`)
			return 1
		}},
		{name: "delete_triggers", fixable: true, check: "fts", apply: func(t *testing.T, _ damageTarget, path string) int {
			execRaw(t, path, "DROP TRIGGER messages_fts_insert", "DROP TRIGGER messages_display_order_insert",
				// A message written while the triggers are gone: the index misses it.
				`INSERT INTO messages (session_id, role, content, timestamp) SELECT id, 'user', 'quokkasaurus arrives', started_at + 1 FROM sessions ORDER BY rowid LIMIT 1`,
				`UPDATE sessions SET message_count = message_count + 1 WHERE rowid = (SELECT rowid FROM sessions ORDER BY rowid LIMIT 1)`)
			return 1
		}},
		{name: "bad_json", fixable: true, check: "json", apply: func(t *testing.T, _ damageTarget, path string) int {
			// Values another program wrote into JSON columns (issue 28,
			// item 3): Hermes' listing fails on the model_config.
			execRaw(t, path, `UPDATE sessions SET model_config = '{"model": "m", ' WHERE rowid = (SELECT min(rowid) FROM sessions)`,
				`UPDATE messages SET tool_calls = 'terminal(ls)' WHERE rowid = (SELECT min(rowid) FROM messages)`,
				`UPDATE messages SET display_metadata = 'not an object' WHERE rowid = (SELECT max(rowid) FROM messages)`)
			return 0
		}},
		{name: "parent_loop", fixable: true, check: "lineage", apply: func(t *testing.T, _ damageTarget, path string) int {
			// Two sessions each other's parent, and one its own (issue 28,
			// item 3): every listing loses them.
			execRaw(t, path, `UPDATE sessions SET parent_session_id = (SELECT id FROM sessions ORDER BY rowid LIMIT 1 OFFSET 1) WHERE rowid = (SELECT rowid FROM sessions ORDER BY rowid LIMIT 1)`,
				`UPDATE sessions SET parent_session_id = (SELECT id FROM sessions ORDER BY rowid LIMIT 1) WHERE rowid = (SELECT rowid FROM sessions ORDER BY rowid LIMIT 1 OFFSET 1)`,
				`UPDATE sessions SET parent_session_id = id WHERE rowid = (SELECT rowid FROM sessions ORDER BY rowid LIMIT 1 OFFSET 2)`)
			return 0
		}},
		{name: "desync_counters", fixable: true, check: "counters", apply: func(t *testing.T, _ damageTarget, path string) int {
			execRaw(t, path, "UPDATE sessions SET message_count = message_count + 3, tool_call_count = tool_call_count + 7 WHERE rowid IN (SELECT rowid FROM sessions ORDER BY rowid LIMIT 2)")
			return 0
		}},
	}
}

func countRows(t *testing.T, path string) map[string]int {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	out := map[string]int{}
	for _, tb := range rowTables {
		var n int
		require.NoError(t, db.QueryRow("SELECT count(*) FROM "+tb).Scan(&n))
		out[tb] = n
	}
	return out
}

func idsOf(t *testing.T, path string) map[string][]int64 { return rowids(t, path) }

// TestDamageDoctorRepairRecover damages copies of every fixture and of a
// built store in each way and checks: doctor names the problem (and never
// fails or panics), repair fixes the fixable damage keeping every row (a
// second run changes nothing) and refuses the rest, and recover produces a
// file that passes doctor and holds exactly the rows that could still be
// read (counted by probing every original rowid of the damaged file).
func TestDamageDoctorRepairRecover(t *testing.T) {
	ctx := context.Background()
	for _, tg := range damageTargets(t) {
		orig := rowids(t, tg.path)
		for _, d := range damages() {
			t.Run(tg.name+"/"+d.name, func(t *testing.T) {
				path := copyTarget(t, tg.path)
				added := d.apply(t, tg, path)
				cfg := hs.Config{Path: path}

				r, err := hs.Doctor(ctx, cfg, hs.DoctorOptions{})
				require.NoError(t, err)
				require.False(t, r.OK(), "doctor must see %s", d.name)
				require.True(t, r.Has(d.check, ""), "doctor names %s under %q: %+v", d.name, d.check, r.Problems())
				full, err := hs.Doctor(ctx, cfg, hs.DoctorOptions{Full: true})
				require.NoError(t, err)
				require.False(t, full.OK())

				// Recover (before any repair) from the damaged file.
				before, _ := os.ReadFile(path)
				can := readable(t, path, orig)
				to := filepath.Join(t.TempDir(), "new.db")
				rep, err := hs.Recover(ctx, hs.RecoverOptions{From: path, To: to, AllowPartial: true})
				after, _ := os.ReadFile(path)
				require.Equal(t, before, after, "recover never writes to the source")
				if total(can) == 0 && d.name != "zero_header" {
					// Not even the schema can be read: nothing to salvage.
					require.ErrorIs(t, err, hs.ErrCorrupt)
					_, statErr := os.Stat(to)
					require.True(t, os.IsNotExist(statErr))
					t.Logf("%s: nothing readable", d.name)
					return
				}
				require.NoError(t, err)
				require.Equal(t, before, after, "recover never writes to the source")
				requireHealthy(t, rep.Doctor)
				got := idsOf(t, to)
				got["sessions"] = withoutPlaceholders(t, to, got["sessions"])
				for _, tb := range rowTables {
					want := can[tb]
					if d.name == "zero_header" {
						want = orig[tb] // unreadable as is; the rebuilt header gives it all back
					}
					if tb == "messages" && added > 0 && len(got[tb]) == len(want)+added {
						got[tb] = got[tb][:len(want)]
					}
					if tb == "schema_version" || tb == "state_meta" {
						require.Subset(t, got[tb], want, "%s: every readable row of %s is saved", d.name, tb)
						continue
					}
					require.Equal(t, fmt.Sprint(want), fmt.Sprint(got[tb]), "%s: recovered rows of %s", d.name, tb)
				}
				t.Logf("%s: saved %d, lost %d, complete %v", d.name, rep.Saved, rep.Lost, rep.Complete)
				if rep.Complete {
					to2 := filepath.Join(t.TempDir(), "strict.db")
					_, err := hs.Recover(ctx, hs.RecoverOptions{From: path, To: to2})
					require.NoError(t, err)
				} else {
					to2 := filepath.Join(t.TempDir(), "strict.db")
					_, err := hs.Recover(ctx, hs.RecoverOptions{From: path, To: to2})
					require.ErrorIs(t, err, hs.ErrCorrupt)
					_, statErr := os.Stat(to2)
					require.True(t, os.IsNotExist(statErr), "a refused recover leaves no file")
				}

				// Repair.
				if !d.fixable {
					_, err := hs.Repair(ctx, cfg, hs.RepairOptions{})
					require.ErrorIs(t, err, hs.ErrCorrupt, "repair refuses page-level damage")
					return
				}
				counts := countRows(t, path)
				rr, err := hs.Repair(ctx, cfg, hs.RepairOptions{})
				require.NoError(t, err)
				require.NotEmpty(t, rr.Actions)
				requireHealthy(t, rr.After)
				now := countRows(t, path)
				require.GreaterOrEqual(t, now["state_meta"], counts["state_meta"], "repair keeps every row (it may record fts_storage_version)")
				now["state_meta"] = counts["state_meta"]
				require.Equal(t, counts, now, "repair keeps every row")
				again, err := hs.Repair(ctx, cfg, hs.RepairOptions{})
				require.NoError(t, err)
				require.Empty(t, again.Actions, "a second repair changes nothing")
				full, err = hs.Doctor(ctx, cfg, hs.DoctorOptions{Full: true})
				require.NoError(t, err)
				requireHealthy(t, full)
				if d.name == "delete_triggers" {
					db := fixturetest.Raw(t, path)
					var n int
					require.NoError(t, db.QueryRow(`SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'quokkasaurus'`).Scan(&n))
					require.Equal(t, 1, n, "the message written without triggers is searchable after repair")
				}
				// The store opens and writes after repair.
				st, err := hs.Open(ctx, cfg)
				require.NoError(t, err)
				s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
				require.NoError(t, err)
				_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: strp("after repair")})
				require.NoError(t, err)
				require.NoError(t, st.Close())
			})
		}
	}
}

// TestDeletedWALOfLiveWriter: a writer commits into the WAL (no
// checkpoint) and its -wal file is deleted while it still has it open.
// doctor names the missing -wal and the failing reads, repair refuses, and
// recover saves every row of the main file (the WAL's commits are gone).
func TestDeletedWALOfLiveWriter(t *testing.T) {
	ctx := context.Background()
	for _, tg := range damageTargets(t) {
		if tg.name != "built" && tg.name != "hermes-v21" && tg.name != "hermes-v30" && tg.name != "hermes-v01" {
			continue
		}
		t.Run(tg.name, func(t *testing.T) {
			path := copyTarget(t, tg.path)
			inMain := countRows(t, path)
			origIDs := rowids(t, path)
			w, err := sqlitex.OpenEnv(path + "?_pragma=busy_timeout(5000)&_pragma=wal_autocheckpoint(0)")
			require.NoError(t, err)
			w.SetMaxOpenConns(1)
			t.Cleanup(func() { w.Close() })
			_, err = w.Exec("PRAGMA journal_mode=WAL")
			require.NoError(t, err)
			for i := 0; i < 20; i++ {
				_, err := w.Exec(`INSERT INTO messages (session_id, role, content, timestamp) SELECT id, 'user', 'in the wal', started_at + 1 FROM sessions ORDER BY rowid LIMIT 1`)
				require.NoError(t, err)
			}
			st, err := os.Stat(path + "-wal")
			require.NoError(t, err)
			require.Greater(t, st.Size(), int64(0))
			require.NoError(t, os.Remove(path+"-wal"))

			r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
			require.NoError(t, err)
			require.False(t, r.OK())
			require.True(t, r.Has("file", path+"-wal") || r.Has("integrity", ""), "%+v", r.Problems())
			msgs := []string{}
			for _, f := range r.Problems() {
				msgs = append(msgs, f.Message)
			}
			require.Contains(t, strings.Join(msgs, " "), "-wal")
			_, err = hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{})
			require.ErrorIs(t, err, hs.ErrCorrupt)

			to := filepath.Join(t.TempDir(), "new.db")
			rep, err := hs.Recover(ctx, hs.RecoverOptions{From: path, To: to, AllowPartial: true})
			require.NoError(t, err)
			requireHealthy(t, rep.Doctor)
			got := countRows(t, to)
			require.Equal(t, inMain["messages"], got["messages"], "every message of the main file is saved")
			require.Equal(t, inMain["sessions"], got["sessions"])
			gotIDs := rowids(t, to)
			require.Equal(t, origIDs["messages"], gotIDs["messages"])
		})
	}
}

func total(m map[string][]int64) int {
	n := 0
	for _, v := range m {
		n += len(v)
	}
	return n
}

// withoutPlaceholders drops the session rows repair adds for messages whose
// session row was lost (source 'recovered').
func withoutPlaceholders(t *testing.T, path string, ids []int64) []int64 {
	db := fixturetest.Raw(t, path)
	defer db.Close()
	var out []int64
	for _, id := range ids {
		var src string
		require.NoError(t, db.QueryRow("SELECT source FROM sessions WHERE rowid = ?", id).Scan(&src))
		if src != "recovered" {
			out = append(out, id)
		}
	}
	return out
}

// TestRepairInterruptedResumes: a repair cancelled in the middle of a
// chunked FTS rebuild (current layout, and a legacy inline table) leaves a
// working file that doctor flags, and the next repair finishes the job.
func TestRepairInterruptedResumes(t *testing.T) {
	ctx := context.Background()
	for _, tg := range damageTargets(t) {
		if tg.name != "built" && tg.name != "hermes-v14" {
			continue
		}
		t.Run(tg.name, func(t *testing.T) {
			path := copyTarget(t, tg.path)
			counts := countRows(t, path)
			execRaw(t, path, "DROP TABLE messages_fts_data", "DROP TABLE IF EXISTS messages_fts_content")
			cctx, cancel := context.WithCancel(ctx)
			steps := 0
			_, err := hs.Repair(cctx, hs.Config{Path: path}, hs.RepairOptions{ChunkRows: 5, Progress: func(step string, done, total int64) {
				if strings.HasPrefix(step, "fts") {
					steps++
					if steps == 2 {
						cancel()
					}
				}
			}})
			cancel()
			require.Error(t, err, "the repair was interrupted")
			r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{})
			require.NoError(t, err)
			require.False(t, r.OK(), "a half-done rebuild is reported")
			rep, err := hs.Repair(ctx, hs.Config{Path: path}, hs.RepairOptions{ChunkRows: 5})
			require.NoError(t, err)
			requireHealthy(t, rep.After)
			full, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{Full: true})
			require.NoError(t, err)
			requireHealthy(t, full)
			now := countRows(t, path)
			now["state_meta"] = counts["state_meta"]
			require.Equal(t, counts, now)
		})
	}
}

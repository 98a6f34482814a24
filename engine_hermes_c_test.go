//go:build cgo && (sqlite_fts5 || fts5)

package hermesstate_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// hermesAppendPy appends messages as Hermes' SessionDB.append_message does
// (BEGIN IMMEDIATE, INSERT into messages, message_count + 1, COMMIT) with
// Python's sqlite3 (SQLite 3.40.1 here, what Hermes runs on this machine),
// then prints PRAGMA integrity_check and the FTS5 integrity-check of both
// FTS tables as that SQLite sees them.
const hermesAppendPy = `
import sqlite3, sys, time
path, sid = sys.argv[1], sys.argv[2]
db = sqlite3.connect(path, isolation_level=None, timeout=5)
for text in sys.argv[3:]:
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'assistant', ?, ?)", (sid, text, time.time()))
    db.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (sid,))
    db.execute("COMMIT")
print("sqlite", sqlite3.sqlite_version)
print("integrity_check", db.execute("PRAGMA integrity_check").fetchone()[0])
for t in ("messages_fts", "messages_fts_trigram"):
    try:
        db.execute("INSERT INTO %s(%s) VALUES ('integrity-check')" % (t, t))
        print(t, "ok")
    except sqlite3.DatabaseError as e:
        print(t, "failed:", e)
db.close()
`

// ftsIntegrity runs FTS5's integrity-check of both FTS tables of path on
// engine e; it returns the failures.
func ftsIntegrity(t *testing.T, e *sqlitex.Engine, path string) []string {
	t.Helper()
	db, err := e.OpenDB(e.DSN(sqlitex.ConnConfig{Path: path, BusyTimeout: 5 * time.Second}))
	require.NoError(t, err)
	defer db.Close()
	var bad []string
	var ic string
	require.NoError(t, db.QueryRow("PRAGMA integrity_check").Scan(&ic))
	if ic != "ok" {
		bad = append(bad, "integrity_check: "+ic)
	}
	for _, tab := range []string{"messages_fts", "messages_fts_trigram"} {
		if _, err := db.Exec("INSERT INTO " + tab + "(" + tab + ") VALUES ('integrity-check')"); err != nil {
			bad = append(bad, tab+": "+err.Error())
		}
	}
	return bad
}

// TestFileWrittenByBothEnginesAndHermes: one file written in turn by the
// pure-Go engine, the C engine and Hermes' Python SQLite 3.40.1 passes
// SQLite's integrity_check and FTS5's integrity-check of both FTS tables
// on all three, and every row is found by search on both engines. (No row
// holds U+0000: SQLite before 3.45's trigram tokenizer stopped there, so a
// trigram index 3.40.1 wrote for such text, as in the v11-v21 fixtures,
// fails 3.54.1's integrity-check; doctor knows that case, issue 20.)
func TestFileWrittenByBothEnginesAndHermes(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("python3 (with its sqlite3 module, as Hermes runs) is not installed: %v", err)
		}
		t.Skip("python3 (with its sqlite3 module, as Hermes runs) is not installed: the Hermes side of this test cannot run")
	}
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	var sid string
	write := func(engine, text string) {
		st, err := hs.Open(ctx, hs.Config{Path: path, Engine: engine})
		require.NoError(t, err)
		defer st.Close()
		if sid == "" {
			s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
			require.NoError(t, err)
			sid = s.ID
		}
		_, err = st.Messages().Append(ctx, sid, repo.MessageInput{Role: "user", Content: models.Text(text)})
		require.NoError(t, err)
	}
	write(hs.EngineGo, "zebra written by the Go engine, Größe Ünïcode 東京タワー")
	write(hs.EngineC, "zebra written by the C engine, Größe Ünïcode 東京タワー")
	out, err := exec.Command(py, "-c", hermesAppendPy, path, sid, "zebra written by hermes 東京タワー", "another zebra from hermes").CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "integrity_check ok", string(out))
	require.Contains(t, string(out), "messages_fts ok", string(out))
	require.Contains(t, string(out), "messages_fts_trigram ok", string(out))
	write(hs.EngineC, "zebra again from the C engine")
	write(hs.EngineGo, "zebra again from the Go engine")

	for _, name := range hs.Engines() {
		e, err := sqlitex.Lookup(name)
		require.NoError(t, err)
		require.Empty(t, ftsIntegrity(t, e, path), "%s engine", name)
		st, err := hs.Open(ctx, hs.Config{Path: path, Engine: name, ReadOnly: true})
		require.NoError(t, err)
		hits, err := st.Search().Messages(ctx, "zebra", repo.SearchOptions{Limit: 50})
		require.NoError(t, err)
		require.Len(t, hits, 6, name)
		hits, err = st.Search().Messages(ctx, "京タ", repo.SearchOptions{Limit: 50})
		require.NoError(t, err)
		require.Len(t, hits, 3, "%s: CJK", name)
		hits, err = st.Search().Messages(ctx, "from herm", repo.SearchOptions{Limit: 50})
		require.NoError(t, err)
		require.Len(t, hits, 1, "%s: Hermes' row by substring", name)
		s, err := st.Sessions().Get(ctx, sid)
		require.NoError(t, err)
		require.EqualValues(t, 6, s.MessageCount)
		require.NoError(t, st.Close())
	}
	out, err = exec.Command(py, "-c", hermesAppendPy, path, sid).CombinedOutput()
	require.NoError(t, err, string(out))
	require.Equal(t, 3, strings.Count(string(out), " ok"), "Python's SQLite after all three wrote:\n%s", out)
}

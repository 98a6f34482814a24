package hermesstate_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/glebarez/sqlite"
	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/repo"
)

// hermesSide runs, with python3's sqlite3 (SQLite 3.40.1 here, the one
// Hermes wrote its files with), what a Hermes process does to the file
// through its triggers (write is true): a multimodal message about a
// quokka in session sid, an edit that puts U+0000 into message edit, the
// deletion of the message ids in del. It then reports FTS5 integrity-check of the trigram
// index (rank 1) and the rows the trigram index finds for words, as that
// SQLite sees them.
func hermesSide(t *testing.T, path string, write bool, sid string, edit int64, del []int64, words ...string) (version, integrity string, found map[string][]int64) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing: the trigram index is checked with Hermes' SQLite through it")
		}
		t.Skip("python3 is missing: install it to check the file with the SQLite Hermes uses")
	}
	args, _ := json.Marshal(map[string]any{"write": write, "sid": sid, "edit": edit, "del": del, "words": words})
	out, err := exec.Command(py, "-c", `
import sqlite3, json, sys
a = json.loads(sys.argv[2])
c = sqlite3.connect(sys.argv[1], isolation_level=None)
if a["write"]:
    c.execute("BEGIN IMMEDIATE")
    c.execute("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, 1767100000.5)",
              (a["sid"], "\x00json:" + json.dumps([{"type": "text", "text": "a quokka in the photo?"}])))
    c.execute("UPDATE sessions SET message_count = message_count + 1 WHERE id = ?", (a["sid"],))
    c.execute("UPDATE messages SET content = ? WHERE id = ?", ("edited\x00 by hermes wombat", a["edit"]))
    for i in a["del"] or []:
        c.execute("UPDATE sessions SET message_count = message_count - 1 WHERE id = (SELECT session_id FROM messages WHERE id = ?)", (i,))
        c.execute("DELETE FROM messages WHERE id = ?", (i,))
    c.execute("COMMIT")
try:
    c.execute("INSERT INTO messages_fts_trigram(messages_fts_trigram, rank) VALUES ('integrity-check', 1)")
    integ = "ok"
except Exception as e:
    integ = str(e)
found = {w: [r[0] for r in c.execute("SELECT rowid FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ? ORDER BY rowid", ('"%s"' % w,))] for w in a["words"] or []}
print(json.dumps({"version": sqlite3.sqlite_version, "integrity": integ, "found": found}))
`, path, string(args)).Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("python3: %v: %s", err, ee.Stderr)
	}
	require.NoError(t, err)
	var res struct {
		Version, Integrity string
		Found              map[string][]int64
	}
	require.NoError(t, json.Unmarshal(out, &res))
	return res.Version, res.Integrity, res.Found
}

// ourSide is hermesSide's report with our SQLite (3.54.1).
func ourSide(t *testing.T, path string, words ...string) (integrity string, found map[string][]int64) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	integrity = "ok"
	if _, err := db.Exec("INSERT INTO messages_fts_trigram(messages_fts_trigram, rank) VALUES ('integrity-check', 1)"); err != nil {
		integrity = err.Error()
	}
	found = map[string][]int64{}
	for _, w := range words {
		found[w] = []int64{}
		rows, err := db.Query(`SELECT rowid FROM messages_fts_trigram WHERE messages_fts_trigram MATCH ? ORDER BY rowid`, `"`+w+`"`)
		require.NoError(t, err)
		for rows.Next() {
			var id int64
			require.NoError(t, rows.Scan(&id))
			found[w] = append(found[w], id)
		}
		require.NoError(t, rows.Err())
		rows.Close()
	}
	return integrity, found
}

// TestTrigramConsistentForBothSQLites (issue 20 §3): a file that Hermes
// (SQLite 3.40.1, whose trigram tokenizer stops at U+0000) and hermesstate
// (3.54.1, which skips it) both write stays consistent and searchable for
// both. hermesstate writes multimodal and U+0000-holding messages; Hermes'
// SQLite adds one, edits one of ours and deletes another; hermesstate
// deletes Hermes' and edits another. Then FTS5 integrity-check of the
// trigram index passes under both SQLites, both find the same rows (each
// text indexed up to its first U+0000, as 3.40.1 indexed Hermes' files),
// and doctor --full finds nothing wrong. Checked on the inline layout
// (v21), the current one (v30) and a new store.
func TestTrigramConsistentForBothSQLites(t *testing.T) {
	ctx := context.Background()
	targets := map[string]string{"new": filepath.Join(t.TempDir(), "state.db")}
	for _, f := range fixturetest.LoadFixtures(t) {
		if f.Version == 21 || f.Version == 30 {
			targets[f.Name] = f.CopyDB(t)
		}
	}
	require.Len(t, targets, 3)
	for name, path := range targets {
		t.Run(name, func(t *testing.T) {
			st, err := hs.Open(ctx, hs.Config{Path: path})
			require.NoError(t, err)
			s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
			require.NoError(t, err)
			ids, err := st.Messages().AppendBatch(ctx, s.ID, []repo.MessageInput{
				{Role: "user", Parts: []any{map[string]any{"type": "text", "text": "is this a zebra?"}}},
				{Role: "assistant", Content: strp("a zebra\x00 crossing, yes")},
				{Role: "user", Parts: []any{map[string]any{"type": "text", "text": "and this zebu?"}}},
			})
			require.NoError(t, err)
			require.NoError(t, st.Close())

			_, pre, _ := hermesSide(t, path, false, "", 0, nil)
			require.Equal(t, "ok", pre, "Hermes' SQLite after our writes")
			version, integrity, _ := hermesSide(t, path, true, s.ID, ids[0], []int64{ids[2]})
			require.Equal(t, "ok", integrity, "SQLite %s after Hermes' writes", version)
			t.Logf("Hermes' side: SQLite %s", version)

			// Hermes' multimodal row is the newest; hermesstate deletes it
			// and edits one of its own, through the triggers.
			raw := fixturetest.Raw(t, path)
			var hermesRow int64
			require.NoError(t, raw.QueryRow("SELECT max(id) FROM messages").Scan(&hermesRow))
			_, err = raw.Exec("UPDATE messages SET content = ? WHERE id = ?", "zebra\x00 again, edited here", ids[1])
			require.NoError(t, err)
			require.NoError(t, raw.Close())
			integ, _ := ourSide(t, path)
			require.Equal(t, "ok", integ, "our SQLite after Hermes' writes")
			raw = fixturetest.Raw(t, path)
			_, err = raw.Exec("UPDATE sessions SET message_count = message_count - 1 WHERE id = ?", s.ID)
			require.NoError(t, err)
			_, err = raw.Exec("DELETE FROM messages WHERE id = ?", hermesRow)
			require.NoError(t, err)
			require.NoError(t, raw.Close())

			words := []string{"zebra", "zebu", "quokka", "wombat", "again", "edited", "json"}
			_, theirs, found := hermesSide(t, path, false, "", 0, nil, words...)
			integ, ours := ourSide(t, path, words...)
			require.Equal(t, "ok", theirs, "Hermes' SQLite: the trigram index matches its content")
			require.Equal(t, "ok", integ, "our SQLite: the trigram index matches its content")
			require.Equal(t, found, ours, "both SQLites find the same rows")
			// Each text is indexed up to its first U+0000, as SQLite 3.40.1
			// indexed it in Hermes' files: multimodal content not at all.
			require.Equal(t, []int64{ids[1]}, found["zebra"], "our edit, indexed up to its U+0000")
			require.Equal(t, []int64{ids[0]}, found["edited"], "Hermes' edit, indexed up to its U+0000")
			for _, w := range []string{"zebu", "quokka", "wombat", "again"} {
				require.Empty(t, found[w], w)
			}
			require.NotContains(t, found["json"], ids[0])
			require.NotContains(t, found["json"], hermesRow)

			r, err := hs.Doctor(ctx, hs.Config{Path: path}, hs.DoctorOptions{Full: true})
			require.NoError(t, err)
			requireHealthy(t, r)
		})
	}
}

// TestTrigramWithoutNULKeepsOrFixesTheIndex: converting a Hermes file's
// trigram index (ftsql.TrigramWithoutNUL) keeps an index SQLite 3.40.1
// wrote as it is (its trigrams are the ones the new feed gives), corrects
// one this SQLite rebuilt (the rows holding U+0000), and rebuilds a damaged
// one; in each case both SQLites then find it consistent and the same rows.
func TestTrigramWithoutNULKeepsOrFixesTheIndex(t *testing.T) {
	for _, f := range fixturetest.LoadFixtures(t) {
		if f.Version != 21 && f.Version != 30 {
			continue
		}
		for _, how := range []string{"as Hermes wrote it", "rebuilt by SQLite 3.54", "damaged"} {
			t.Run(f.Name+"/"+how, func(t *testing.T) {
				path := f.CopyDB(t)
				_, _, hermes := hermesSide(t, path, false, "", 0, nil, "json", "screenshot", "docker", "广西")
				switch how {
				case "rebuilt by SQLite 3.54":
					execRaw(t, path, "INSERT INTO messages_fts_trigram(messages_fts_trigram) VALUES ('rebuild')")
				case "damaged":
					damageTrigram(t, path, f.Version)
				}
				db := fixturetest.Raw(t, path)
				g, err := gorm.Open(sqlite.Dialector{Conn: db}, &gorm.Config{Logger: logger.Discard})
				require.NoError(t, err)
				var changed bool
				require.NoError(t, g.Transaction(func(tx *gorm.DB) error {
					var err error
					changed, err = ftsql.TrigramWithoutNUL(tx)
					return err
				}))
				require.True(t, changed)
				feeds, err := ftsql.TrigramFeedsNUL(g)
				require.NoError(t, err)
				require.False(t, feeds)
				require.NoError(t, db.Close())
				words := []string{"json", "screenshot", "docker", "广西"}
				_, theirs, found := hermesSide(t, path, false, "", 0, nil, words...)
				integ, ours := ourSide(t, path, words...)
				require.Equal(t, "ok", theirs)
				require.Equal(t, "ok", integ)
				require.Equal(t, found, ours)
				require.Equal(t, hermes, found, "the same rows as Hermes found in its own file")
			})
		}
	}
}

// damageTrigram makes the trigram index disagree with a row without
// U+0000.
func damageTrigram(t *testing.T, path string, version int) {
	t.Helper()
	if version == 30 {
		execRaw(t, path, `INSERT INTO messages_fts_trigram(rowid, content, tool_name) SELECT id, 'ghost words', NULL FROM messages WHERE role = 'user' ORDER BY id LIMIT 1`)
		return
	}
	execRaw(t, path, `UPDATE messages_fts_trigram_content SET c0 = 'ghost words' WHERE id = (SELECT min(id) FROM messages_fts_trigram_content WHERE instr(c0, char(0)) = 0)`)
}

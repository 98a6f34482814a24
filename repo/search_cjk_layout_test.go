package repo_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// likeIDs returns, newest first (timestamp, then id), the ids of the
// messages whose content, tool_name or tool_calls contains tok: what
// Hermes' LIKE scan finds.
func likeIDs(t *testing.T, db *sql.DB, tok string) []int64 {
	t.Helper()
	return hermesstatetest.IDs(t, db, `SELECT id FROM messages WHERE (content LIKE ?1 OR tool_name LIKE ?1 OR tool_calls LIKE ?1)
		AND (active = 1 OR compacted = 1) ORDER BY timestamp DESC, id`, "%"+tok+"%")
}

// postingIDs decodes every chunk of term.
func postingIDs(t *testing.T, db *sql.DB, term string) (ids []int64, chunks int) {
	t.Helper()
	rows, err := db.Query("SELECT ids FROM "+ftsql.CJKIndexTable+" WHERE term = ?", term)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var b []byte
		require.NoError(t, rows.Scan(&b))
		var ok bool
		ids, ok = ftsql.DecodePostings(ids, b)
		require.True(t, ok)
		chunks++
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids, chunks
}

func requireCJKCheckOK(t *testing.T, st *hs.Store) {
	t.Helper()
	checks, err := st.Search().Check(context.Background())
	require.NoError(t, err)
	found := false
	for _, c := range checks {
		require.True(t, c.OK, "%s: %s", c.Table, c.Detail)
		if c.Table == ftsql.CJKIndexTable {
			found = true
		}
	}
	require.True(t, found, "the CJK index was checked")
}

// The CJK postings span several chunks when a term is common; appends
// (single and batched), plain-SQL inserts, edits and deletes by another
// program keep every search exact; edited and deleted rows leave stale
// postings (a superset) until a full catch-up drops them and queues the
// edited rows again; the check accepts both states and catches a lost
// posting.
func TestCJKPostingsChunksEditsDeletes(t *testing.T) {
	ctx := context.Background()
	st, path := openSearchStore(t)
	db := fixturetest.Raw(t, path)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	n := 0
	text := func() string {
		n++
		return fmt.Sprintf("第%d条：我想去桂林旅游 %s", n, []string{"漓江", "阳朔", "东京", "検索"}[n%4])
	}
	for b := 0; b < 12; b++ {
		batch := make([]repo.MessageInput, 100)
		for i := range batch {
			batch[i] = repo.MessageInput{Role: "user", Content: models.Text(text()), Timestamp: models.Epoch(float64(1000 + n))}
		}
		_, err := st.Messages().AppendBatch(ctx, s.ID, batch)
		require.NoError(t, err)
	}
	for i := 0; i < 50; i++ {
		_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "assistant", Content: models.Text(text()), Timestamp: models.Epoch(float64(1000 + n))})
		require.NoError(t, err)
	}
	for i := 0; i < 20; i++ { // another program's inserts: queued, indexed on the next CJK search
		n++
		_, err := db.Exec("INSERT INTO messages (session_id, role, content, timestamp) VALUES (?, 'user', ?, ?)", s.ID, fmt.Sprintf("plain 桂林 %d", n), 1000+n)
		require.NoError(t, err)
	}
	// The batches were indexed in their transactions; the 50 single
	// appends are fewer than a deferral batch (repo.CJKDeferBatch) and wait
	// in the queue with the 20 foreign rows, until the next CJK search.
	ids, chunks := postingIDs(t, db, "桂林")
	require.Len(t, ids, 1200)
	require.Greater(t, chunks, 1, "1,200 postings do not fit one chunk")
	check := func(label string) {
		t.Helper()
		for _, q := range []string{"桂林", "漓江", "検索", "桂", "东京"} {
			hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{Limit: 5000})
			require.NoError(t, err)
			require.Equal(t, likeIDs(t, db, q), hitIDs(hits), "%s: %s", label, q)
		}
	}
	check("after appends")
	requireCJKCheckOK(t, st)
	ids, _ = postingIDs(t, db, "桂林")
	require.Len(t, ids, 1270, "the search caught the queue up")

	_, err = db.Exec("DELETE FROM messages WHERE id % 7 = 0")
	require.NoError(t, err)
	_, err = db.Exec("UPDATE messages SET content = 'no longer chinese' WHERE id % 11 = 0")
	require.NoError(t, err)
	_, err = db.Exec("UPDATE messages SET content = content || ' 熊猫' WHERE id % 13 = 0")
	require.NoError(t, err)
	var gone int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM "+ftsql.CJKGoneTable).Scan(&gone))
	require.Greater(t, gone, 200)
	check("after plain-SQL edits and deletes")
	requireCJKCheckOK(t, st)
	stale, _ := postingIDs(t, db, "桂林")
	require.Contains(t, stale, int64(7), "deleted rows keep their postings until collected")

	indexed, err := st.Search().CatchUp(ctx, 0)
	require.NoError(t, err)
	require.Greater(t, indexed, 0, "edited rows are indexed again")
	require.NoError(t, db.QueryRow("SELECT count(*) FROM "+ftsql.CJKGoneTable).Scan(&gone))
	require.Zero(t, gone)
	after, _ := postingIDs(t, db, "桂林")
	require.NotContains(t, after, int64(7))
	require.NotContains(t, after, int64(11))
	require.Contains(t, after, int64(13))
	panda, _ := postingIDs(t, db, "熊猫")
	require.Contains(t, panda, int64(13))
	check("after the garbage collection")
	requireCJKCheckOK(t, st)

	// A lost posting is reported.
	_, err = db.Exec("DELETE FROM "+ftsql.CJKIndexTable+" WHERE term = ?", "阳朔")
	require.NoError(t, err)
	checks, err := st.Search().Check(ctx)
	require.NoError(t, err)
	bad := ""
	for _, c := range checks {
		if c.Table == ftsql.CJKIndexTable && !c.OK {
			bad = c.Detail
		}
	}
	require.Contains(t, bad, "has no posting")
}

// legacyCJK is the CJK index layout before migration 0103 (as 0007 created
// it): (term, msg_id) rows, an index on msg_id, triggers that delete
// postings.
var legacyCJK = []string{
	`CREATE TABLE hermesstate_cjk_index (term TEXT NOT NULL, msg_id INTEGER NOT NULL, PRIMARY KEY (term, msg_id)) WITHOUT ROWID`,
	`CREATE INDEX hermesstate_cjk_index_msg ON hermesstate_cjk_index (msg_id)`,
	`CREATE TRIGGER hermesstate_cjk_insert AFTER INSERT ON messages
BEGIN
    INSERT OR IGNORE INTO hermesstate_cjk_pending (id) VALUES (new.id);
END`,
	`CREATE TRIGGER hermesstate_cjk_update
AFTER UPDATE OF content, tool_name, tool_calls ON messages
WHEN old.content IS NOT new.content OR old.tool_name IS NOT new.tool_name
  OR old.tool_calls IS NOT new.tool_calls OR old.id IS NOT new.id
BEGIN
    DELETE FROM hermesstate_cjk_index WHERE msg_id = old.id;
    INSERT OR IGNORE INTO hermesstate_cjk_pending (id) VALUES (new.id);
END`,
	`CREATE TRIGGER hermesstate_cjk_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM hermesstate_cjk_index WHERE msg_id = old.id;
    DELETE FROM hermesstate_cjk_pending WHERE id = old.id;
END`,
}

// A store whose CJK index has the layout before 0103 is converted when it
// is opened: every posting is kept, queued rows stay queued, the old table
// and its index are gone, the triggers are the current ones, searches and
// the check agree with the messages, and the posting table is a small
// fraction of the old one.
func TestCJKLegacyIndexConverted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "telegram"})
	require.NoError(t, err)
	zh := []rune("我想去旅游推荐一下路线到阳朔可以坐船游漓江大约四个小时修改服务端的配置文件天气很好")
	for i := 0; i < 400; i++ {
		var b strings.Builder
		for j := 0; j < 10+i%25; j++ {
			b.WriteRune(zh[(i*7+j*3)%len(zh)])
		}
		_, err := st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "user", Content: models.Text(b.String() + " docker"), Timestamp: models.Epoch(float64(1000 + i))})
		require.NoError(t, err)
	}
	require.NoError(t, st.Close())

	// Back to the old layout, postings written from the texts.
	db := fixturetest.Raw(t, path)
	for _, q := range []string{"DROP TRIGGER hermesstate_cjk_insert", "DROP TRIGGER hermesstate_cjk_update", "DROP TRIGGER hermesstate_cjk_delete",
		"DROP TABLE " + ftsql.CJKIndexTable, "DROP TABLE " + ftsql.CJKGoneTable,
		"DELETE FROM hermesstate_migrations WHERE id = '0103_hermesstate_cjk_postings'"} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	for _, q := range legacyCJK {
		_, err := db.Exec(q)
		require.NoError(t, err)
	}
	rows, err := db.Query("SELECT id, content FROM messages WHERE id <= 390")
	require.NoError(t, err)
	type posting struct {
		term string
		id   int64
	}
	var ps []posting
	for rows.Next() {
		var id int64
		var c string
		require.NoError(t, rows.Scan(&id, &c))
		for _, term := range ftsql.CJKTerms(c) {
			ps = append(ps, posting{term, id})
		}
	}
	rows.Close()
	for _, p := range ps {
		_, err := db.Exec("INSERT INTO hermesstate_cjk_index (term, msg_id) VALUES (?, ?)", p.term, p.id)
		require.NoError(t, err)
	}
	_, err = db.Exec("INSERT INTO hermesstate_cjk_pending (id) SELECT id FROM messages WHERE id > 390")
	require.NoError(t, err)
	require.NoError(t, db.Close())

	st, err = hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()
	db = fixturetest.Raw(t, path)
	var legacy int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name IN ('hermesstate_cjk_index', 'hermesstate_cjk_index_msg')").Scan(&legacy))
	require.Zero(t, legacy, "the old table and its index are dropped")
	var pending int
	require.NoError(t, db.QueryRow("SELECT count(*) FROM "+ftsql.CJKPendingTable).Scan(&pending))
	require.Equal(t, 10, pending, "queued rows stay queued")
	total := 0
	terms := map[string]bool{}
	for _, p := range ps {
		terms[p.term] = true
	}
	for term := range terms {
		ids, _ := postingIDs(t, db, term)
		total += len(ids)
	}
	require.Equal(t, len(ps), total, "every posting is kept")
	var trig string
	require.NoError(t, db.QueryRow("SELECT sql FROM sqlite_master WHERE name = 'hermesstate_cjk_delete'").Scan(&trig))
	require.Contains(t, trig, ftsql.CJKGoneTable)
	requireCJKCheckOK(t, st)
	for _, q := range []string{"阳朔", "漓江", "配置", "天"} {
		hits, err := st.Search().Messages(ctx, q, repo.SearchOptions{Limit: 1000})
		require.NoError(t, err)
		require.Equal(t, likeIDs(t, db, q), hitIDs(hits), q)
	}
	var size int64
	require.NoError(t, db.QueryRow("SELECT sum(length(ids)) FROM "+ftsql.CJKIndexTable).Scan(&size))
	require.Less(t, size, int64(3*len(ps)), "postings take under 3 bytes each")
}

package repo_test

import (
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestSearchFixturesOnPostgres: every Hermes fixture copied into
// PostgreSQL answers every fixture search case with the same sessions and
// messages as the SQLite store (which gives Hermes' answers), ranking aside:
// where a page is cut by limit/offset in rank order, only the page size is
// compared. Older files are compared after their SQLite FTS layout is
// rebuilt to the current one (which is what PostgreSQL indexes by).
func TestSearchFixturesOnPostgres(t *testing.T) {
	pgtest.DSN(t)
	for _, f := range fixturetest.LoadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			ctx := fixturetest.Ctx(t)
			src, cleanup, err := hs.OpenSnapshot(ctx, f.CopyDB(t), hs.Config{})
			require.NoError(t, err)
			defer cleanup()
			dst := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
			_, err = hs.Copy(ctx, src, dst, hs.CopyOptions{})
			require.NoError(t, err)
			// PostgreSQL indexes with the current (v30) layout's rules; so
			// must the SQLite snapshot of an older file.
			require.NoError(t, src.Search().Rebuild(ctx, repo.RebuildOptions{}))
			var cases []searchCase
			f.Get(t, "search", &cases)
			for i, c := range cases {
				opt := searchOpts(c.Kwargs)
				a, err := src.Search().Run(ctx, c.Query, opt)
				if errors.Is(err, hs.ErrUnsearchableQuery) {
					// Nothing to search (issue 28, item 6): said alike.
					_, err = dst.Search().Run(ctx, c.Query, opt)
					require.ErrorIs(t, err, hs.ErrUnsearchableQuery, "case %d %q", i, c.Query)
					continue
				}
				require.NoError(t, err, "case %d", i)
				b, err := dst.Search().Run(ctx, c.Query, opt)
				require.NoError(t, err, "case %d %q", i, c.Query)
				require.Equal(t, a.Sanitized, b.Sanitized)
				if opt.Offset > 0 && opt.Sort == "" {
					require.Len(t, b.Hits, len(a.Hits), "case %d %q", i, c.Query)
					continue
				}
				ids := func(r []int64) []int64 { sort.Slice(r, func(i, j int) bool { return r[i] < r[j] }); return r }
				var ma, mb []int64
				sa, sb := map[string]bool{}, map[string]bool{}
				for _, h := range a.Hits {
					ma = append(ma, h.ID)
					sa[h.SessionID] = true
				}
				for _, h := range b.Hits {
					mb = append(mb, h.ID)
					sb[h.SessionID] = true
					require.NotNil(t, h.Source)
					require.NotEmpty(t, h.Context, "case %d: context", i)
				}
				require.Equal(t, sa, sb, "case %d %q (%s): sessions; sqlite route %s, postgres route %s", i, c.Query, c.Kind, a.Route, b.Route)
				require.Equal(t, ids(ma), ids(mb), "case %d %q (%s): messages; sqlite route %s, postgres route %s", i, c.Query, c.Kind, a.Route, b.Route)
				if opt.Sort != "" {
					var oa, ob []int64
					for _, h := range a.Hits {
						oa = append(oa, h.ID)
					}
					for _, h := range b.Hits {
						ob = append(ob, h.ID)
					}
					require.Equal(t, oa, ob, "case %d: order with sort %s", i, opt.Sort)
				}
			}
		})
	}
}

// pgRankOrderIDs is the rank-ordered word search computed independently:
// every match of tsq ranked by ts_rank, then newest, with the default
// filters (active or compacted, not hidden).
func pgRankOrderIDs(t *testing.T, st *hs.Store, tsq string, limit, offset int) []int64 {
	t.Helper()
	return hermesstatetest.IDs(t, hermesstatetest.SQL(t, st), `SELECT m.id FROM hs_messages_fts fx JOIN messages m ON m.id = fx.id
		WHERE fx.doc @@ to_tsquery('simple', $1) AND (m.active = 1 OR m.compacted = 1) AND COALESCE(m.display_kind, '') <> 'hidden'
		ORDER BY ts_rank(fx.doc, to_tsquery('simple', $1)) DESC, m.timestamp DESC, m.id DESC LIMIT $2 OFFSET $3`, tsq, limit, offset)
}

// TestPostgresRankPageFromCandidates: the rank-ordered word search ranks
// in hs_messages_fts and joins only the best candidates; its pages are
// those of ranking every match: with ties across the candidate cut (many
// rows of equal rank, ordered newest first), and when the filters drop
// every candidate (the best-ranked rows inactive or hidden), where the
// statement that ranks every match answers.
func TestPostgresRankPageFromCandidates(t *testing.T) {
	st := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
	ctx := fixturetest.Ctx(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
	require.NoError(t, err)
	var batch []repo.MessageInput
	for i := 0; i < 600; i++ {
		text := "alpha filler words here"
		switch {
		case i%3 == 0:
			text = "alpha alpha alpha beta" // the best-ranked third
		case i%3 == 1:
			text = "alpha beta gamma delta"
		}
		batch = append(batch, repo.MessageInput{Role: "user", Content: models.Text(text), Timestamp: models.Epoch(1767225600 + float64(i%250))})
	}
	ids := hermesstatetest.AppendAll(t, st, "s", batch...)
	check := func(t *testing.T, q, tsq string) {
		for _, page := range []struct{ limit, offset int }{{20, 0}, {20, 180}, {50, 190}, {5, 0}, {300, 100}} {
			res, err := st.Search().Run(ctx, q, repo.SearchOptions{Limit: page.limit, Offset: page.offset})
			require.NoError(t, err)
			require.Equal(t, repo.RouteWord, res.Route)
			got := []int64{}
			for _, h := range res.Hits {
				got = append(got, h.ID)
			}
			require.Equal(t, pgRankOrderIDs(t, st, tsq, page.limit, page.offset), got, "%q limit %d offset %d", q, page.limit, page.offset)
		}
	}
	t.Run("ties", func(t *testing.T) {
		check(t, "alpha", "'alpha'")
		check(t, "beta", "'beta'")
	})
	t.Run("filtered", func(t *testing.T) {
		// The 200 best-ranked rows leave the default search: inactive or hidden.
		db := hermesstatetest.SQL(t, st)
		for i, id := range ids {
			if i%3 != 0 {
				continue
			}
			if i%2 == 0 {
				_, err = db.Exec("UPDATE messages SET active = 0 WHERE id = $1", id)
			} else {
				_, err = db.Exec("UPDATE messages SET display_kind = 'hidden' WHERE id = $1", id)
			}
			require.NoError(t, err)
		}
		check(t, "alpha", "'alpha'")
		check(t, "beta", "'beta'")
	})
}

// TestSearchExplainOnPostgres: Explain gives PostgreSQL's plan of the main
// statement (it gave none before), and the word search's plan ranks in
// hs_messages_fts before it joins messages.
func TestSearchExplainOnPostgres(t *testing.T) {
	st := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
	ctx := fixturetest.Ctx(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
	require.NoError(t, err)
	hermesstatetest.AppendAll(t, st, "s", repo.MessageInput{Role: "user", Content: models.Text("alpha beta")})
	res, err := st.Search().Explain(ctx, "alpha", repo.SearchOptions{})
	require.NoError(t, err)
	require.Len(t, res.Hits, 1)
	plan := strings.Join(res.Plan, "\n")
	require.Contains(t, plan, "hs_messages_fts")
	require.Contains(t, plan, "Limit")
}

// pgScanIDs is the CJK LIKE route computed independently: every message
// holding some token in content, tool_name or tool_calls (ILIKE), with
// the default filters, newest first, ids only.
func pgScanIDs(t *testing.T, st *hs.Store, toks []string) []int64 {
	t.Helper()
	var preds []string
	var args []any
	for _, tok := range toks {
		n := len(args) + 1
		preds = append(preds, "(m.content ILIKE $"+strconv.Itoa(n)+" OR m.tool_name ILIKE $"+strconv.Itoa(n)+" OR m.tool_calls ILIKE $"+strconv.Itoa(n)+")")
		args = append(args, "%"+tok+"%")
	}
	return hermesstatetest.IDs(t, hermesstatetest.SQL(t, st), `SELECT m.id FROM messages m WHERE (`+strings.Join(preds, " OR ")+`)
		AND (m.active = 1 OR m.compacted = 1) AND COALESCE(m.display_kind, '') <> 'hidden' ORDER BY m.timestamp DESC, m.id`, args...)
}

// TestPostgresShortCJKFromIndex: 1-2 character CJK queries on PostgreSQL
// read their candidates from the CJK character/pair index of migration
// 0104 (before it, a scan of every message), and find exactly the
// messages the LIKE scan finds: in content, tool_name and tool_calls,
// kana, Hangul and characters beyond the BMP, tokens glued to Latin
// letters, several tokens, a term across two columns (not a match).
func TestPostgresShortCJKFromIndex(t *testing.T) {
	st := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
	ctx := fixturetest.Ctx(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli"})
	require.NoError(t, err)
	texts := []string{"广西桂林的山水很美", "桂花", "去桂林旅游", "検索エンジンの設定", "한국어 검색", "𠀀𠀁 rare", "abc桂xyz",
		"plain english text", "林", "ひらがな", "", "桂"}
	var batch []repo.MessageInput
	for i := 0; i < 3000; i++ {
		m := repo.MessageInput{Role: "user", Content: models.Text(fmt.Sprintf("filler message %d about nothing", i)), Timestamp: models.Epoch(1767225600 + float64(i%700))}
		if i%25 == 0 {
			m.Content = models.Text(texts[(i/25)%len(texts)])
		}
		if i%250 == 7 {
			m.Role, m.ToolName, m.Content = "tool", "検索ツール", models.Text("result")
		}
		batch = append(batch, m)
	}
	ids := hermesstatetest.AppendAll(t, st, "s", batch...)
	db := hermesstatetest.SQL(t, st)
	_, err = db.Exec(`UPDATE messages SET tool_calls = '[{"function":{"name":"桂林"}}]' WHERE id = $1`, ids[11])
	require.NoError(t, err)
	_, err = db.Exec(`UPDATE messages SET content = NULL WHERE id = $1`, ids[12])
	require.NoError(t, err)
	_, err = db.Exec(`ANALYZE messages`)
	require.NoError(t, err)
	for _, c := range []struct {
		q    string
		toks []string
	}{
		{"桂林", []string{"桂林"}}, {"桂", []string{"桂"}}, {"林", []string{"林"}}, {"検索", []string{"検索"}}, {"검색", []string{"검색"}},
		{"𠀁", []string{"𠀁"}}, {"𠀀𠀁", []string{"𠀀𠀁"}}, {"c桂", []string{"c桂"}}, {"桂x", []string{"桂x"}}, {"花 ツール", []string{"花", "ツール"}},
		{"ひら", []string{"ひら"}}, {"美桂", []string{"美桂"}}, {"桂林 OR 検索", []string{"桂林", "検索"}}, {"无", []string{"无"}},
	} {
		for _, page := range []struct{ limit, offset int }{{20, 0}, {1000, 0}, {5, 3}} {
			res, err := st.Search().Run(ctx, c.q, repo.SearchOptions{Limit: page.limit, Offset: page.offset})
			require.NoError(t, err, c.q)
			require.Equal(t, repo.RouteCJKLike, res.Route, c.q)
			got := []int64{}
			for _, h := range res.Hits {
				got = append(got, h.ID)
			}
			want := pgScanIDs(t, st, c.toks)
			want = want[min(page.offset, len(want)):]
			want = want[:min(page.limit, len(want))]
			require.Equal(t, want, got, "%q limit %d offset %d", c.q, page.limit, page.offset)
		}
	}
	res, err := st.Search().Explain(ctx, "检", repo.SearchOptions{})
	require.NoError(t, err)
	require.Empty(t, res.Hits)
	require.Contains(t, strings.Join(res.Plan, "\n"), "idx_hermesstate_messages_cjk_grams")
	// Three characters and more take the trigram route, whose terms read
	// the bare columns, which the pg_trgm indexes serve (through COALESCE
	// they could not: at 200k messages every one was read). On this small
	// table the planner may still prefer to read them all, so the plan is
	// checked for the predicate's form.
	res, err = st.Search().Explain(ctx, "検索エンジン", repo.SearchOptions{})
	require.NoError(t, err)
	require.Equal(t, repo.RouteTrigram, res.Route)
	require.Len(t, res.Hits, 10)
	plan := strings.Join(res.Plan, "\n")
	require.Contains(t, plan, "(content ~~* '%検索エンジン%'::text)")
	require.NotContains(t, plan, "COALESCE(content")
}

// TestPostgresCJKGramsInlined: hs_cjk_grams (migrations 0104, 0105) is
// inlined into the statements that evaluate it, so a message without CJK
// costs a regular expression per column and no query of its own (0104's
// set query was planned per call: 0.3 ms more per append at 200k messages);
// its values are those of the set query, and searches still match the
// index.
func TestPostgresCJKGramsInlined(t *testing.T) {
	st := hermesstatetest.Open(t, hermesstatetest.Postgres, hs.Config{})
	db := hermesstatetest.SQL(t, st)
	var plan []string
	rows, err := db.Query(`EXPLAIN (VERBOSE) SELECT hs_cjk_grams(content, tool_name, tool_calls) FROM messages`)
	require.NoError(t, err)
	for rows.Next() {
		var line string
		require.NoError(t, rows.Scan(&line))
		plan = append(plan, line)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	require.Contains(t, strings.Join(plan, "\n"), "CASE WHEN")
	// A statement whose search_path does not hold the store's schema
	// expands the index expression too (the body's call names the schema;
	// unqualified, it failed: function hs_cjk_grams_of does not exist).
	other, err := sql.Open("pgx", pgtest.DSN(t))
	require.NoError(t, err)
	defer other.Close()
	var n int
	require.NoError(t, other.QueryRow(`SELECT count(*) FROM `+pgsql.QuoteIdent(st.Schema())+`.messages m WHERE `+pgsql.QuoteIdent(st.Schema())+`.hs_cjk_grams(m.content, m.tool_name, m.tool_calls) @> '{桂}'`).Scan(&n))
	require.Zero(t, n)
	for _, c := range []struct {
		content, toolName, toolCalls any
		want                         string
	}{
		{"hello 桂林山水", nil, `{"a":"服务"}`, "{务,山,山水,服,服务,林,林山,桂,桂林,水}"},
		{"plain", "tool", nil, "{}"},
		{nil, nil, nil, "{}"},
		{nil, "検索", nil, "{検,検索,索}"},
		{"𠀀 한", nil, nil, "{한,𠀀}"},
	} {
		const sorted = `COALESCE((SELECT array_agg(g ORDER BY g) FROM unnest(%s) g), '{}')::text`
		var got, of string
		require.NoError(t, db.QueryRow(fmt.Sprintf("SELECT "+sorted+", "+sorted, "hs_cjk_grams($1, $2, $3)",
			"hs_cjk_grams_of(COALESCE($1, '') || ' ' || COALESCE($2, '') || ' ' || COALESCE($3, ''))"),
			c.content, c.toolName, c.toolCalls).Scan(&got, &of))
		require.Equal(t, c.want, got, "%v", c)
		require.Equal(t, of, got, "%v", c)
	}
}

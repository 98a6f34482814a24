package repo_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/repo"
)

// hermesFTSAnswer is the answer of Hermes' own statements for an FTS route:
// the search statement (ftsql.MatchQuery, Hermes' text) on a plain
// connection, then the context statement for its hits, assembled as Hermes
// does.
func hermesFTSAnswer(t *testing.T, db *sql.DB, table, match, sort string, limit, offset int, f ftsql.Filters) []repo.SearchHit {
	t.Helper()
	q := ftsql.MatchQuery(table, match, sort, limit, offset, f)
	rows, err := db.Query(q.SQL, q.Args...)
	require.NoError(t, err)
	hits := []repo.SearchHit{}
	for rows.Next() {
		var h repo.SearchHit
		var snippet, toolName, source, model sql.NullString
		var started, ts sql.NullFloat64
		require.NoError(t, rows.Scan(&h.ID, &h.SessionID, &h.Role, &snippet, &ts, &toolName, &source, &model, &started))
		h.Timestamp = ts.Float64
		ns := func(s sql.NullString) *string {
			if !s.Valid {
				return nil
			}
			return &s.String
		}
		h.Snippet, h.ToolName, h.Source, h.Model = ns(snippet), ns(toolName), ns(source), ns(model)
		if started.Valid {
			h.SessionStarted = &started.Float64
		}
		hits = append(hits, h)
	}
	require.NoError(t, rows.Err())
	rows.Close()
	if len(hits) == 0 {
		return hits
	}
	ids := make([]any, len(hits))
	ctxs := map[int64][]repo.ContextMessage{}
	for i, h := range hits {
		ids[i] = h.ID
		ctxs[h.ID] = []repo.ContextMessage{}
	}
	rows, err = db.Query(ftsql.ContextSQL(len(ids)), ids...)
	require.NoError(t, err)
	for rows.Next() {
		var id int64
		var role string
		var content sql.NullString
		require.NoError(t, rows.Scan(&id, &role, &content))
		var cp *string
		if content.Valid {
			cp = &content.String
		}
		ctxs[id] = append(ctxs[id], repo.ContextMessage{Role: role, Content: ftsql.ContextText(cp)})
	}
	require.NoError(t, rows.Err())
	rows.Close()
	for i := range hits {
		hits[i].Context = ctxs[hits[i].ID]
	}
	return hits
}

// The FTS routes answer exactly as Hermes' two statements do (ids, order,
// snippets, context), on a store made to have what order and context
// depend on: many equal bm25 ranks (identical short rows), equal
// timestamps inside a session, NULL and multimodal content, tool rows,
// rewound rows and several sources; for every sort, with pages and
// filters.
func TestSearchFTSRoutesEqualHermesStatements(t *testing.T) {
	ctx := context.Background()
	st, path := openSearchStore(t)
	db := fixturetest.Raw(t, path)
	r := rand.New(rand.NewSource(7))
	sources := []string{"cli", "telegram", "cron", "discord"}
	words := []string{"docker", "deploy", "deployment", "kube", "服务端配置", "データベース", "youer服务端"}
	for s := 0; s < 12; s++ {
		sid := fmt.Sprintf("sess-%02d", s)
		_, err := db.Exec("INSERT INTO sessions (id, source, started_at) VALUES (?, ?, ?)", sid, sources[s%len(sources)], 1000+s)
		require.NoError(t, err)
		for i := 0; i < 40; i++ {
			var content any
			role := []string{"user", "assistant"}[i%2]
			switch k := r.Intn(10); {
			case k < 3: // identical short rows: equal ranks
				content = words[r.Intn(3)]
			case k < 4:
				content = nil
			case k < 5:
				content = "\x00json:" + fmt.Sprintf(`[{"type":"text","text":"%s multimodal"},{"type":"image_url"}]`, words[r.Intn(len(words))])
			case k < 6:
				role, content = "tool", strings.Repeat(words[r.Intn(len(words))]+" output ", 1+r.Intn(60))
			default:
				n := 1 + r.Intn(30)
				parts := make([]string, n)
				for j := range parts {
					parts[j] = words[r.Intn(len(words))]
					if r.Intn(3) > 0 {
						parts[j] = "filler"
					}
				}
				content = strings.Join(parts, " ")
			}
			ts := float64(2000 + i/3) // three rows share each timestamp
			_, err := db.Exec("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, ?, ?, ?, ?)",
				sid, role, content, ts, map[bool]int{true: 0, false: 1}[r.Intn(12) == 0])
			require.NoError(t, err)
		}
	}
	type tc struct {
		q      string
		table  string
		match  string
		filter ftsql.Filters
		opt    repo.SearchOptions
	}
	var cases []tc
	for _, sort := range []string{"", "newest", "oldest"} {
		for _, page := range [][2]int{{20, 0}, {5, 3}, {500, 0}} {
			base := repo.SearchOptions{Sort: sort, Limit: page[0], Offset: page[1]}
			cases = append(cases,
				tc{"docker", ftsql.WordTable, "docker", ftsql.Filters{}, base},
				tc{"deploy*", ftsql.WordTable, "deploy*", ftsql.Filters{}, base},
				tc{"docker deployment", ftsql.WordTable, "docker deployment", ftsql.Filters{}, base},
				tc{`"docker deploy"`, ftsql.WordTable, `"docker deploy"`, ftsql.Filters{}, base},
				tc{"服务端配置", ftsql.TrigramTable, `"服务端配置"`, ftsql.Filters{}, base},
				tc{"データベース", ftsql.TrigramTable, `"データベース"`, ftsql.Filters{}, base},
			)
			withSrc := base
			withSrc.Sources = []string{"telegram", "cron"}
			cases = append(cases, tc{"docker", ftsql.WordTable, "docker", ftsql.Filters{Sources: []string{"telegram", "cron"}}, withSrc})
			inactive := base
			inactive.IncludeInactive = true
			cases = append(cases, tc{"deployment", ftsql.WordTable, "deployment", ftsql.Filters{IncludeInactive: true}, inactive})
		}
	}
	for _, c := range cases {
		res, err := st.Search().Run(ctx, c.q, c.opt)
		require.NoError(t, err)
		want := hermesFTSAnswer(t, db, c.table, c.match, c.opt.Sort, c.opt.Limit, c.opt.Offset, c.filter)
		require.NotEmpty(t, want, "%q: the case finds nothing", c.q)
		require.Equal(t, fixturetest.ToAny(want), fixturetest.ToAny(res.Hits), "%q route %s sort %q limit %d offset %d", c.q, res.Route, c.opt.Sort, c.opt.Limit, c.opt.Offset)
	}
}

package repo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/pgsql"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// SearchOptions are the arguments of Hermes' search_messages besides the
// query.
type SearchOptions struct {
	// Sources, when non-nil, keeps only sessions of these sources; an empty
	// non-nil slice matches nothing. Nil: no source filter (the default).
	Sources []string
	// ExcludeSources, when non-nil, drops sessions of these sources.
	ExcludeSources []string
	// Roles, when non-empty, keeps only these message roles. A filter that
	// contains "tool" searches canonical rows with LIKE (full tool output).
	Roles []string
	// Limit is the page size (0 means 20); Offset skips hits.
	Limit, Offset int
	// Sort is "newest", "oldest" or "" (bm25 rank).
	Sort string
	// IncludeInactive also finds rewound rows.
	IncludeInactive bool
	// Since and Until, when > 0, keep messages written at or after Since
	// and before Until (epoch seconds).
	Since, Until float64
}

// ContextMessage is one message of a hit's context window.
type ContextMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// SearchHit is one result, with the keys of Hermes' result dict.
type SearchHit struct {
	ID             int64            `json:"id"`
	SessionID      string           `json:"session_id"`
	Role           string           `json:"role"`
	Snippet        *string          `json:"snippet"`
	Timestamp      float64          `json:"timestamp"`
	ToolName       *string          `json:"tool_name"`
	Source         *string          `json:"source"`
	Model          *string          `json:"model"`
	SessionStarted *float64         `json:"session_started"`
	Context        []ContextMessage `json:"context"`
}

// Route names the path a search took.
type Route string

// Routes.
const (
	RouteEmpty       Route = "empty"
	RouteNoFTS       Route = "no_fts"
	RouteWord        Route = "fts5"
	RouteWordRetry   Route = "fts5+trigram_retry"
	RouteTrigram     Route = "trigram"
	RouteCJKIndex    Route = "cjk_index"
	RouteCJKLike     Route = "like_scan"
	RouteToolLike    Route = "like_tool_role"
	RouteStaleLike   Route = "like_scan_fts_stale"
	RouteSyntaxError Route = "fts5_syntax_error"
	// RouteRepaired: FTS5 refused Hermes' sanitized query (Hermes answers
	// such a query with no hits); the word index was searched with
	// fts.Repair's form of it instead (SearchResult.Searched).
	RouteRepaired Route = "fts5_repaired"
)

// SearchResult is a search's hits plus how they were found.
type SearchResult struct {
	Sanitized string
	// Searched is the FTS5 query the word index was searched with when it
	// is not Sanitized (RouteRepaired: fts.Repair of the query), else "".
	Searched string
	Route    Route
	Hits     []SearchHit
	// Plan is SQLite's EXPLAIN QUERY PLAN of the main statement (filled by
	// Explain only).
	Plan []string
}

// FTSCheck is the outcome of the integrity check of one index.
type FTSCheck struct {
	Table string `json:"table"`
	OK    bool   `json:"ok"`
	// Detail says what is wrong (empty when OK).
	Detail string `json:"detail,omitempty"`
}

// RebuildOptions tune Search.Rebuild.
type RebuildOptions struct {
	// Chunk is the number of message ids per transaction (0 means 500).
	Chunk int
	// Pause, when set, is called between chunks with the cost of the chunk
	// just written, and may sleep (Hermes pauses max(0.2 s, 4 × cost)).
	Pause func(ctx context.Context, chunkCost float64)
	// Progress, when set, is called after every chunk.
	Progress func(done, total int64)
	// MaxChunks stops after this many chunks (0: run to completion); the
	// rebuild resumes from its marker on the next call.
	MaxChunks int
}

// Search finds messages by full-text query, with Hermes' sanitizer,
// routing and result shape, and maintains the FTS indexes.
type Search interface {
	// Messages runs Hermes' search_messages. An empty query gives no
	// hits and no error. A query whose Hermes sanitization FTS5 refuses
	// (Hermes answers it with no hits) is searched in fts.Repair's form
	// (dotted terms, flags and paths as phrases of their tokens); one
	// that holds nothing an index can search (only operators, punctuation
	// or symbols) is ErrInvalid wrapping ErrUnsearchable, naming why:
	// "no messages match" is said only of a search that ran. It returns
	// ErrInvalid for a negative limit or offset and ErrStorage / ErrCorrupt
	// when the database fails.
	Messages(ctx context.Context, query string, opt SearchOptions) ([]SearchHit, error)
	// Run is Messages returning the sanitized query and the route too.
	Run(ctx context.Context, query string, opt SearchOptions) (SearchResult, error)
	// Explain is Run plus the query plan of the main statement.
	Explain(ctx context.Context, query string, opt SearchOptions) (SearchResult, error)
	// CatchUp indexes up to limit messages queued for the CJK index (<= 0:
	// all, and the postings of every edited or deleted message are dropped
	// first; otherwise that happens once 1,000 of them have gathered) and
	// returns how many it indexed.
	CatchUp(ctx context.Context, limit int) (int, error)
	// Rebuild rebuilds every index in bounded chunks, each in its own write
	// transaction, resumable after an interruption (markers
	// fts_rebuild_high_water / fts_rebuild_progress in state_meta). A file in
	// an older layout is first converted to Hermes' current layout. It
	// returns ErrBusy when the write lock could not be had.
	Rebuild(ctx context.Context, opt RebuildOptions) error
	// Check runs FTS5 'integrity-check' on every FTS table and verifies the
	// CJK index postings; it returns one entry per index.
	Check(ctx context.Context) ([]FTSCheck, error)
	// RebuildStatus returns the progress of a pending deferred rebuild
	// (Hermes' fts_rebuild_status), nil when none is pending
	// (search_status.go).
	RebuildStatus(ctx context.Context) (*RebuildStatus, error)
	// OptimizeAvailable reports whether Hermes' optimize-storage has work
	// on this file (fts_optimize_available): an older FTS layout, a
	// trigram index still holding tool_calls, an interrupted optimize, or
	// an empty external index beside messages. False on PostgreSQL.
	OptimizeAvailable(ctx context.Context) (bool, error)
}

type searchRepo struct {
	db          *DB
	cannotWrite atomic.Bool
	warnedNoCJK atomic.Bool
}

// NewSearch returns the GORM implementation of Search.
func NewSearch(db *DB) Search { return &searchRepo{db: db} }

// searchState is what routing needs to know about the file.
type searchState struct {
	word, trigram, cjkIndex bool
	stale                   bool
	highWater, progress     int64
	pending                 bool
}

// searchStateSQL reads, in one statement (the engine compiles every
// statement on every call, so a search pays per statement), which search
// tables exist and the state_meta markers routing depends on. The CJK
// queue is probed separately, and only for queries with CJK characters.
const searchStateSQL = `SELECT
 (SELECT group_concat(name, ' ') FROM sqlite_master WHERE type = 'table' AND name IN ('` +
	ftsql.WordTable + `', '` + ftsql.TrigramTable + `', '` + ftsql.CJKIndexTable + `', '` + ftsql.CJKPendingTable + `')),
 EXISTS (SELECT 1 FROM state_meta WHERE key = 'fts_stale'),
 (SELECT value FROM state_meta WHERE key = 'fts_rebuild_high_water'),
 (SELECT value FROM state_meta WHERE key = 'fts_rebuild_progress')`

func metaInt(tx *gorm.DB, key string) (int64, bool, error) {
	var v []sql.NullString
	if err := tx.Raw("SELECT value FROM state_meta WHERE key = ?", key).Pluck("value", &v).Error; err != nil {
		return 0, false, err
	}
	if len(v) == 0 {
		return 0, false, nil
	}
	n, ok := metaIntValue(v[0])
	return n, ok, nil
}

func metaIntValue(v sql.NullString) (int64, bool) {
	if !v.Valid {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v.String), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// readSearchState reads what routing needs; wantPending also probes the
// CJK queue (only CJK queries use it).
func readSearchState(tx *gorm.DB, wantPending bool) (searchState, error) {
	var st searchState
	var names, hw, progress sql.NullString
	var stale bool
	if err := tx.Raw(searchStateSQL).Row().Scan(&names, &stale, &hw, &progress); err != nil {
		return st, err
	}
	for _, n := range strings.Fields(names.String) {
		switch n {
		case ftsql.WordTable:
			st.word = true
		case ftsql.TrigramTable:
			st.trigram = true
		case ftsql.CJKIndexTable:
			st.cjkIndex = true
		case ftsql.CJKPendingTable:
			st.pending = true // table exists; probed below
		}
	}
	hasQueue := st.pending
	st.pending = false
	st.cjkIndex = st.cjkIndex && hasQueue
	st.stale = stale
	if n, ok := metaIntValue(hw); ok && n > 0 {
		st.highWater = n
		st.progress, _ = metaIntValue(progress)
	}
	if st.cjkIndex && wantPending {
		var p bool
		if err := tx.Raw("SELECT EXISTS (SELECT 1 FROM " + ftsql.CJKPendingTable + ")").Row().Scan(&p); err != nil {
			return st, err
		}
		st.pending = p
	}
	return st, nil
}

func (r *searchRepo) Messages(ctx context.Context, query string, opt SearchOptions) ([]SearchHit, error) {
	res, err := r.run(ctx, query, opt, false)
	return res.Hits, err
}

func (r *searchRepo) Run(ctx context.Context, query string, opt SearchOptions) (SearchResult, error) {
	return r.run(ctx, query, opt, false)
}

func (r *searchRepo) Explain(ctx context.Context, query string, opt SearchOptions) (SearchResult, error) {
	return r.run(ctx, query, opt, true)
}

// errFTS marks a statement error that Hermes swallows (syntax, tokenizer).
type errFTS struct{ err error }

func (e errFTS) Error() string { return e.err.Error() }
func (e errFTS) Unwrap() error { return e.err }

func (r *searchRepo) run(ctx context.Context, query string, opt SearchOptions, explain bool) (SearchResult, error) {
	const op = "search.messages"
	if opt.Limit < 0 || opt.Offset < 0 {
		return SearchResult{}, errs.Errorf(errs.ErrInvalid, op, "limit and offset must not be negative (limit %d, offset %d)", opt.Limit, opt.Offset)
	}
	if opt.Limit == 0 {
		opt.Limit = 20
	}
	res := SearchResult{Route: RouteEmpty, Hits: []SearchHit{}}
	if strings.TrimSpace(query) == "" {
		return res, nil
	}
	rules := rulesOf(r.db)
	var raw bool
	res.Sanitized, raw = rules.sanitize(query)
	if res.Sanitized == "" {
		return res, fts.NothingToSearch(op, query)
	}
	if n, ok := checkTermCount(res.Sanitized); !ok {
		return res, errs.Errorf(errs.ErrInvalid, op, "the query has %d terms; at most %d are allowed: shorten it", n, MaxQueryTerms)
	}
	f := ftsql.Filters{IncludeInactive: opt.IncludeInactive, Sources: opt.Sources, ExcludeSources: opt.ExcludeSources, Roles: opt.Roles,
		Since: opt.Since, Until: opt.Until}
	if f.Sources == nil {
		f.Sources = rules.defaultSources()
	}
	// A query with nothing an index can search is said to be one, not
	// answered with "no hits" (Hermes answers []). The LIKE routes (a tool
	// role filter; a stale index, checked below) search any text, and a
	// tokenless query of 3 characters or more may be found by the trigram
	// retry.
	unsearchable := !raw && !fts.ContainsCJK(res.Sanitized) && !fts.HasTerm(res.Sanitized) &&
		!(rules.trigramRetry() && ftsql.TrigramEligible(res.Sanitized)) && !(f.WantsTool() && rules.toolLike())
	if unsearchable && r.db.Dialect == Postgres {
		return res, fts.NothingToSearch(op, query)
	}
	if r.db.Dialect == Postgres {
		return Read(ctx, r.db, op, func(tx *gorm.DB) (SearchResult, error) {
			res := res
			var err error
			rn := &runner{tx: tx, explain: explain, postgres: true}
			res.Route, res.Hits, err = r.routePostgres(rn, res.Sanitized, opt, f)
			res.Plan = rn.plan
			if err != nil {
				return res, err
			}
			if res.Route == RouteWord {
				if err := boundSnippets(tx, Postgres, res.Hits, res.Sanitized); err != nil {
					return res, err
				}
			}
			return res, attachContext(tx, res.Hits)
		})
	}
	isCJK := fts.ContainsCJK(res.Sanitized)
	st, err := Read(ctx, r.db, op, func(tx *gorm.DB) (searchState, error) { return readSearchState(tx, isCJK) })
	if err != nil {
		return res, err
	}
	if unsearchable && !st.stale {
		return res, fts.NothingToSearch(op, query)
	}
	if st.pending && isCJK {
		r.catchUp(ctx, 5000)
		// Appends queue their rows for the index in batches (cjkdefer.go):
		// after the catch-up the queue is usually empty again, and the
		// route then reads the index alone.
		if st2, err := Read(ctx, r.db, op, func(tx *gorm.DB) (searchState, error) { return readSearchState(tx, isCJK) }); err == nil {
			st = st2
		}
	}
	out, err := Read(ctx, r.db, op, func(tx *gorm.DB) (SearchResult, error) {
		res := res
		var err error
		res.Route, res.Hits, res.Plan, err = r.route(tx, rules, query, res.Sanitized, opt, f, st, explain)
		if res.Route == RouteRepaired {
			res.Searched = fts.Repair(query)
		}
		if err != nil {
			if !isFTSErr(err) {
				return res, err
			}
			if raw {
				return res, errRawSyntax(err)
			}
			// FTS5 refused even the repaired query: say so, never "no hits".
			return res, errs.Wrap(errs.ErrInvalid, op, unwrapFTS(err), fmt.Sprintf("the query %q cannot be searched: FTS5 refused it (%s)", query, sqliteMessageOf(err)))
		}
		switch res.Route {
		case RouteWord, RouteWordRetry, RouteTrigram:
			if err := boundSnippets(tx, SQLite, res.Hits, res.Sanitized); err != nil {
				return res, err
			}
		}
		if rules.contextByID() {
			return res, attachContextByID(tx, res.Hits)
		}
		if err := attachContext(tx, res.Hits); err != nil {
			return res, err
		}
		return res, nil
	})
	if err != nil {
		return res, err
	}
	return out, nil
}

type runner struct {
	tx       *gorm.DB
	explain  bool
	postgres bool
	plan     []string
}

// rows runs q. A syntax error of the user's query in the MATCH expression
// (or tsquery) comes back as errFTS (see queryErr); every other error as
// it is, the context's error when the context ended.
func (rn *runner) rows(q ftsql.Query) ([]SearchHit, error) {
	if rn.explain && rn.plan == nil {
		rn.plan = explainPlan(rn.tx, q, rn.postgres)
	}
	rows, err := rn.tx.Raw(q.SQL, q.Args...).Rows()
	if err != nil {
		return nil, rn.queryErr(q, err)
	}
	defer rows.Close()
	hits := []SearchHit{}
	var prevID, nextID sql.NullInt64
	var prevRole, nextRole, prevContent, content, nextContent sql.NullString
	for rows.Next() {
		var h SearchHit
		var snippet, toolName, source, model sql.NullString
		var started sql.NullFloat64
		var ts sql.NullFloat64
		dest := []any{&h.ID, &h.SessionID, &h.Role, &snippet, &ts, &toolName, &source, &model, &started}
		if q.Context {
			dest = append(dest, &prevID, &prevRole, &prevContent, &content, &nextID, &nextRole, &nextContent)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, rn.queryErr(q, err)
		}
		h.Timestamp = ts.Float64
		h.Snippet = nullStr(snippet)
		h.ToolName = nullStr(toolName)
		h.Source = nullStr(source)
		h.Model = nullStr(model)
		if started.Valid {
			v := started.Float64
			h.SessionStarted = &v
		}
		if q.Context {
			h.Context = make([]ContextMessage, 0, 3)
			if prevID.Valid {
				h.Context = append(h.Context, ContextMessage{Role: prevRole.String, Content: ftsql.ContextText(nullStr(prevContent))})
			}
			h.Context = append(h.Context, ContextMessage{Role: h.Role, Content: ftsql.ContextText(nullStr(content))})
			if nextID.Valid {
				h.Context = append(h.Context, ContextMessage{Role: nextRole.String, Content: ftsql.ContextText(nullStr(nextContent))})
			}
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, rn.queryErr(q, err)
	}
	return hits, nil
}

func nullStr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.String
	return &v
}

// queryErr classifies the error of statement q. Only a syntax error of
// the query the user typed, which Hermes swallows into "no hits", becomes
// errFTS: on SQLite an FTS5 query error (fts5QueryErr) raised while the
// statement ran, checked to be the MATCH expression's by compiling q
// again (EXPLAIN, which never parses the MATCH argument: a statement that
// cannot compile, "no such column: m.display_kind", is the file's shape,
// not the query); on PostgreSQL a tsquery syntax error (SQLSTATE 42601
// naming tsquery). When the context ended, its error is returned whatever
// the statement said (an interrupted statement fails with SQLITE_INTERRUPT
// or some other error of the step it was in).
func (rn *runner) queryErr(q ftsql.Query, err error) error {
	if ctx := rn.tx.Statement.Context; ctx != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	if rn.postgres {
		if pgsql.Code(err) == "42601" && strings.Contains(err.Error(), "tsquery") {
			return errFTS{err}
		}
		return err
	}
	if !fts5QueryErr(err) {
		return err
	}
	if xerr := rn.tx.Exec("EXPLAIN "+q.SQL, q.Args...).Error; xerr != nil {
		return err // the statement itself does not compile
	}
	return errFTS{err}
}

// fts5QueryMessages are the messages of the errors FTS5 raises for a MATCH
// expression it cannot parse (fts5_expr.c, fts5_main.c), all SQLITE_ERROR.
var fts5QueryMessages = []string{
	"fts5: syntax error near",
	"unterminated string",
	"fts5: parser stack overflow",
	"fts5: column queries are not supported",
	"queries are not supported (detail",
	"unknown special query",
	"expected integer, got",
	"no such column:", // a column filter naming no column ("TODO: fix" before v14); checked with EXPLAIN
}

// fts5QueryErr reports whether err is SQLITE_ERROR with one of FTS5's
// query-parse messages.
func fts5QueryErr(err error) bool {
	c, ok := sqlitex.Code(err)
	if !ok || c != 1 {
		return false
	}
	msg := err.Error()
	for _, m := range fts5QueryMessages {
		if strings.Contains(msg, m) {
			return true
		}
	}
	return false
}

func isFTSErr(err error) bool {
	var e errFTS
	return errors.As(err, &e)
}

func explainPlan(tx *gorm.DB, q ftsql.Query, postgres bool) []string {
	if postgres {
		return explainPostgres(tx, q)
	}
	rows, err := tx.Raw("EXPLAIN QUERY PLAN "+q.SQL, q.Args...).Rows()
	if err != nil {
		return []string{"explain failed: " + err.Error()}
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if rows.Scan(&id, &parent, &notused, &detail) == nil {
			out = append(out, detail)
		}
	}
	return out
}

// explainPostgres is PostgreSQL's plan of q (EXPLAIN, not run), one line
// per plan line.
func explainPostgres(tx *gorm.DB, q ftsql.Query) []string {
	var out []string
	if err := tx.Raw("EXPLAIN "+q.SQL, q.Args...).Scan(&out).Error; err != nil {
		return []string{"explain failed: " + err.Error()}
	}
	return out
}

// route follows Hermes' search_messages routing (schema v30), with the
// CJK substring scan served by hermesstate's CJK index when present.
// query is what the user typed, q its sanitized form.
func (r *searchRepo) route(tx *gorm.DB, rules searchRules, query, q string, opt SearchOptions, f ftsql.Filters, st searchState, explain bool) (Route, []SearchHit, []string, error) {
	rn := &runner{tx: tx, explain: explain}
	limit, offset := opt.Limit, opt.Offset
	like := func(route Route) (Route, []SearchHit, []string, error) {
		lq, ok := ftsql.LikeFallbackQuery(q, opt.Sort, limit, offset, f)
		if !ok {
			return route, []SearchHit{}, rn.plan, nil
		}
		hits, err := rn.rows(lq)
		if err != nil {
			return route, nil, nil, unwrapFTS(err)
		}
		return route, hits, rn.plan, nil
	}
	if f.WantsTool() && rules.toolLike() {
		return like(RouteToolLike)
	}
	if st.stale {
		return like(RouteStaleLike)
	}
	if !st.word {
		return RouteNoFTS, nil, nil, r.errNoIndex(ftsql.WordTable)
	}
	var hits []SearchHit
	var route Route
	isCJK := fts.ContainsCJK(q) && rules.cjkRouting()
	switch {
	case isCJK && rules.current():
		var err error
		route, hits, err = r.searchCJK(rn, q, opt, f, st)
		if err != nil {
			return route, nil, nil, err
		}
	case isCJK:
		var err error
		route, hits, err = r.searchCJKAt(rn, rules, q, opt, f, st)
		if err != nil {
			return route, nil, nil, err
		}
	default:
		route = RouteWord
		var err error
		hits, err = rn.rows(ftsql.MatchContextQuery(ftsql.WordTable, q, opt.Sort, limit, offset, f))
		if err != nil && !isFTSErr(err) {
			return route, nil, nil, err
		}
		if rules.cjkFallback() && fts.ContainsCJK(q) && (err != nil || len(hits) == 0) {
			// Hermes v6-v9: a CJK query the word index did not answer
			// scans content for the query as typed.
			hits, err = rn.rows(ftsql.ContentLikeQuery(ftsql.StripQuotes(q), limit, offset, f))
			return RouteCJKLike, hits, rn.plan, unwrapFTS(err)
		}
		if err != nil && !rules.raw() {
			// FTS5 refused Hermes' sanitized query (Hermes answers it with
			// no hits): search the repaired form of what was typed.
			repaired := fts.Repair(query)
			if repaired == "" {
				return RouteRepaired, nil, rn.plan, fts.NothingToSearch("search.messages", query)
			}
			route, q = RouteRepaired, repaired
			hits, err = rn.rows(ftsql.MatchContextQuery(ftsql.WordTable, q, opt.Sort, limit, offset, f))
		}
		if err != nil {
			return route, []SearchHit{}, rn.plan, err
		}
	}
	// Top up from rows a pending rebuild has not indexed yet.
	if st.highWater > 0 && len(hits) < limit {
		if gq, ok := ftsql.GapQuery(q, st.progress, st.highWater, limit-len(hits), f); ok {
			gap, err := rn.rows(gq)
			if err != nil && !isFTSErr(err) {
				return route, nil, nil, err
			}
			seen := map[int64]bool{}
			for _, h := range hits {
				seen[h.ID] = true
			}
			for _, h := range gap {
				if !seen[h.ID] {
					hits = append(hits, h)
				}
			}
		}
	}
	// unicode61 keeps Latin glued to CJK in one token: a Latin miss retries
	// on the trigram index (every token >= 3 characters).
	if len(hits) == 0 && !isCJK && rules.trigramRetry() && st.trigram && ftsql.TrigramEligible(q) {
		more, err := rn.rows(ftsql.MatchContextQuery(ftsql.TrigramTable, ftsql.QuoteTokens(ftsql.StripQuotes(q)), opt.Sort, limit, offset, f))
		if err != nil && !isFTSErr(err) {
			return route, nil, nil, err
		}
		if len(more) > 0 {
			hits, route = more, RouteWordRetry
		}
	}
	return route, hits, rn.plan, nil
}

// errNoIndex is the error of a search on a file without the full-text
// index table Hermes searches: the file cannot be searched as Hermes
// would, and "no messages match" would be a wrong answer.
func (r *searchRepo) errNoIndex(table string) error {
	return errs.Errorf(errs.ErrUnsupported, "search.messages",
		"%s has no full-text index (%s), so it cannot be searched; run %s to build it", r.db.where(), table, sqlitex.Command(r.db.Path, "fts", "rebuild"))
}

func unwrapFTS(err error) error {
	var e errFTS
	if errors.As(err, &e) {
		return e.err
	}
	return err
}

func (r *searchRepo) searchCJK(rn *runner, q string, opt SearchOptions, f ftsql.Filters, st searchState) (Route, []SearchHit, error) {
	raw := ftsql.StripQuotes(q)
	if st.trigram && !f.WantsUnindexed() && ftsql.TrigramRouteOK(raw) {
		hits, err := rn.rows(ftsql.MatchContextQuery(ftsql.TrigramTable, ftsql.QuoteTokens(raw), opt.Sort, opt.Limit, opt.Offset, f))
		if err == nil {
			return RouteTrigram, hits, nil
		}
		if !isFTSErr(err) {
			return RouteTrigram, nil, err
		}
		rn.plan = nil
	}
	if st.cjkIndex {
		cands, ok, err := ftsql.CJKCandidates(rn.tx, raw)
		if err != nil {
			return RouteCJKIndex, nil, err
		}
		if ok {
			hits, err := rn.rows(ftsql.CJKIndexQuery(raw, cands, st.pending, opt.Limit, opt.Offset, f))
			return RouteCJKIndex, hits, unwrapFTS(err)
		}
	} else if r.warnedNoCJK.CompareAndSwap(false, true) {
		r.db.logger().Info("hermesstate: this file has no hermesstate CJK index (opened read-only or not yet migrated); short CJK queries use a LIKE scan", "table", ftsql.CJKIndexTable)
	}
	hits, err := rn.rows(ftsql.CJKLikeQuery(raw, opt.Limit, opt.Offset, f))
	return RouteCJKLike, hits, unwrapFTS(err)
}

// attachContext fills the context of each hit that has none yet (the FTS
// routes read it with the hits): the previous message, the hit and the
// next message of its session, content cut to 200 characters.
func attachContext(tx *gorm.DB, hits []SearchHit) error {
	var todo []*SearchHit
	for i := range hits {
		if hits[i].Context == nil {
			todo = append(todo, &hits[i])
		}
	}
	for start := 0; start < len(todo); start += 500 {
		batch := todo[start:min(start+500, len(todo))]
		ids := make([]any, len(batch))
		ctxs := map[int64][]ContextMessage{}
		for i, h := range batch {
			ids[i] = h.ID
			ctxs[h.ID] = []ContextMessage{}
		}
		rows, err := tx.Raw(ftsql.ContextSQL(len(ids)), ids...).Rows()
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var role string
			var content sql.NullString
			if err := rows.Scan(&id, &role, &content); err != nil {
				rows.Close()
				return err
			}
			var cp *string
			if content.Valid {
				cp = &content.String
			}
			ctxs[id] = append(ctxs[id], ContextMessage{Role: role, Content: ftsql.ContextText(cp)})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
		for _, h := range batch {
			h.Context = ctxs[h.ID]
		}
	}
	return nil
}

func (r *searchRepo) catchUp(ctx context.Context, limit int) {
	if r.cannotWrite.Load() {
		return
	}
	if _, err := r.CatchUp(ctx, limit); err != nil {
		var me *errs.Error
		if errors.As(err, &me) && !errors.Is(err, errs.ErrBusy) {
			r.cannotWrite.Store(true)
		}
		r.db.logger().Debug("hermesstate: CJK index catch-up skipped; queued rows are scanned instead", "err", err)
	}
}

func (r *searchRepo) CatchUp(ctx context.Context, limit int) (int, error) {
	if r.db.Dialect == Postgres {
		return 0, nil // no CJK posting index: pg_trgm serves CJK
	}
	var n int
	err := r.db.Write(ctx, sqlitex.Activity, "search.catch_up", func(tx *gorm.DB) error {
		ok, err := ftsql.HasTable(tx, ftsql.CJKGoneTable)
		if err != nil || !ok {
			return err
		}
		// Postings of edited and deleted rows are dropped once enough
		// have gathered (they cost only a candidate check each until
		// then), or on a full catch-up; edited rows are queued again.
		var gone int64
		if err := tx.Raw("SELECT count(*) FROM (SELECT 1 FROM " + ftsql.CJKGoneTable + " LIMIT " + strconv.Itoa(cjkGarbageMin) + ")").Scan(&gone).Error; err != nil {
			return err
		}
		if gone >= cjkGarbageMin || (limit <= 0 && gone > 0) {
			if _, err := ftsql.CollectCJKGarbage(tx); err != nil {
				return err
			}
		}
		n, err = ftsql.IndexPending(tx, limit)
		return err
	})
	return n, err
}

// cjkGarbageMin is how many edited or deleted messages a catch-up lets
// gather before it drops their postings.
const cjkGarbageMin = 1000

// PrepareSearch runs the checks a writable open owes the FTS layout: when
// Hermes' native CJK index triggers (messages_fts_cjk_*) are present, which
// a pure-Go build cannot serve, they are dropped and fts_cjk_stale = '1' is
// set, as Hermes does, so message writes keep working. It returns the write
// error, if any.
func PrepareSearch(ctx context.Context, db *DB) error {
	if db.Dialect != SQLite {
		return nil
	}
	// Look first, so an ordinary open does not count as a write.
	n, err := Read(ctx, db, "search.prepare", func(tx *gorm.DB) (int64, error) {
		var n int64
		err := tx.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'messages\\_fts\\_cjk\\_%' ESCAPE '\\'").Scan(&n).Error
		return n, err
	})
	if err != nil || n == 0 {
		return err
	}
	var dropped bool
	err = db.Write(ctx, sqlitex.Routine, "search.prepare", func(tx *gorm.DB) error {
		var err error
		dropped, err = ftsql.DropHermesCJKTriggers(tx)
		return err
	})
	if err == nil && dropped {
		db.logger().Info("hermesstate: dropped Hermes' messages_fts_cjk triggers (the cjk_unicode61 tokenizer cannot be loaded by a pure-Go build) and set fts_cjk_stale = 1")
	}
	return err
}

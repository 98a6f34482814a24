package ftsql

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/internal/querytext"
	"gorm.io/gorm"
)

// Filters are the row filters every search route shares.
type Filters struct {
	// IncludeInactive also finds rewound rows (active = 0, compacted = 0).
	IncludeInactive bool
	// Sources, when non-nil, keeps only these session sources (an empty,
	// non-nil slice matches nothing).
	Sources []string
	// ExcludeSources, when non-nil, drops these session sources.
	ExcludeSources []string
	// Roles, when non-empty, keeps only these message roles.
	Roles []string
	// Since and Until, when > 0, keep messages written at or after Since
	// and before Until (epoch seconds).
	Since, Until float64
}

// WantsTool reports whether the role filter asks for tool rows.
func (f Filters) WantsTool() bool {
	for _, r := range f.Roles {
		if r == "tool" {
			return true
		}
	}
	return false
}

// WantsUnindexed reports whether the filters ask for rows the trigram and
// CJK indexes leave out (tool rows, cron or subagent sessions).
func (f Filters) WantsUnindexed() bool {
	if f.WantsTool() {
		return true
	}
	for _, s := range f.Sources {
		if s == "cron" || s == "subagent" {
			return true
		}
	}
	return false
}

func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// Clauses returns the WHERE predicates and arguments of f (messages m,
// sessions s): visibility, hidden display rows, sources, roles and time.
func (f Filters) Clauses() ([]string, []any) {
	var where []string
	var args []any
	if !f.IncludeInactive {
		where = append(where, "(m.active = 1 OR m.compacted = 1)")
	}
	where = append(where, "COALESCE(m.display_kind, '') <> 'hidden'")
	if f.Sources != nil {
		where = append(where, "s.source IN ("+placeholders(len(f.Sources))+")")
		for _, s := range f.Sources {
			args = append(args, s)
		}
	}
	if f.ExcludeSources != nil {
		where = append(where, "s.source NOT IN ("+placeholders(len(f.ExcludeSources))+")")
		for _, s := range f.ExcludeSources {
			args = append(args, s)
		}
	}
	if len(f.Roles) > 0 {
		where = append(where, "m.role IN ("+placeholders(len(f.Roles))+")")
		for _, r := range f.Roles {
			args = append(args, r)
		}
	}
	if f.Since > 0 {
		where = append(where, "m.timestamp >= ?")
		args = append(args, f.Since)
	}
	if f.Until > 0 {
		where = append(where, "m.timestamp < ?")
		args = append(args, f.Until)
	}
	return where, args
}

// Query is one SQL statement with its arguments. Every search statement
// returns the columns id, session_id, role, snippet, timestamp, tool_name,
// source, model, session_started.
type Query struct {
	SQL  string
	Args []any
	// Context: the statement also returns each hit's context (see
	// MatchContextQuery), as seven more columns.
	Context bool
}

const selectTail = "m.timestamp, m.tool_name, s.source, s.model, s.started_at AS session_started"

const likeSnippet = "substr(m.content, max(1, instr(m.content, ?) - 40), 120) AS snippet"

// anyColumn matches one LIKE pattern against content, tool_name, tool_calls.
const anyColumn = `(m.content LIKE ? ESCAPE '\' OR m.tool_name LIKE ? ESCAPE '\' OR m.tool_calls LIKE ? ESCAPE '\')`

// anyColumnCoalesced is anyColumn with NULL columns read as empty text.
const anyColumnCoalesced = `(COALESCE(m.content, '') LIKE ? ESCAPE '\' OR COALESCE(m.tool_name, '') LIKE ? ESCAPE '\' OR COALESCE(m.tool_calls, '') LIKE ? ESCAPE '\')`

func likeArgs(term string) []any {
	p := "%" + EscapeLike(term) + "%"
	return []any{p, p, p}
}

// limitSQL returns "LIMIT n OFFSET m" with integer literals: a bound LIMIT
// makes SQLite compile the statement a second time at its first step
// (the plan depends on the bound value), and the engine compiles every
// statement on every call.
func limitSQL(limit, offset int) string {
	return "LIMIT " + strconv.Itoa(max(limit, 0)) + " OFFSET " + strconv.Itoa(max(offset, 0))
}

func selectSQL(snippet, from string, where []string, orderBy, limit string) string {
	return "SELECT m.id, m.session_id, m.role, " + snippet + ", " + selectTail +
		" FROM " + from + " JOIN sessions s ON s.id = m.session_id WHERE " +
		strings.Join(where, " AND ") + " " + orderBy + " " + limit
}

// RankOrder returns the ORDER BY of the FTS routes for sort ("newest",
// "oldest", anything else = bm25 rank).
func RankOrder(sort string) string {
	switch strings.ToLower(querytext.Strip(sort)) {
	case "newest":
		return "ORDER BY m.timestamp DESC, rank"
	case "oldest":
		return "ORDER BY m.timestamp ASC, rank"
	}
	return "ORDER BY rank"
}

// SnippetMaxBytes bounds the text FTS5's snippet() (and PostgreSQL's
// ts_headline) may work on: a matching row whose indexed text (content,
// tool_name and tool_calls together) is larger gets a NULL snippet from the
// search statement, which the caller replaces by a bounded snippet around
// the first match (repo). snippet() scores every pair of phrase matches of
// the row: 9 ms for 16 KiB of matching words, 0.4 s for 64 KiB, minutes for
// 1 MiB.
const SnippetMaxBytes = 16 << 10

// SnippetSizeSQL is the indexed text size of message m in bytes (octet_length
// reads the stored length; the text itself is not loaded).
const SnippetSizeSQL = "(COALESCE(octet_length(m.content), 0) + COALESCE(octet_length(m.tool_name), 0) + COALESCE(octet_length(m.tool_calls), 0))"

// snippetExpr is the snippet column of a MATCH search on table: FTS5's
// snippet(), NULL for a row larger than SnippetMaxBytes.
func snippetExpr(table string) string {
	return "CASE WHEN " + SnippetSizeSQL + " <= " + strconv.Itoa(SnippetMaxBytes) + " THEN snippet(" + table + ", -1, '>>>', '<<<', '...', 40) END AS snippet"
}

// MatchQuery builds the MATCH search of one FTS5 table (snippet column -1,
// '>>>' '<<<' markers, '...' ellipsis, 40 tokens; NULL for a row larger
// than SnippetMaxBytes).
func MatchQuery(table, match, sort string, limit, offset int, f Filters) Query {
	where := []string{table + " MATCH ?"}
	args := []any{match}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	return Query{
		SQL:  selectSQL(snippetExpr(table), table+" JOIN messages m ON m.id = "+table+".rowid", where, RankOrder(sort), limitSQL(limit, offset)),
		Args: args,
	}
}

// contextJoins are the LEFT JOINs that read, for each hit h of a wrapped
// search statement, the previous (pm) and next (nm) message of its session
// by (timestamp, id): the rows ContextSQL reads.
const contextJoins = `
LEFT JOIN messages pm ON pm.id = (SELECT p.id FROM messages p
     WHERE p.session_id = h.session_id AND (p.timestamp, p.id) < (h.timestamp, h.id)
     ORDER BY p.timestamp DESC, p.id DESC LIMIT 1)
LEFT JOIN messages nm ON nm.id = (SELECT n.id FROM messages n
     WHERE n.session_id = h.session_id AND (n.timestamp, n.id) > (h.timestamp, h.id)
     ORDER BY n.timestamp, n.id LIMIT 1)`

// MatchContextQuery is MatchQuery plus each hit's context in the same
// statement (one statement fewer per search; the engine compiles every
// statement on every call): the page of hits is computed exactly as by
// MatchQuery (as a subquery, which also returns rank and the content),
// then the previous and next message of each hit's session are joined.
// After the nine columns of every search statement it returns prev_id,
// prev_role, prev_content, content, next_id, next_role, next_content.
// Hits come in MatchQuery's order: the page is a co-routine scanned as the
// outer loop (the LEFT JOINs read from it, so it cannot be an inner one),
// so no second ORDER BY is needed; reading rank in the outer statement
// would make FTS5 compute bm25's statistics (a pass over every phrase's
// doclist) a second time.
func MatchContextQuery(table, match, sort string, limit, offset int, f Filters) Query {
	where := []string{table + " MATCH ?"}
	args := []any{match}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	inner := "SELECT m.id, m.session_id, m.role, " + snippetExpr(table) + ", " + selectTail +
		", m.content FROM " + table + " JOIN messages m ON m.id = " + table + ".rowid JOIN sessions s ON s.id = m.session_id WHERE " +
		strings.Join(where, " AND ") + " " + RankOrder(sort) + " " + limitSQL(limit, offset)
	return Query{
		SQL: "SELECT h.id, h.session_id, h.role, h.snippet, h.timestamp, h.tool_name, h.source, h.model, h.session_started, " +
			"pm.id, pm.role, pm.content, h.content, nm.id, nm.role, nm.content FROM (" + inner + ") h" + contextJoins,
		Args:    args,
		Context: true,
	}
}

// LikeTokens splits q into tokens: a "…" phrase with at least one
// character, or a run of non-space characters.
func LikeTokens(q string) []string {
	var out []string
	for i := 0; i < len(q); {
		r, size := utf8.DecodeRuneInString(q[i:])
		if querytext.IsSpace(r) {
			i += size
			continue
		}
		if r == '"' {
			if j := strings.IndexByte(q[i+1:], '"'); j > 0 {
				out = append(out, q[i:i+j+2])
				i += j + 2
				continue
			}
		}
		j := i
		for j < len(q) {
			r, size := utf8.DecodeRuneInString(q[j:])
			if querytext.IsSpace(r) {
				break
			}
			j += size
		}
		out = append(out, q[i:j])
		i = j
	}
	return out
}

func likeTerm(tok string) string { return querytext.Strip(strings.Trim(strings.Trim(tok, `"`), "*")) }

// Term is one term of a query's LIKE form (TermGroups): its text, with
// quotes and '*' stripped, and whether NOT negates it.
type Term struct {
	Text string
	Neg  bool
}

// TermGroups compiles the FTS boolean subset of a sanitized query into OR
// groups of ANDed terms, the form of Hermes' LIKE fallback and of the
// PostgreSQL substring route: OR separates groups, AND/NEAR are ignored,
// NOT negates the next term (operators in any case), quotes and '*' are
// stripped from terms, and a group with only negated terms is dropped.
func TermGroups(q string) [][]Term {
	groups := [][]Term{nil}
	neg := false
	for _, tok := range LikeTokens(q) {
		switch strings.ToUpper(tok) {
		case "OR":
			if len(groups[len(groups)-1]) > 0 {
				groups = append(groups, nil)
			}
			neg = false
			continue
		case "AND", "NEAR":
			continue
		case "NOT":
			neg = true
			continue
		}
		if t := likeTerm(tok); t != "" {
			groups[len(groups)-1] = append(groups[len(groups)-1], Term{t, neg})
			neg = false
		}
	}
	out := groups[:0]
	for _, g := range groups {
		for _, t := range g {
			if !t.Neg {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

// LikeFallbackQuery compiles the FTS boolean subset into a LIKE scan over
// canonical rows (Hermes' route for tool-role searches and a stale index):
// OR separates groups, terms in a group are ANDed, AND/NEAR are ignored,
// NOT negates the next term, quotes and '*' are stripped from terms, and a
// group with only negated terms is dropped. ok is false when nothing is
// left to search. Ordered by timestamp, id DESC (ASC for sort "oldest").
func LikeFallbackQuery(q, sort string, limit, offset int, f Filters) (Query, bool) {
	var compiled []string
	var args []any
	var positive []string
	for _, g := range TermGroups(q) {
		var cl []string
		for _, t := range g {
			if t.Neg {
				cl = append(cl, "NOT "+anyColumnCoalesced)
			} else {
				cl = append(cl, anyColumnCoalesced)
				positive = append(positive, t.Text)
			}
			args = append(args, likeArgs(t.Text)...)
		}
		compiled = append(compiled, "("+strings.Join(cl, " AND ")+")")
	}
	if len(compiled) == 0 {
		return Query{}, false
	}
	where := []string{"(" + strings.Join(compiled, " OR ") + ")"}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	dir := "DESC"
	if strings.ToLower(querytext.Strip(sort)) == "oldest" {
		dir = "ASC"
	}
	all := append([]any{positive[0]}, args...)
	return Query{
		SQL:  selectSQL(likeSnippet, "messages m", where, "ORDER BY m.timestamp "+dir+", m.id "+dir, limitSQL(limit, offset)),
		Args: all,
	}, true
}

// CJKTokens returns the tokens the CJK LIKE route searches for: the
// non-operator tokens of raw, or raw itself when there are none.
func CJKTokens(raw string) []string {
	toks := NonOperatorTokens(raw)
	if len(toks) == 0 {
		toks = []string{raw}
	}
	return toks
}

// CJKLikeQuery is Hermes' CJK substring scan: one LIKE clause (content,
// tool_name, tool_calls) per token, ORed, ordered by timestamp DESC.
func CJKLikeQuery(raw string, limit, offset int, f Filters) Query {
	return tokensLikeQuery(CJKTokens(raw), limit, offset, f)
}

// WholeLikeQuery is the CJK LIKE route of Hermes v10: one LIKE clause
// (content, tool_name, tool_calls) for raw as a whole, operators
// included, newest first (so "广西 OR 桂林" finds nothing; v11 made it one
// clause per token, CJKLikeQuery).
func WholeLikeQuery(raw string, limit, offset int, f Filters) Query {
	return tokensLikeQuery([]string{raw}, limit, offset, f)
}

// ContentLikeQuery is the CJK fallback of Hermes v6-v9, run when the word
// index found nothing: content LIKE '%raw%' with raw as typed (no escape
// character: '%' and '_' in it are wildcards, as they were), newest first.
func ContentLikeQuery(raw string, limit, offset int, f Filters) Query {
	where := []string{"m.content LIKE ?"}
	args := []any{raw, "%" + raw + "%"}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	return Query{
		SQL:  selectSQL(likeSnippet, "messages m", where, "ORDER BY m.timestamp DESC", limitSQL(limit, offset)),
		Args: args,
	}
}

// tokensLikeQuery is one LIKE clause (content, tool_name, tool_calls) per
// token, ORed, newest first, the snippet around the first token.
func tokensLikeQuery(toks []string, limit, offset int, f Filters) Query {
	preds := make([]string, len(toks))
	var args []any
	for i, t := range toks {
		preds[i] = anyColumn
		args = append(args, likeArgs(t)...)
	}
	where := []string{"(" + strings.Join(preds, " OR ") + ")"}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	all := append([]any{toks[0]}, args...)
	return Query{
		SQL:  selectSQL(likeSnippet, "messages m", where, "ORDER BY m.timestamp DESC", limitSQL(limit, offset)),
		Args: all,
	}
}

// maxTermsPerToken bounds the posting lists intersected for one token; the
// LIKE check on the candidates keeps the answer exact.
const maxTermsPerToken = 8

// CJKCandidates reads from hermesstate's CJK index the messages that may
// hold some token of raw: for each token, the rows whose postings hold
// every index term of it (QueryTerms; at most maxTermsPerToken of them),
// united over the tokens, sorted. ok is false when a token has no CJK
// character (the index cannot narrow it). Rows still queued for indexing
// are not included (CJKIndexQuery adds them).
func CJKCandidates(tx *gorm.DB, raw string) (ids []int64, ok bool, err error) {
	var out []int64
	for _, t := range CJKTokens(raw) {
		terms, ok := QueryTerms(t)
		if !ok {
			return nil, false, nil
		}
		c, err := CandidateIDs(tx, terms)
		if err != nil {
			return nil, true, err
		}
		out = append(out, c...)
	}
	return sortDistinct(out), true, nil
}

// CJKIndexQuery is CJKLikeQuery served by hermesstate's CJK index: the
// candidates are cands (CJKCandidates, sorted) plus, with pending, the rows
// still queued for indexing, and each candidate is checked with the same
// LIKE predicate, so the rows and their order are those of the scan (equal
// timestamps in id order, as the scan gives them).
func CJKIndexQuery(raw string, cands []int64, pending bool, limit, offset int, f Filters) Query {
	toks := CJKTokens(raw)
	var list strings.Builder
	list.WriteByte('[')
	for i, id := range cands {
		if i > 0 {
			list.WriteByte(',')
		}
		list.WriteString(strconv.FormatInt(id, 10))
	}
	list.WriteByte(']')
	like := CJKLikeQuery(raw, limit, offset, f)
	preds := make([]string, len(toks))
	var args []any
	for i, t := range toks {
		preds[i] = anyColumn
		args = append(args, likeArgs(t)...)
	}
	where := []string{"(" + strings.Join(preds, " OR ") + ")"}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	from := "SELECT value FROM json_each(?)"
	if pending {
		from += " UNION SELECT id FROM " + CJKPendingTable
	}
	sql := "WITH cand(id) AS (" + from + ") " +
		selectSQL(likeSnippet, "cand CROSS JOIN messages m ON m.id = cand.id", where, "ORDER BY m.timestamp DESC", limitSQL(limit, offset))
	all := []any{list.String(), like.Args[0]}
	all = append(all, args...)
	return Query{SQL: sql, Args: all}
}

// GapQuery is the top-up LIKE scan over ids in (progress, highWater], the
// rows a pending rebuild has not indexed yet: the query's terms (quotes and
// '*' stripped, operators skipped) ANDed, newest first. ok is false when
// the query has no term.
func GapQuery(q string, progress, highWater int64, limit int, f Filters) (Query, bool) {
	var terms []string
	for _, tok := range LikeTokens(q) {
		t := likeTerm(tok)
		if t == "" {
			continue
		}
		switch strings.ToUpper(t) {
		case "AND", "OR", "NOT", "NEAR":
			continue
		}
		terms = append(terms, t)
	}
	if len(terms) == 0 || limit <= 0 {
		return Query{}, false
	}
	where := []string{"m.id > ? AND m.id <= ?"}
	args := []any{progress, highWater}
	for _, t := range terms {
		where = append(where, anyColumn)
		args = append(args, likeArgs(t)...)
	}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	all := append([]any{terms[0]}, args...)
	return Query{SQL: selectSQL(likeSnippet, "messages m", where, "ORDER BY m.timestamp DESC", limitSQL(limit, 0)), Args: all}, true
}

// ContextSQL returns the statement that reads, for each of n hit ids, the
// message itself and its previous and next message in the same session by
// (timestamp, id), as rows (match_id, role, content) ordered by match_id,
// timestamp, id.
func ContextSQL(n int) string {
	return `WITH target AS (SELECT session_id, timestamp, id FROM messages WHERE id IN (` + placeholders(n) + `))
SELECT t.id AS match_id, m.role, m.content
FROM target t JOIN messages m ON m.id IN (
    t.id,
    (SELECT p.id FROM messages p
     WHERE p.session_id = t.session_id AND (p.timestamp, p.id) < (t.timestamp, t.id)
     ORDER BY p.timestamp DESC, p.id DESC LIMIT 1),
    (SELECT n.id FROM messages n
     WHERE n.session_id = t.session_id AND (n.timestamp, n.id) > (t.timestamp, t.id)
     ORDER BY n.timestamp, n.id LIMIT 1)
)
ORDER BY t.id, m.timestamp, m.id`
}

// ContextByIDSQL is the context of Hermes v1-v4: the messages of the hit's
// session whose id is within one of the hit's (the hit included), in id
// order, as rows (role, content); args: session id, hit id, hit id.
const ContextByIDSQL = "SELECT role, content FROM messages WHERE session_id = ? AND id >= ? - 1 AND id <= ? + 1 ORDER BY id"

// SearchTerms returns the terms of a sanitized query: its tokens with quotes
// and '*' stripped, without the operators AND, OR, NOT, NEAR. With
// positiveOnly, a term negated by NOT is left out.
func SearchTerms(q string, positiveOnly bool) []string {
	var out []string
	neg := false
	for _, tok := range LikeTokens(q) {
		switch strings.ToUpper(tok) {
		case "AND", "OR", "NEAR":
			continue
		case "NOT":
			neg = true
			continue
		}
		t := likeTerm(tok)
		if t == "" {
			continue
		}
		if !neg || !positiveOnly {
			out = append(out, t)
		}
		neg = false
	}
	return out
}

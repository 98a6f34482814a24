package repo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ftsql"
)

// Search on PostgreSQL (same options, routes and result fields as on
// SQLite; objects created by migration 0006's Postgres variant):
//
//   - Word queries (no CJK): the sanitized FTS5 query is translated to a
//     tsquery (pgTSQuery) and matched against the stored documents
//     hs_fts_tsv(...) of hs_messages_fts (trigger-maintained, GIN index). Snippets come from ts_headline with the same
//     '>>>' '<<<' markers and '...' between fragments.
//   - Ranking: ORDER BY ts_rank DESC (then newest first) where SQLite uses
//     FTS5's bm25. Both favour rows with more and denser matches, but the
//     numbers differ, so rows of equal relevance can come in another order
//     and a page boundary (limit/offset without sort) can cut differently.
//     With sort newest/oldest the order is the same as on SQLite.
//   - Substring queries (CJK, the trigram retry of Latin words glued to
//     CJK): ILIKE over pg_trgm GIN indexes, with the trigram route's
//     exclusions (no tool rows, no cron/subagent/delegate sessions), newest
//     first like Hermes' LIKE routes. Their snippet is the 120 characters
//     around the first term, with the terms marked '>>>' '<<<'.
//   - LIKE is case-insensitive for ASCII only on SQLite and for all of
//     Unicode on PostgreSQL (ILIKE); FTS5's unicode61 folds diacritics
//     ("é" finds "e"), the 'simple' configuration does not.
//   - The CJK posting index, the rebuild markers and FTS5 integrity checks
//     are SQLite-only: PostgreSQL maintains its indexes itself.

// pgLikeSnippet is fts' LIKE snippet in PostgreSQL terms.
const (
	sqliteLikeSnippet = "substr(m.content, max(1, instr(m.content, ?) - 40), 120) AS snippet"
	pgLikeSnippet     = "substr(m.content, GREATEST(1, strpos(m.content, ?) - 40), 120) AS snippet"
)

// pgRewrite turns one of package fts' LIKE statements into PostgreSQL SQL.
func pgRewrite(q ftsql.Query) ftsql.Query {
	s := strings.ReplaceAll(q.SQL, sqliteLikeSnippet, pgLikeSnippet)
	s = strings.ReplaceAll(s, " LIKE ? ESCAPE '\\'", " ILIKE ? ESCAPE '\\'")
	return ftsql.Query{SQL: s, Args: q.Args}
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// pgTSQuery translates a sanitized FTS5 query to to_tsquery('simple', ...)
// text: bare words and "phrases" become lexemes ('a' <-> 'b' for words
// joined by punctuation or quoted together, as FTS5 phrases), a trailing
// '*' a prefix (:*), implicit AND and AND become &, OR |, NOT "& !". Terms
// with no letter or digit are dropped with their operator. ok is false when
// nothing is left.
func pgTSQuery(q string) (string, bool) {
	var out []string
	op := ""
	for _, tok := range ftsql.LikeTokens(q) {
		switch tok {
		case "AND": // NEAR without "(" (sanitized queries have none) is a word to FTS5, so it is one here
			if op == "" {
				op = "&"
			}
			continue
		case "OR":
			op = "|"
			continue
		case "NOT":
			op = "& !"
			continue
		}
		prefix := strings.HasSuffix(tok, "*")
		text := strings.Trim(strings.TrimRight(tok, "*"), `"`)
		words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !isWordRune(r) })
		if len(words) == 0 {
			op = ""
			continue
		}
		for i, w := range words {
			words[i] = "'" + w + "'"
		}
		if prefix {
			words[len(words)-1] += ":*"
		}
		term := strings.Join(words, " <-> ")
		if len(words) > 1 {
			term = "(" + term + ")"
		}
		switch {
		case len(out) == 0 && op == "& !":
			out = append(out, "!"+term)
		case len(out) == 0:
			out = append(out, term)
		case op == "":
			out = append(out, "& "+term)
		default:
			out = append(out, op+" "+term)
		}
		op = ""
	}
	if len(out) == 0 {
		return "", false
	}
	return strings.Join(out, " "), true
}

const pgHeadlineOpts = `StartSel=">>>", StopSel="<<<", MaxWords=40, MinWords=12, ShortWord=0, MaxFragments=2, FragmentDelimiter="..."`

// pgRankCandidates is how many of the best-ranked matches (and every
// match tied with the last of them) the rank-ordered word search reads
// from hs_messages_fts before it joins messages and sessions: twice the
// page's end, plus some slack for rows the filters drop.
func pgRankCandidates(limit, offset int) int { return 2*(limit+offset) + 100 }

// pgWordQuery is the tsquery search of one sanitized query over the
// stored word documents (hs_messages_fts, kept by triggers).
//
// In rank order (no sort) with cand > 0, the statement ranks the matches
// in hs_messages_fts alone and keeps the cand best (FETCH FIRST ... WITH
// TIES: every match tied with the last one too) before it joins messages
// and sessions, applies the filters and orders by rank, then newest. That
// page is the page of the unbounded statement whenever it comes back full:
// every match left out ranks strictly below every candidate. A short page
// may be short because the filters dropped candidates; the caller then
// runs the unbounded statement (cand 0), which joins every match.
//
// The tsquery is parsed once (a FROM item), not once per row: in a
// generic plan to_tsquery(?) is not folded to a constant. The snippet
// (ts_headline, which parses the whole text) is computed after the LIMIT,
// for the rows returned only.
func pgWordQuery(tsq, sort string, limit, offset int, f ftsql.Filters, cand int) ftsql.Query {
	w, a := f.Clauses()
	from := "to_tsquery('simple', ?) AS tq(q) CROSS JOIN hs_messages_fts fx JOIN messages m ON m.id = fx.id JOIN sessions s ON s.id = m.session_id"
	where := append([]string{"fx.doc @@ tq.q"}, w...)
	rank := "ts_rank(fx.doc, tq.q)"
	order := "ORDER BY " + rank + " DESC, m.timestamp DESC, m.id DESC"
	switch strings.ToLower(strings.TrimSpace(sort)) {
	case "newest":
		order = "ORDER BY m.timestamp DESC, " + rank + " DESC, m.id DESC"
		cand = 0
	case "oldest":
		order = "ORDER BY m.timestamp ASC, " + rank + " DESC, m.id ASC"
		cand = 0
	}
	var args []any
	q := "tq.q"
	if cand > 0 {
		// The candidates carry (id, rank) only: with the tsquery in each
		// row the sort of 31,503 matches spilled to disk (2.7 MB against
		// work_mem's 4 MB); the snippet parses the query again, for the
		// rows returned only.
		q = "to_tsquery('simple', ?)"
		args = append(args, tsq)
		from = "(SELECT fx.id, " + rank + " AS rank FROM to_tsquery('simple', ?) AS tq(q) CROSS JOIN hs_messages_fts fx WHERE fx.doc @@ tq.q " +
			"ORDER BY 2 DESC FETCH FIRST ? ROWS WITH TIES) c JOIN messages m ON m.id = c.id JOIN sessions s ON s.id = m.session_id"
		where = w
		order = "ORDER BY c.rank DESC, m.timestamp DESC, m.id DESC"
		args = append(args, tsq, cand)
	} else {
		args = append(args, tsq)
	}
	// ts_headline parses the whole text: a large one gets a NULL here and a
	// bounded snippet afterwards (boundSnippets).
	sql := "SELECT m.id, m.session_id, m.role, CASE WHEN COALESCE(octet_length(m.content), 0) <= " + strconv.Itoa(ftsql.SnippetMaxBytes) +
		" THEN ts_headline('simple', COALESCE(m.content, ''), " + q + ", '" + pgHeadlineOpts + "') END AS snippet, " +
		"m.timestamp, m.tool_name, s.source, s.model, s.started_at AS session_started FROM " + from
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " " + order + " LIMIT ? OFFSET ?"
	args = append(args, a...)
	args = append(args, limit, offset)
	return ftsql.Query{SQL: sql, Args: args}
}

// maxGramsPerToken bounds the CJK characters and pairs one token of a CJK
// query looks up in hs_cjk_grams' index (any of them narrows it; the LIKE
// check keeps the answer exact).
const maxGramsPerToken = 8

// cjkGrams returns the index keys of hs_cjk_grams (migration 0104) that
// every text holding t holds: the adjacent pairs of each run of CJK
// characters in t, or the character itself for a run of one; none when t
// has no CJK character.
func cjkGrams(t string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(g string) {
		if !seen[g] && len(out) < maxGramsPerToken {
			seen[g] = true
			out = append(out, g)
		}
	}
	rs := []rune(t)
	for i := 0; i < len(rs); {
		if !fts.IsCJK(rs[i]) {
			i++
			continue
		}
		j := i
		for j < len(rs) && fts.IsCJK(rs[j]) {
			j++
		}
		if j-i == 1 {
			add(string(rs[i]))
		}
		for k := i; k+1 < j; k++ {
			add(string(rs[k : k+2]))
		}
		i = j
	}
	return out
}

// pgTextArray is a PostgreSQL text[] literal of ss (CJK text only: no
// quoting beyond the double quotes is needed, but backslashes and quotes
// are escaped anyway).
func pgTextArray(ss []string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}

// pgCJKQuery is Hermes' CJK substring scan (ftsql.CJKLikeQuery: each token
// in content, tool_name or tool_calls, ORed, newest first) served by the
// CJK character/pair index of migration 0104: each token's clause also
// requires its keys (cjkGrams) in hs_cjk_grams, which every row holding
// the token has, so the rows and their order are the scan's. ok is false
// when a token has no CJK character (the index cannot narrow it).
func pgCJKQuery(raw string, limit, offset int, f ftsql.Filters) (ftsql.Query, bool) {
	toks := ftsql.CJKTokens(raw)
	var preds []string
	var args []any
	for _, t := range toks {
		grams := cjkGrams(t)
		if len(grams) == 0 {
			return ftsql.Query{}, false
		}
		p := "%" + ftsql.EscapeLike(t) + "%"
		preds = append(preds, `(hs_cjk_grams(m.content, m.tool_name, m.tool_calls) @> ?::text[] AND (COALESCE(m.content, '') ILIKE ? ESCAPE '\' OR COALESCE(m.tool_name, '') ILIKE ? ESCAPE '\' OR COALESCE(m.tool_calls, '') ILIKE ? ESCAPE '\'))`)
		args = append(args, pgTextArray(grams), p, p, p)
	}
	where := []string{"(" + strings.Join(preds, " OR ") + ")"}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	all := append([]any{toks[0]}, args...)
	all = append(all, max(limit, 0), max(offset, 0))
	return ftsql.Query{SQL: "SELECT m.id, m.session_id, m.role, " + pgLikeSnippet + ", m.timestamp, m.tool_name, s.source, s.model, s.started_at AS session_started " +
		"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE " + strings.Join(where, " AND ") + " ORDER BY m.timestamp DESC, m.id LIMIT ? OFFSET ?", Args: all}, true
}

// pgSubstringQuery is the trigram route: the FTS5 boolean subset over
// substrings of content and tool_name (OR groups of ANDed terms, NOT
// negates), restricted like Hermes' trigram index, newest first.
//
// A term's clause reads the bare columns (m.content ILIKE ...), which the
// pg_trgm indexes serve; only a negated one reads them through COALESCE
// (NOT of a NULL would drop the row). Without a NOT above it, a NULL
// clause rejects a row exactly as a false one does. The delegate check
// says model_config IS NULL first: the planner estimates that well, and
// joins each candidate's session by key instead of misjudging the
// sessions left (2,000 candidates at 200k messages: 622 ms to 77 ms).
func (d *DB) pgSubstringQuery(q, sort string, limit, offset int, f ftsql.Filters) (ftsql.Query, []string, bool) {
	const (
		col    = `(m.content ILIKE ? ESCAPE '\' OR m.tool_name ILIKE ? ESCAPE '\')`
		notCol = `(COALESCE(m.content, '') ILIKE ? ESCAPE '\' OR COALESCE(m.tool_name, '') ILIKE ? ESCAPE '\')`
	)
	var ors []string
	var args []any
	var terms []string
	for _, g := range ftsql.TermGroups(q) {
		var ands []string
		for _, x := range g {
			p := "%" + ftsql.EscapeLike(x.Text) + "%"
			if x.Neg {
				ands = append(ands, "NOT "+notCol)
			} else {
				ands = append(ands, col)
				terms = append(terms, x.Text)
			}
			args = append(args, p, p)
		}
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	if len(ors) == 0 {
		return ftsql.Query{}, nil, false
	}
	where := []string{"(" + strings.Join(ors, " OR ") + ")", "m.role <> 'tool'", "s.source NOT IN ('cron', 'subagent')",
		"(s.model_config IS NULL OR " + d.jsonMarker("s.model_config", "_delegate_from") + " IS NULL)"}
	w, a := f.Clauses()
	where = append(where, w...)
	args = append(args, a...)
	dir := "DESC"
	if strings.EqualFold(strings.TrimSpace(sort), "oldest") {
		dir = "ASC"
	}
	all := append([]any{terms[0]}, args...)
	all = append(all, limit, offset)
	return ftsql.Query{SQL: "SELECT m.id, m.session_id, m.role, " + pgLikeSnippet + ", m.timestamp, m.tool_name, s.source, s.model, s.started_at AS session_started " +
		"FROM messages m JOIN sessions s ON s.id = m.session_id WHERE " + strings.Join(where, " AND ") + " ORDER BY m.timestamp " + dir + ", m.id " + dir + " LIMIT ? OFFSET ?",
		Args: all}, terms, true
}

// markTerms wraps case-insensitive occurrences of terms in s with the
// snippet markers.
func markTerms(s *string, terms []string) {
	if s == nil || len(terms) == 0 {
		return
	}
	out := *s
	for _, t := range terms {
		if t == "" {
			continue
		}
		lo, lt := strings.ToLower(out), strings.ToLower(t)
		if len(lo) != len(out) || len(lt) != len(t) {
			continue // case folding changed byte lengths: leave unmarked
		}
		var b strings.Builder
		i := 0
		for {
			j := strings.Index(lo[i:], lt)
			if j < 0 {
				break
			}
			b.WriteString(out[i : i+j])
			b.WriteString(">>>" + out[i+j:i+j+len(t)] + "<<<")
			i += j + len(t)
		}
		b.WriteString(out[i:])
		out = b.String()
	}
	*s = out
}

// routePostgres is route on PostgreSQL.
func (r *searchRepo) routePostgres(rn *runner, q string, opt SearchOptions, f ftsql.Filters) (Route, []SearchHit, error) {
	limit, offset := opt.Limit, opt.Offset
	if f.WantsTool() {
		lq, ok := ftsql.LikeFallbackQuery(q, opt.Sort, limit, offset, f)
		if !ok {
			return RouteToolLike, []SearchHit{}, nil
		}
		hits, err := rn.rows(pgRewrite(lq))
		return RouteToolLike, hits, unwrapFTS(err)
	}
	sub := func(route Route, raw string) (Route, []SearchHit, error) {
		sq, terms, ok := r.db.pgSubstringQuery(raw, opt.Sort, limit, offset, f)
		if !ok {
			return route, []SearchHit{}, nil
		}
		hits, err := rn.rows(sq)
		if err != nil {
			return route, nil, unwrapFTS(err)
		}
		for i := range hits {
			markTerms(hits[i].Snippet, terms)
		}
		return route, hits, nil
	}
	if fts.ContainsCJK(q) {
		raw := ftsql.StripQuotes(q)
		if !f.WantsUnindexed() && ftsql.TrigramRouteOK(raw) {
			return sub(RouteTrigram, ftsql.QuoteTokens(raw))
		}
		lq, ok := pgCJKQuery(raw, limit, offset, f)
		if !ok {
			lq = pgRewrite(ftsql.CJKLikeQuery(raw, limit, offset, f))
		}
		hits, err := rn.rows(lq)
		return RouteCJKLike, hits, unwrapFTS(err)
	}
	tsq, ok := pgTSQuery(q)
	if !ok {
		// No word is left to search for: say so, never "no hits".
		return RouteSyntaxError, nil, fts.NothingToSearch("search.messages", q)
	}
	hits, err := rn.rows(pgWordQuery(tsq, opt.Sort, limit, offset, f, pgRankCandidates(limit, offset)))
	if err == nil && len(hits) < limit && isRankOrder(opt.Sort) {
		// The filters may have dropped candidates: rank every match.
		hits, err = rn.rows(pgWordQuery(tsq, opt.Sort, limit, offset, f, 0))
	}
	if err != nil {
		if isFTSErr(err) {
			return RouteSyntaxError, nil, errs.Wrap(errs.ErrInvalid, "search.messages", unwrapFTS(err),
				fmt.Sprintf("the query %q cannot be searched: PostgreSQL refused its tsquery %q", q, tsq))
		}
		return RouteWord, nil, err
	}
	if len(hits) == 0 && ftsql.TrigramEligible(q) {
		route, more, err := sub(RouteWordRetry, ftsql.QuoteTokens(ftsql.StripQuotes(q)))
		if err != nil {
			return route, nil, err
		}
		if len(more) > 0 {
			return route, more, nil
		}
	}
	return RouteWord, hits, nil
}

// checkPostgres reports whether each PostgreSQL search index exists and is
// valid (a failed concurrent build leaves an invalid one).
func (r *searchRepo) checkPostgres(ctx context.Context) ([]FTSCheck, error) {
	return Read(ctx, r.db, "search.check", func(tx *gorm.DB) ([]FTSCheck, error) {
		var out []FTSCheck
		for _, name := range []string{"idx_hs_messages_fts_doc", "idx_messages_trgm_content", "idx_messages_trgm_tool_name", "idx_messages_trgm_tool_calls", "idx_hermesstate_messages_cjk_grams"} {
			var valid []bool
			if err := tx.Raw(`SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
				JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relname = ?`, name).Scan(&valid).Error; err != nil {
				return nil, err
			}
			c := FTSCheck{Table: name, OK: len(valid) == 1 && valid[0]}
			if len(valid) == 0 {
				c.Detail = "index missing"
			} else if !c.OK {
				c.Detail = "index invalid; REINDEX it"
			}
			out = append(out, c)
		}
		return out, nil
	})
}

// isRankOrder reports whether sort asks for relevance order (neither
// newest nor oldest first).
func isRankOrder(sort string) bool {
	switch strings.ToLower(strings.TrimSpace(sort)) {
	case "newest", "oldest":
		return false
	}
	return true
}

package repo

import (
	"database/sql"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/ftsql"
)

// searchRules are the rules of the Hermes version a search answers as: the
// current ones (v30) for every store hermesstate writes or upgraded, those
// of the version that wrote it for a Hermes file read as it is (DB.AsIs).
// Each rule is what that version of Hermes did, so a file not upgraded
// yet answers as the Hermes beside it does; `hermes-state migrate` brings
// the current ones.
type searchRules struct {
	// version is the file's schema version, 0 for the current rules.
	version int
}

// rulesOf returns the search rules of db.
func rulesOf(db *DB) searchRules {
	if db.AsIs > 0 && db.AsIs < 22 {
		return searchRules{version: db.AsIs}
	}
	return searchRules{}
}

func (r searchRules) current() bool { return r.version == 0 }

// raw reports whether the version had no sanitizer (v1): the query went
// to FTS5 as typed, and FTS5's syntax errors were raised.
func (r searchRules) raw() bool { return r.version == 1 }

// sanitize is the version's query sanitizer; raw is true for v1, which had
// none (the query goes to FTS5 as typed, and a syntax error is raised).
func (r searchRules) sanitize(q string) (s string, raw bool) {
	if r.current() {
		return fts.Sanitize(q), false
	}
	s, ok := fts.SanitizeVersion(q, r.version)
	return s, !ok
}

// defaultSources is the source filter a search without one gets: up to v4
// Hermes searched only the interactive platforms (cron and subagent rows
// were not found), from v6 every source.
func (r searchRules) defaultSources() []string {
	if !r.current() && r.version <= 4 {
		return []string{"cli", "telegram", "discord", "whatsapp", "slack"}
	}
	return nil
}

// cjkRouting reports whether a query with CJK characters leaves the word
// index for substring routes: from v10 (v6-v9 tried the word index first
// and scanned content only when it found nothing; v1-v4 had no CJK route).
func (r searchRules) cjkRouting() bool { return r.current() || r.version >= 10 }

// cjkFallback reports whether a CJK query the word index answered with
// nothing (or refused) is retried as a content LIKE scan (v6-v9).
func (r searchRules) cjkFallback() bool { return !r.current() && r.version >= 6 && r.version < 10 }

// toolLike reports whether a tool-role filter reads canonical rows with
// LIKE (v30); before, it went through the FTS routes like any search.
func (r searchRules) toolLike() bool { return r.current() }

// trigramRetry reports whether a Latin query the word index missed is
// retried on the trigram index (v30: unicode61 glues Latin to CJK).
func (r searchRules) trigramRetry() bool { return r.current() }

// contextByID reports whether a hit's context is the messages whose id is
// within one of it (v1-v4) rather than its neighbours by time.
func (r searchRules) contextByID() bool { return !r.current() && r.version <= 4 }

// errRawSyntax is the error of a query Hermes v1 passed to FTS5 as typed
// and FTS5 refused: that Hermes raised it, so does this search.
func errRawSyntax(err error) error {
	return errs.Wrap(errs.ErrInvalid, "search.messages", err,
		"the query is not valid FTS5 syntax, and this file's Hermes version (schema v1) searched queries as typed: "+sqliteMessageOf(err))
}

// sqliteMessageOf is FTS5's own words for a query error.
func sqliteMessageOf(err error) string {
	err = unwrapFTS(err)
	msg := err.Error()
	const prefix = "SQL logic error: "
	if i := strings.Index(msg, prefix); i >= 0 {
		msg = msg[i+len(prefix):]
	}
	if strings.HasSuffix(msg, ")") {
		if i := strings.LastIndex(msg, " ("); i > 0 {
			msg = msg[:i]
		}
	}
	return msg
}

// searchCJKAt is the CJK routing of Hermes v10-v21 on a file read as it
// is: v10 took the trigram index when the query held 3 CJK characters or
// more (in all) and otherwise one LIKE for the whole query; v11 on, the
// trigram index only when every CJK token has 3 or more, else one LIKE per
// token. The trigram tables of those versions index every row (tool rows
// too), so no filter keeps a query off them.
func (r *searchRepo) searchCJKAt(rn *runner, rules searchRules, q string, opt SearchOptions, f ftsql.Filters, st searchState) (Route, []SearchHit, error) {
	raw := ftsql.StripQuotes(q)
	trigram := ftsql.TrigramRouteOK(raw)
	if rules.version == 10 {
		trigram = fts.CountCJK(raw) >= 3
	}
	if st.trigram && trigram {
		hits, err := rn.rows(ftsql.MatchContextQuery(ftsql.TrigramTable, ftsql.QuoteTokens(raw), opt.Sort, opt.Limit, opt.Offset, f))
		if err != nil && !isFTSErr(err) {
			return RouteTrigram, nil, err
		}
		if err == nil {
			return RouteTrigram, hits, nil
		}
		rn.plan = nil
	}
	lq := ftsql.CJKLikeQuery(raw, opt.Limit, opt.Offset, f)
	if rules.version == 10 {
		lq = ftsql.WholeLikeQuery(raw, opt.Limit, opt.Offset, f)
	}
	hits, err := rn.rows(lq)
	return RouteCJKLike, hits, unwrapFTS(err)
}

// attachContextByID replaces each hit's context by that of Hermes v1-v4:
// the messages of its session whose id is within one of its own.
func attachContextByID(tx *gorm.DB, hits []SearchHit) error {
	for i := range hits {
		h := &hits[i]
		rows, err := tx.Raw(ftsql.ContextByIDSQL, h.SessionID, h.ID, h.ID).Rows()
		if err != nil {
			return err
		}
		h.Context = []ContextMessage{}
		for rows.Next() {
			var role string
			var content sql.NullString
			if err := rows.Scan(&role, &content); err != nil {
				rows.Close()
				return err
			}
			var cp *string
			if content.Valid {
				cp = &content.String
			}
			h.Context = append(h.Context, ContextMessage{Role: role, Content: ftsql.ContextText(cp)})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

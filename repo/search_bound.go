package repo

import (
	"database/sql"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/ftsql"
)

// MaxQueryTerms is the most terms (words, phrases, prefixes; operators not
// counted) a search query may have after sanitizing; a longer query fails
// with ErrInvalid. FTS5's cost grows with the square of the terms times the
// matching rows: over 20,000 matching messages, 8 terms take 0.1 s, 32
// terms 0.3 s, 64 terms 1 s, and 800 repeated one-letter terms took over a
// minute.
const MaxQueryTerms = 32

// boundedWindow is the number of characters of a large message's text the
// bounded snippet is cut from, and boundedLead how many of them come before
// the first match.
const (
	boundedWindow = 300
	boundedLead   = 100
)

// boundSnippets gives the hits whose text was too large for snippet() or
// ts_headline (their snippet is NULL, see ftsql.SnippetMaxBytes) a bounded
// snippet: about boundedWindow characters around the first occurrence of
// the query's first term in content (tool_calls when content is NULL), cut
// at word boundaries, with '...' where the text goes on and the query's
// terms between '>>>' and '<<<'. Small messages are not touched (they keep
// FTS5's snippet exactly). It costs one statement, only when such a hit
// exists.
func boundSnippets(tx *gorm.DB, dialect Dialect, hits []SearchHit, q string) error {
	var ids []any
	for _, h := range hits {
		if h.Snippet == nil {
			ids = append(ids, h.ID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	terms := ftsql.SearchTerms(q, true)
	first := ""
	if len(terms) > 0 {
		first = strings.ToLower(terms[0])
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	size := ftsql.SnippetSizeSQL
	find := "instr(lower(t), ?)"
	greatest := "max"
	if dialect == Postgres {
		size = "COALESCE(octet_length(m.content), 0)"
		find = "strpos(lower(t), ?)"
		greatest = "GREATEST"
	}
	start := greatest + "(1, " + find + " - " + strconv.Itoa(boundedLead) + ")"
	q2 := "SELECT id, " + start + " AS p, substr(t, " + start + ", " + strconv.Itoa(boundedWindow) + ") AS w FROM (" +
		"SELECT m.id AS id, COALESCE(m.content, m.tool_calls, '') AS t FROM messages m WHERE m.id IN (" + ph + ") AND " +
		size + " > " + strconv.Itoa(ftsql.SnippetMaxBytes) + ") x"
	args := append([]any{first, first}, ids...)
	rows, err := tx.Raw(q2, args...).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	got := map[int64]string{}
	for rows.Next() {
		var id, p int64
		var w sql.NullString
		if err := rows.Scan(&id, &p, &w); err != nil {
			return err
		}
		got[id] = boundedSnippet(w.String, p > 1, utf8.RuneCountInString(w.String) >= boundedWindow, terms)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range hits {
		if s, ok := got[hits[i].ID]; ok && hits[i].Snippet == nil {
			hits[i].Snippet = &s
		}
	}
	return nil
}

// boundedSnippet shapes a window of a large text: partial words at a cut
// end are dropped, '...' marks where the text goes on, and terms are
// marked.
func boundedSnippet(w string, cutBefore, cutAfter bool, terms []string) string {
	if cutBefore {
		if i := strings.IndexAny(w, " \t\n"); i >= 0 && i < len(w)/2 {
			w = w[i+1:]
		}
	}
	if cutAfter {
		if i := strings.LastIndexAny(w, " \t\n"); i > len(w)/2 {
			w = w[:i]
		}
	}
	w = strings.TrimSpace(w)
	if cutBefore {
		w = "..." + w
	}
	if cutAfter {
		w += "..."
	}
	markTerms(&w, terms)
	return w
}

// checkTermCount returns the number of terms of the sanitized query and
// whether it is within MaxQueryTerms.
func checkTermCount(q string) (int, bool) {
	n := len(ftsql.SearchTerms(q, false))
	return n, n <= MaxQueryTerms
}

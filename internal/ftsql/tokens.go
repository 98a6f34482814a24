package ftsql

import (
	"strings"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/querytext"
)

// NonOperatorTokens returns the whitespace-separated tokens of q that are
// not AND/OR/NOT.
func NonOperatorTokens(q string) []string {
	var out []string
	for _, t := range querytext.Fields(q) {
		if !querytext.IsOperator(t) {
			out = append(out, t)
		}
	}
	return out
}

// QuoteTokens double-quotes every non-operator token of q (doubling inner
// quotes) and keeps AND/OR/NOT, so FTS5 special characters are neutralised.
func QuoteTokens(q string) string {
	toks := querytext.Fields(q)
	for i, t := range toks {
		if !querytext.IsOperator(t) {
			toks[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		}
	}
	return strings.Join(toks, " ")
}

// StripQuotes removes leading and trailing '"' characters and then
// whitespace (Python's q.strip('"').strip()).
func StripQuotes(q string) string { return querytext.Strip(strings.Trim(q, `"`)) }

// TrigramEligible reports whether every non-operator token of q (outer
// quotes stripped) has at least 3 characters, so a trigram MATCH can find it.
func TrigramEligible(q string) bool {
	toks := NonOperatorTokens(StripQuotes(q))
	if len(toks) == 0 {
		return false
	}
	for _, t := range toks {
		if utf8.RuneCountInString(t) < 3 {
			return false
		}
	}
	return true
}

// HasShortCJKToken reports whether a non-operator token containing CJK has
// fewer than 3 CJK characters.
func HasShortCJKToken(q string) bool {
	for _, t := range NonOperatorTokens(q) {
		if fts.ContainsCJK(t) && fts.CountCJK(t) < 3 {
			return true
		}
	}
	return false
}

// TrigramRouteOK reports whether a CJK query (outer quotes stripped) can be
// served by the trigram index: at least 3 CJK characters in total and in
// every CJK-bearing token.
func TrigramRouteOK(raw string) bool { return fts.CountCJK(raw) >= 3 && !HasShortCJKToken(raw) }

// HasLoneCJKRun reports whether some maximal run of CJK characters in q is
// a single character.
func HasLoneCJKRun(q string) bool {
	run := 0
	for _, r := range q {
		if fts.IsCJK(r) {
			run++
			continue
		}
		if run == 1 {
			return true
		}
		run = 0
	}
	return run == 1
}

// EscapeLike escapes '\', '%' and '_' for a LIKE pattern with ESCAPE '\'.
func EscapeLike(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, "%", `\%`)
	return strings.ReplaceAll(s, "_", `\_`)
}

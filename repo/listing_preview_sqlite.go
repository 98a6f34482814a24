package repo

import (
	"strings"
	"unicode/utf8"

	sqlite3 "modernc.org/sqlite/lib"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// previewFunc is the SQL function (SQLite only, registered on every
// connection of either engine through sqlitex.RegisterFunc) that computes a user message's raw
// preview in Go: previewFunc(content, display_kind) is the raw preview, or
// NULL when the row is not eligible (hidden, or a compaction summary with
// nothing after it). It returns exactly what previewRawSQL / eligibleSQL
// compute in SQL (TestPreviewFuncMatchesSQL); the listing statement using
// it is several kilobytes shorter, and compiling that statement was most of
// a listing's cost on the pure-Go SQLite.
const previewFunc = "hermesstate_preview"

func init() {
	sqlitex.RegisterFunc(sqlitex.Func{Name: previewFunc, NArg: 2, Deterministic: true, Fn: func(args []any) (any, error) {
		var c string
		switch v := args[0].(type) {
		case nil:
			return nil, nil
		case string:
			c = v
		case []byte:
			c = string(v)
		default:
			return nil, nil // a number is not a user message's text
		}
		if k, ok := args[1].(string); ok && k == "hidden" {
			return nil, nil
		}
		p, ok := rawPreview(c)
		if !ok {
			return nil, nil
		}
		return p, nil
	}})
}

const previewWS = "\t\n\r "

// sqlLeadMin is the smallest byte that SQLite's LENGTH and SUBSTR count,
// together with the continuation bytes (10xxxxxx) after it, as one
// character. SQLite 3.54 (tag-20260418-01) counts any byte >= 0x80 that way,
// so a stray continuation byte swallows the ones after it
// (length(CAST(X'8080' AS TEXT)) is 1); up to 3.53 only bytes >= 0xC0 did
// (it was 2). The preview function follows the library it is linked with
// (both engines embed 3.54.1: TestEnginesSameSQLite).
var sqlLeadMin = func() byte {
	if sqlite3.SQLITE_VERSION_NUMBER >= 3054000 {
		return 0x80
	}
	return 0xc0
}()

// sqlNext returns the byte index after the character at i, counting
// characters the way SQLite's LENGTH and SUBSTR do (see sqlLeadMin; any
// other byte is one character), so invalid UTF-8 is cut where SQLite cuts it.
func sqlNext(s string, i int) int {
	b := s[i]
	i++
	if b >= sqlLeadMin {
		for i < len(s) && s[i]&0xc0 == 0x80 {
			i++
		}
	}
	return i
}

// instrNext is sqlNext for SQLite's INSTR, which steps one byte and then
// over every continuation byte after it, whatever the first byte was.
func instrNext(s string, i int) int {
	i++
	for i < len(s) && s[i]&0xc0 == 0x80 {
		i++
	}
	return i
}

// sqlSubstrFrom is SQLite's SUBSTR(s, from) for from ≥ 1 (from ≤ 1 is the
// whole string).
func sqlSubstrFrom(s string, from int) string {
	i := 0
	for skip := from - 1; skip > 0 && i < len(s); skip-- {
		i = sqlNext(s, i)
	}
	return s[i:]
}

// sqlSubstrHead is SUBSTR(s, 1, n).
func sqlSubstrHead(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		i = sqlNext(s, i)
	}
	return s[:i]
}

// sqlInstr is SQLite's INSTR(hay, needle): the 1-based character position,
// 0 when absent.
func sqlInstr(hay, needle string) int {
	at := strings.Index(hay, needle)
	if at < 0 {
		return 0
	}
	n := 1
	for i := 0; i < at; n++ {
		i = instrNext(hay, i)
	}
	return n
}

func startsWithSummary(s string) bool {
	t := strings.TrimLeft(s, previewWS)
	return strings.HasPrefix(t, summaryLongFormPrefix) || strings.HasPrefix(t, summaryLegacyPrefix)
}

// rawPreview mirrors previewSQL's eligibility and raw value for a user
// message's content.
func rawPreview(c string) (string, bool) {
	standalone := startsWithSummary(c)
	di := sqlInstr(c, mergedSummaryDelimiter)
	merged := di > 0 && startsWithSummary(sqlSubstrFrom(c, di+utf8.RuneCountInString(mergedSummaryDelimiter)))
	ei := sqlInstr(c, summaryEndMarker)
	remainder := sqlSubstrFrom(c, ei+utf8.RuneCountInString(summaryEndMarker))
	var prior string
	if di > 1 {
		prior = strings.Trim(sqlSubstrHead(c, di-1), previewWS)
	}
	unwrapped := prior
	if strings.HasPrefix(prior, mergedPriorHeader) {
		unwrapped = strings.TrimLeft(prior[len(mergedPriorHeader):], previewWS)
	}
	eligible := (!standalone && !merged) ||
		(standalone && ei > 0 && strings.Trim(remainder, previewWS) != "") ||
		(merged && strings.Trim(unwrapped, previewWS) != "")
	if !eligible {
		return "", false
	}
	switch {
	case standalone:
		return remainder, true
	case merged:
		return unwrapped, true
	}
	// Cut, then replace: LF and CR are one byte and one character, so this
	// is SUBSTR(REPLACE(...), 1, n) without rewriting the whole text.
	return newlineSpacer.Replace(sqlSubstrHead(c, previewHeadChars)), true
}

// Package fts holds everything about full-text search that GORM cannot
// express: the FTS5 DDL and triggers of every Hermes layout, layout
// detection, Hermes' query sanitizer and routing predicates, the pure-Go
// CJK segmentation behind hermesstate's own CJK index, and the search SQL.
// Functions here are pure where possible; the few that touch a database take
// a *gorm.DB transaction and use SQLite-only SQL (FTS5, sqlite_master).
package fts

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxQueryChars is the length (in code points) a query is cut to before it
// is sanitized (Hermes MAX_FTS5_QUERY_CHARS).
const MaxQueryChars = 2048

// ErrNoQuery is returned by Prepare when the query is empty, or empty once
// sanitized. Search answers such a query with no results.
var ErrNoQuery = errors.New("fts: no query")

// specialChars are the characters FTS5's query grammar rejects outside a
// phrase; each becomes a space. '%' is handled separately.
const specialChars = "+{}():\"^@/#&|~[]<>,;!?$=\\'"

// pyIsSpace reports whether r is whitespace for Python's str.isspace / re \s
// (Go's unicode.IsSpace plus the information separators U+001C–U+001F).
func pyIsSpace(r rune) bool {
	if r >= 0x1c && r <= 0x1f {
		return true
	}
	return unicode.IsSpace(r)
}

// pyIsWord reports whether r is a word character for Python's Unicode \w.
func pyIsWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// pyFields splits s on runs of Python whitespace (str.split()).
func pyFields(s string) []string { return strings.FieldsFunc(s, pyIsSpace) }

// IsCJK reports whether r is in the ranges Hermes treats as CJK: unified
// ideographs (and extensions A, B), CJK symbols, hiragana, katakana and
// hangul syllables.
func IsCJK(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3400 && r <= 0x4DBF, r >= 0x20000 && r <= 0x2A6DF,
		r >= 0x3000 && r <= 0x303F, r >= 0x3040 && r <= 0x309F, r >= 0x30A0 && r <= 0x30FF,
		r >= 0xAC00 && r <= 0xD7AF:
		return true
	}
	return false
}

// ContainsCJK reports whether s has a CJK character.
func ContainsCJK(s string) bool { return strings.IndexFunc(s, IsCJK) >= 0 }

// CountCJK returns the number of CJK characters in s.
func CountCJK(s string) int {
	n := 0
	for _, r := range s {
		if IsCJK(r) {
			n++
		}
	}
	return n
}

// Sanitize applies Hermes' (schema v30) FTS5 query sanitizer and returns the
// sanitized query, which is also what Hermes reports as "sanitized":
//
//  1. cut to MaxQueryChars code points;
//  2. hold balanced "…" phrases (left to right); other '"' become spaces;
//  3. replace FTS5 special characters with spaces ('%' too, unless the text
//     has a CJK character);
//  4. collapse runs of '*' and drop a '*' at the start or after whitespace;
//  5. drop one leading and one trailing AND/OR/NOT;
//  6. wrap words joined by '.', '_' or '-' in double quotes;
//  7. restore the held phrases and trim.
//
// It never fails; an empty result means "nothing to search". Invalid UTF-8
// is first replaced by U+FFFD.
func Sanitize(query string) string {
	if !utf8.ValidString(query) {
		query = strings.ToValidUTF8(query, "\uFFFD")
	}
	// 1. Cap.
	if utf8.RuneCountInString(query) > MaxQueryChars {
		n := 0
		for i := range query {
			if n == MaxQueryChars {
				query = query[:i]
				break
			}
			n++
		}
	}
	// 2. Hold balanced phrases.
	var held []string
	var b strings.Builder
	for i := 0; i < len(query); {
		c := query[i]
		if c == '"' {
			if j := strings.IndexByte(query[i+1:], '"'); j >= 0 {
				held = append(held, query[i:i+1+j+1])
				b.WriteString("\x00Q" + strconv.Itoa(len(held)-1) + "\x00")
				i += j + 2
				continue
			}
			b.WriteByte(' ')
			i++
			continue
		}
		b.WriteByte(c)
		i++
	}
	s := b.String()
	// 3. Special characters.
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(specialChars, r) {
			return ' '
		}
		return r
	}, s)
	if strings.Contains(s, "%") && !ContainsCJK(s) {
		s = strings.ReplaceAll(s, "%", " ")
	}
	// 4. Stars.
	s = collapseStars(s)
	// 5. Dangling operators.
	s = dropLeadingOperator(pyStrip(s))
	s = dropTrailingOperator(pyStrip(s))
	// 6. Quote joined words.
	s = quoteJoined(s)
	// 7. Restore phrases.
	for i, q := range held {
		s = strings.ReplaceAll(s, "\x00Q"+strconv.Itoa(i)+"\x00", q)
	}
	return pyStrip(s)
}

func collapseStars(s string) string {
	var b strings.Builder
	prev := rune(-1)
	first := true
	for _, r := range s {
		if r == '*' {
			if prev == '*' {
				continue // run collapsed; the first star of the run decided
			}
			if first || pyIsSpace(prev) {
				prev = r
				first = false
				continue // dropped, but remembered so the rest of the run goes too
			}
		}
		b.WriteRune(r)
		prev = r
		first = false
	}
	return b.String()
}

var operators = [...]string{"AND", "OR", "NOT"}

func isOperator(tok string) bool {
	for _, op := range operators {
		if strings.EqualFold(tok, op) {
			return true
		}
	}
	return false
}

// dropLeadingOperator removes "^(AND|OR|NOT)\b\s*" (case-insensitive).
func dropLeadingOperator(s string) string {
	for _, op := range operators {
		if len(s) < len(op) || !strings.EqualFold(s[:len(op)], op) {
			continue
		}
		rest := s[len(op):]
		if r, _ := utf8.DecodeRuneInString(rest); rest != "" && pyIsWord(r) {
			continue // no word boundary
		}
		return strings.TrimLeftFunc(rest, pyIsSpace)
	}
	return s
}

// dropTrailingOperator removes "\s+(AND|OR|NOT)\s*$" (case-insensitive).
func dropTrailingOperator(s string) string {
	t := strings.TrimRightFunc(s, pyIsSpace)
	for _, op := range operators {
		if len(t) < len(op) || !strings.EqualFold(t[len(t)-len(op):], op) {
			continue
		}
		head := t[:len(t)-len(op)]
		if r, _ := utf8.DecodeLastRuneInString(head); head == "" || !pyIsSpace(r) {
			continue
		}
		return strings.TrimRightFunc(head, pyIsSpace)
	}
	return s
}

// quoteJoined wraps every match of Python's \b(\w+(?:[._-]\w+)+)\b in
// double quotes. A maximal word run followed by '.' or '-' and another word
// run starts a chain that extends over further "[.-]run" links; a run on its
// own matches when it has an inner '_' (one with a word character on both
// sides).
func quoteJoined(s string) string {
	rs := []rune(s)
	n := len(rs)
	var b strings.Builder
	i := 0
	for i < n {
		if !pyIsWord(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		start := i
		end := runEnd(rs, i)
		chained := false
		for end+1 < n && (rs[end] == '.' || rs[end] == '-') && pyIsWord(rs[end+1]) {
			end = runEnd(rs, end+1)
			chained = true
		}
		if !chained {
			chained = innerUnderscore(rs[start:end])
		}
		if chained {
			b.WriteByte('"')
			b.WriteString(string(rs[start:end]))
			b.WriteByte('"')
		} else {
			b.WriteString(string(rs[start:end]))
		}
		i = end
	}
	return b.String()
}

func runEnd(rs []rune, i int) int {
	for i < len(rs) && pyIsWord(rs[i]) {
		i++
	}
	return i
}

func innerUnderscore(run []rune) bool {
	for k := 1; k < len(run)-1; k++ {
		if run[k] == '_' {
			return true
		}
	}
	return false
}

// NonOperatorTokens returns the whitespace-separated tokens of q that are
// not AND/OR/NOT.
func NonOperatorTokens(q string) []string {
	var out []string
	for _, t := range pyFields(q) {
		if !isOperator(t) {
			out = append(out, t)
		}
	}
	return out
}

// QuoteTokens double-quotes every non-operator token of q (doubling inner
// quotes) and keeps AND/OR/NOT, so FTS5 special characters are neutralised.
func QuoteTokens(q string) string {
	toks := pyFields(q)
	for i, t := range toks {
		if !isOperator(t) {
			toks[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		}
	}
	return strings.Join(toks, " ")
}

// StripQuotes removes leading and trailing '"' characters and then
// whitespace (Python's q.strip('"').strip()).
func StripQuotes(q string) string { return pyStrip(strings.Trim(q, `"`)) }

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
		if ContainsCJK(t) && CountCJK(t) < 3 {
			return true
		}
	}
	return false
}

// TrigramRouteOK reports whether a CJK query (outer quotes stripped) can be
// served by the trigram index: at least 3 CJK characters in total and in
// every CJK-bearing token.
func TrigramRouteOK(raw string) bool { return CountCJK(raw) >= 3 && !HasShortCJKToken(raw) }

// HasLoneCJKRun reports whether some maximal run of CJK characters in q is
// a single character.
func HasLoneCJKRun(q string) bool {
	run := 0
	for _, r := range q {
		if IsCJK(r) {
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

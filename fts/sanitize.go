// Package fts is Hermes' full-text query language as a library: Sanitize
// turns what a user typed into the FTS5 query Hermes would run (and reports
// as "sanitized"), and IsCJK, ContainsCJK and CountCJK say which characters
// Hermes treats as CJK, the ones that pick the CJK search routes.
// Store.Search applies both; the FTS5 layouts, the CJK index and the search
// statements behind it are internal (internal/ftsql).
package fts

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/internal/querytext"
)

// MaxQueryChars is the length (in code points) a query is cut to before it
// is sanitized (Hermes MAX_FTS5_QUERY_CHARS).
const MaxQueryChars = 2048

// specialChars are the characters FTS5's query grammar rejects outside a
// phrase; each becomes a space. '%' is handled separately.
const specialChars = "+{}():\"^@/#&|~[]<>,;!?$=\\'"

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
func Sanitize(query string) string { return sanitize(query, current) }

// rules are the steps of one generation of Hermes' sanitizer.
type rules struct {
	cap       bool   // cut to MaxQueryChars (v18 on)
	hold      bool   // keep balanced "…" phrases (v6 on); before, every '"' is special
	special   string // characters that become spaces ('"' aside)
	percent   bool   // '%' becomes a space in text without CJK (after v21)
	quote     bool   // wrap joined words in quotes (v6 on)
	underline bool   // '_' joins words too (v10 on)
}

// current is the sanitizer of schema v30.
var current = rules{cap: true, hold: true, special: specialChars, percent: true, quote: true, underline: true}

// SanitizeVersion applies the query sanitizer of the Hermes version that
// wrote a file of schema version v (what that Hermes reported as
// "sanitized"), and reports whether that version had one: v1 passed the
// query to FTS5 as typed (ok false, the query returned unchanged). v2-v4
// strip every '"' and the characters + { } ( ) ^, collapse '*' and drop
// dangling AND/OR/NOT; v6 keeps balanced phrases and quotes words joined by
// '.' or '-'; v10 also by '_'; v14 strips ':'; v18 cuts the query to
// MaxQueryChars; versions after v21 (and 0, an unknown one) are Sanitize.
func SanitizeVersion(query string, v int) (string, bool) {
	switch {
	case v == 1:
		return query, false
	case v <= 0 || v > 21:
		return sanitize(query, current), true
	}
	r := rules{cap: v >= 18, hold: v >= 6, special: "+{}()^", quote: v >= 6, underline: v >= 10}
	if !r.hold {
		r.special += `"`
	}
	if v >= 14 {
		r.special += ":"
	}
	return sanitize(query, r), true
}

func sanitize(query string, rl rules) string {
	if !utf8.ValidString(query) {
		query = strings.ToValidUTF8(query, "\uFFFD")
	}
	// 1. Cap.
	if rl.cap && utf8.RuneCountInString(query) > MaxQueryChars {
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
		if c == '"' && rl.hold {
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
		if strings.ContainsRune(rl.special, r) {
			return ' '
		}
		return r
	}, s)
	if rl.percent && strings.Contains(s, "%") && !ContainsCJK(s) {
		s = strings.ReplaceAll(s, "%", " ")
	}
	// 4. Stars.
	s = collapseStars(s)
	// 5. Dangling operators.
	s = dropLeadingOperator(querytext.Strip(s))
	s = dropTrailingOperator(querytext.Strip(s))
	// 6. Quote joined words.
	if rl.quote {
		s = quoteJoined(s, rl.underline)
	}
	// 7. Restore phrases.
	for i, q := range held {
		s = strings.ReplaceAll(s, "\x00Q"+strconv.Itoa(i)+"\x00", q)
	}
	return querytext.Strip(s)
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
			if first || querytext.IsSpace(prev) {
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

// dropLeadingOperator removes "^(AND|OR|NOT)\b\s*" (case-insensitive).
func dropLeadingOperator(s string) string {
	for _, op := range querytext.Operators {
		if len(s) < len(op) || !strings.EqualFold(s[:len(op)], op) {
			continue
		}
		rest := s[len(op):]
		if r, _ := utf8.DecodeRuneInString(rest); rest != "" && querytext.IsWord(r) {
			continue // no word boundary
		}
		return strings.TrimLeftFunc(rest, querytext.IsSpace)
	}
	return s
}

// dropTrailingOperator removes "\s+(AND|OR|NOT)\s*$" (case-insensitive).
func dropTrailingOperator(s string) string {
	t := strings.TrimRightFunc(s, querytext.IsSpace)
	for _, op := range querytext.Operators {
		if len(t) < len(op) || !strings.EqualFold(t[len(t)-len(op):], op) {
			continue
		}
		head := t[:len(t)-len(op)]
		if r, _ := utf8.DecodeLastRuneInString(head); head == "" || !querytext.IsSpace(r) {
			continue
		}
		return strings.TrimRightFunc(head, querytext.IsSpace)
	}
	return s
}

// quoteJoined wraps every match of Python's \b(\w+(?:[._-]\w+)+)\b in
// double quotes (\b(\w+(?:[.-]\w+)+)\b without underline). A maximal word run followed by '.' or '-' and another word
// run starts a chain that extends over further "[.-]run" links; a run on its
// own matches when it has an inner '_' (one with a word character on both
// sides).
func quoteJoined(s string, underline bool) string {
	rs := []rune(s)
	n := len(rs)
	var b strings.Builder
	i := 0
	for i < n {
		if !querytext.IsWord(rs[i]) {
			b.WriteRune(rs[i])
			i++
			continue
		}
		start := i
		end := runEnd(rs, i)
		chained := false
		for end+1 < n && (rs[end] == '.' || rs[end] == '-') && querytext.IsWord(rs[end+1]) {
			end = runEnd(rs, end+1)
			chained = true
		}
		if !chained && underline {
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
	for i < len(rs) && querytext.IsWord(rs[i]) {
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

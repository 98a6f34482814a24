// Package querytext holds the text rules the search code shares with
// Hermes, which is Python: Python's whitespace and word classes (str.isspace,
// re's Unicode \w, str.strip, str.split) and FTS5's AND/OR/NOT operators.
// The public sanitizer (package fts), the search SQL (internal/ftsql) and
// the repositories use it.
package querytext

import (
	"strings"
	"unicode"
)

// IsSpace reports whether r is whitespace for Python's str.isspace / re \s
// (Go's unicode.IsSpace plus the information separators U+001C–U+001F).
func IsSpace(r rune) bool {
	if r >= 0x1c && r <= 0x1f {
		return true
	}
	return unicode.IsSpace(r)
}

// IsWord reports whether r is a word character for Python's Unicode \w.
func IsWord(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r)
}

// Strip trims Python whitespace from both ends of s (str.strip()).
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// Fields splits s on runs of Python whitespace (str.split()).
func Fields(s string) []string { return strings.FieldsFunc(s, IsSpace) }

// Operators are FTS5's boolean operators as Hermes' sanitizer knows them.
var Operators = [...]string{"AND", "OR", "NOT"}

// IsOperator reports whether tok is AND, OR or NOT in any case.
func IsOperator(tok string) bool {
	for _, op := range Operators {
		if strings.EqualFold(tok, op) {
			return true
		}
	}
	return false
}

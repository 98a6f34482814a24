package fts

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/querytext"
)

// ErrNothingToSearch is the cause of the ErrInvalid error of a search
// whose query holds nothing an index can search: only FTS5 operators,
// punctuation or symbols, none of which the word index holds. errors.Is
// matches both it and ErrInvalid (hermesstate.ErrUnsearchableQuery).
var ErrNothingToSearch = errs.ErrUnsearchable

// IsTokenChar reports whether FTS5's unicode61 tokenizer (Hermes' word
// index) keeps r in a token: letters, numbers and private-use characters
// (its default categories L*, N*, Co). Everything else (spaces,
// punctuation, '_', symbols such as emoji) separates tokens.
func IsTokenChar(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// HasTerm reports whether the sanitized query holds something the word
// index can find: a token character outside the FTS5 operators AND, OR and
// NOT.
func HasTerm(sanitized string) bool {
	for _, tok := range querytext.Fields(sanitized) {
		if tok == "AND" || tok == "OR" || tok == "NOT" {
			continue
		}
		if strings.IndexFunc(tok, IsTokenChar) >= 0 {
			return true
		}
	}
	return false
}

// NothingToSearch is the error of a search for query, which holds nothing
// an index can search (HasTerm false for its sanitized form): kind
// ErrInvalid wrapping ErrNothingToSearch, naming the query and why.
func NothingToSearch(op, query string) error {
	why := "it holds no letter or digit: the full-text index holds words, and punctuation and symbols (" + sample(query) + ") are not in it"
	if onlyOperators(query) {
		why = "it holds only search operators (AND, OR, NOT, NEAR, quotes, parentheses, *), no word to search for"
	}
	return &errs.Error{Kind: errs.ErrInvalid, Op: op, Err: ErrNothingToSearch,
		Msg: fmt.Sprintf("the query %q cannot be searched: %s", query, why)}
}

// onlyOperators reports whether query holds nothing but FTS5 operator
// words (AND, OR, NOT, NEAR in any case), quotes, parentheses and '*'.
func onlyOperators(query string) bool {
	for _, w := range strings.FieldsFunc(query, func(r rune) bool { return !IsTokenChar(r) }) {
		switch strings.ToUpper(w) {
		case "AND", "OR", "NOT", "NEAR":
		default:
			return false
		}
	}
	return strings.IndexFunc(query, func(r rune) bool {
		return !IsTokenChar(r) && !querytext.IsSpace(r) && !strings.ContainsRune(`"()*`, r)
	}) < 0
}

// sample is the query's characters as the error shows them (at most 20).
func sample(query string) string {
	q := strings.TrimSpace(query)
	if utf8.RuneCountInString(q) > 20 {
		q = string([]rune(q)[:20]) + "…"
	}
	return fmt.Sprintf("%q", q)
}

// Repair turns what a user typed into an FTS5 query that always parses,
// for a query whose Hermes sanitization (Sanitize) FTS5 refuses: Hermes
// itself answers such a query with no hits ("node.js." sanitizes to
// "\"node.js\"." and FTS5 stops at the dot). It keeps Sanitize's cap,
// balanced "…" phrases and '*' prefixes, and turns every other term that
// is not a plain FTS5 word into a phrase of the term, which FTS5 splits
// into its tokens as its tokenizer splits text: "node.js." searches the
// phrase "node js", "--flag=value" the phrase "flag value", "$HOME/.config"
// the phrase "home config", "e.g." the phrase "e g". Terms without a token
// character are left out, AND/OR/NOT (upper case: FTS5's operators) stay
// between terms, and operators left at an end or doubled are dropped. It
// returns "" when nothing searchable is left (see HasTerm).
func Repair(query string) string {
	if !utf8.ValidString(query) {
		query = strings.ToValidUTF8(query, "\uFFFD")
	}
	if utf8.RuneCountInString(query) > MaxQueryChars {
		query = string([]rune(query)[:MaxQueryChars])
	}
	var parts []string // terms and operators, in order
	for i := 0; i < len(query); {
		r, size := utf8.DecodeRuneInString(query[i:])
		switch {
		case querytext.IsSpace(r):
			i += size
			continue
		case r == '"':
			if j := strings.IndexByte(query[i+1:], '"'); j >= 0 {
				phrase := query[i+1 : i+1+j]
				i += j + 2
				prefix := false
				for i < len(query) && query[i] == '*' {
					prefix, i = true, i+1
				}
				if strings.IndexFunc(phrase, IsTokenChar) >= 0 {
					parts = append(parts, phraseOf(phrase, prefix))
				}
				continue
			}
			i += size // an unbalanced quote is a space
			continue
		}
		j := i
		for j < len(query) {
			r, size := utf8.DecodeRuneInString(query[j:])
			if querytext.IsSpace(r) || r == '"' {
				break
			}
			j += size
		}
		parts = append(parts, repairTerm(query[i:j]))
		i = j
	}
	// Operators only between terms, one at a time.
	var out []string
	pendingOp := ""
	for _, p := range parts {
		switch p {
		case "":
			continue
		case "AND", "OR", "NOT":
			if len(out) > 0 {
				pendingOp = p
			}
			continue
		}
		if pendingOp != "" {
			out = append(out, pendingOp)
			pendingOp = ""
		}
		out = append(out, p)
	}
	return strings.Join(out, " ")
}

// repairTerm is one whitespace-separated term of Repair: an operator as
// it is, a plain FTS5 word as it is (with its '*' prefix mark), anything
// else with a token character as a phrase, "" for the rest.
func repairTerm(t string) string {
	if t == "AND" || t == "OR" || t == "NOT" {
		return t
	}
	prefix := strings.HasSuffix(t, "*")
	t = strings.Trim(t, "*")
	if strings.IndexFunc(t, IsTokenChar) < 0 {
		return ""
	}
	if t == "AND" || t == "OR" || t == "NOT" {
		return phraseOf(t, prefix) // "OR*": the word, not the operator
	}
	if strings.IndexFunc(t, func(r rune) bool { return !IsTokenChar(r) && r != '_' && r < utf8.RuneSelf }) < 0 {
		if prefix {
			return t + "*"
		}
		return t
	}
	return phraseOf(t, prefix)
}

// phraseOf is text as an FTS5 string (a phrase of its tokens), with '*'
// for a prefix match of its last token.
func phraseOf(text string, prefix bool) string {
	text = strings.Map(func(r rune) rune {
		if r == '"' || r < 0x20 || r == 0x7f {
			return ' ' // a quote would end the string; control characters are not text
		}
		return r
	}, text)
	s := `"` + text + `"`
	if prefix {
		s += "*"
	}
	return s
}

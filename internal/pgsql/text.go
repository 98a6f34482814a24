package pgsql

import "strings"

// PostgreSQL text cannot hold U+0000, while SQLite text (and Hermes, whose
// multimodal content starts with NUL + "json:") can. The store therefore
// escapes every string argument on its way to the server and unescapes
// every text result on its way back, in the database/sql driver connection
// (see OpenDB), so every query (GORM, raw SQL, scans into strings) sees the
// original value:
//
//	U+0000 -> U+E000 '0'      U+E000 -> U+E000 'e'
//
// U+E000 is a private-use character; escaping it too keeps the mapping
// reversible for every string. Only values containing either character
// change; SQL written against the table sees the escaped form (length()
// counts two characters for each).

// Esc is the escape character.
const Esc = "\uE000"

var (
	escR  = strings.NewReplacer(Esc, Esc+"e", "\x00", Esc+"0")
	uescR = strings.NewReplacer(Esc+"e", Esc, Esc+"0", "\x00")
)

// EscapeText returns s in its stored form.
func EscapeText(s string) string {
	if strings.IndexByte(s, 0) < 0 && !strings.Contains(s, Esc) {
		return s
	}
	return escR.Replace(s)
}

// UnescapeText returns the original of a stored value.
func UnescapeText(s string) string {
	if !strings.Contains(s, Esc) {
		return s
	}
	return uescR.Replace(s)
}

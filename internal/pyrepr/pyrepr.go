// Package pyrepr writes Python's repr() of the values Hermes hashes into
// messages.display_identity: str, float, int and None, and tuples of them.
//
// repr() of a str depends on the Unicode database of the Python that runs
// it: a character is escaped (\xNN, \uNNNN, \UNNNNNNNN) unless
// str.isprintable() holds for it, and which characters are assigned (and
// so printable) grows with each Unicode version. Python 3.11 has Unicode
// 14.0, 3.12 has 15.0, 3.13 has 15.1, 3.14 has 16.0. Str therefore refuses
// (ok false) a string holding a character whose repr is not the same under
// every one of them: a character assigned in Unicode 15.0 (escaped by
// 3.11, kept by 3.12+), or one unassigned in Go's tables (15.0), which a
// later Unicode may assign. Every other character is printable or not
// alike in all of them, by the same rule as Go's unicode.IsPrint.
package pyrepr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// UnicodeVersion is the version of Go's unicode tables this package's
// table of Unicode 15.0 additions is written against; a Go release with
// other tables must come with a new table (TestUnicodeVersion).
const UnicodeVersion = "15.0.0"

// added15 are the code points Unicode 15.0 assigned (unassigned in Python
// 3.11's Unicode 14.0), found by comparing unicodedata.category of Python
// 3.11 with Go's tables (TestAdded15MatchesPython re-derives it).
var added15 = [][2]rune{
	{0xcf3, 0xcf3}, {0xece, 0xece}, {0x10efd, 0x10eff}, {0x1123f, 0x11241}, {0x11b00, 0x11b09},
	{0x11f00, 0x11f10}, {0x11f12, 0x11f3a}, {0x11f3e, 0x11f59}, {0x1342f, 0x1342f}, {0x13439, 0x13455},
	{0x1b132, 0x1b132}, {0x1b155, 0x1b155}, {0x1d2c0, 0x1d2d3}, {0x1df25, 0x1df2a}, {0x1e030, 0x1e06d},
	{0x1e08f, 0x1e08f}, {0x1e4d0, 0x1e4f9}, {0x1f6dc, 0x1f6dc}, {0x1f774, 0x1f776}, {0x1f77b, 0x1f77f},
	{0x1f7d9, 0x1f7d9}, {0x1fa75, 0x1fa77}, {0x1fa87, 0x1fa88}, {0x1faad, 0x1faaf}, {0x1fabb, 0x1fabd},
	{0x1fabf, 0x1fabf}, {0x1face, 0x1facf}, {0x1fada, 0x1fadb}, {0x1fae8, 0x1fae8}, {0x1faf7, 0x1faf8},
	{0x2b739, 0x2b739}, {0x31350, 0x323af},
}

// assigned reports whether Go's tables give r a category (other than Cn).
func assigned(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z,
		unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// noncharacter reports whether r is one of Unicode's 66 noncharacters,
// which stay unassigned in every version.
func noncharacter(r rune) bool {
	return (r >= 0xfdd0 && r <= 0xfdef) || r&0xfffe == 0xfffe
}

// Stable reports whether repr() writes r the same in Python 3.11 and every
// later Python (see the package comment).
func Stable(r rune) bool {
	if r < 0x80 {
		return true
	}
	for _, a := range added15 {
		if r >= a[0] && r <= a[1] {
			return false
		}
	}
	return assigned(r) || noncharacter(r)
}

// Str returns Python's repr() of s. ok is false when s is not valid UTF-8
// or holds a character whose repr depends on the Python version (Stable).
func Str(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	quote := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		quote = '"'
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == rune(quote) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < ' ' || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r < 0x7f:
			b.WriteRune(r)
		case !Stable(r):
			return "", false
		case unicode.IsPrint(r):
			b.WriteRune(r)
		case r <= 0xff:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	b.WriteByte(quote)
	return b.String(), true
}

// Float returns Python's repr() of f: the shortest text that reads back as
// f, in positional notation when its decimal exponent is in [-4, 16) (with
// ".0" when it has no fraction), else as d[.ddd]e+XX.
func Float(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, exp, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exp)
	digits := strings.Replace(mant, ".", "", 1)
	decpt := x + 1 // digits before the decimal point
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			return sign + "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
		default:
			return sign + digits[:decpt] + "." + digits[decpt:]
		}
	}
	m := digits[:1]
	if len(digits) > 1 {
		m += "." + digits[1:]
	}
	es := "+"
	if x < 0 {
		es, x = "-", -x
	}
	return fmt.Sprintf("%s%se%s%02d", sign, m, es, x)
}

// Int returns Python's repr() of n.
func Int(n int64) string { return strconv.FormatInt(n, 10) }

// None is Python's repr() of None.
const None = "None"

// Tuple returns Python's repr() of a tuple of the reprs items: "(a, b)",
// "(a,)" for one item, "()" for none.
func Tuple(items ...string) string {
	if len(items) == 1 {
		return "(" + items[0] + ",)"
	}
	return "(" + strings.Join(items, ", ") + ")"
}

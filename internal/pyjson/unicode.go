package pyjson

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// CanonicalUnicode is Canonical for Python's json.dumps(..., ensure_ascii=False):
// the same separators and the same escapes of control characters, quotes
// and backslashes, but every other character (U+007F and everything beyond
// ASCII) written as itself in UTF-8.
func CanonicalUnicode(raw []byte) ([]byte, error) {
	b, err := Canonical(raw)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(b))
	for i := 0; i < len(b); {
		if b[i] != '\\' || i+1 >= len(b) {
			out.WriteByte(b[i])
			i++
			continue
		}
		if b[i+1] != 'u' || i+6 > len(b) {
			out.Write(b[i : i+2])
			i += 2
			continue
		}
		r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 32)
		if err != nil || (r < 0x80 && r != 0x7f) {
			out.Write(b[i : i+6])
			i += 6
			continue
		}
		rr := rune(r)
		n := 6
		if utf16.IsSurrogate(rr) && i+12 <= len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
			if lo, err := strconv.ParseUint(string(b[i+8:i+12]), 16, 32); err == nil {
				if c := utf16.DecodeRune(rr, rune(lo)); c != utf8.RuneError {
					rr, n = c, 12
				}
			}
		}
		out.WriteRune(rr)
		i += n
	}
	return out.Bytes(), nil
}

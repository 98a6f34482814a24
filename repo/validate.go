package repo

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/internal/errs"
)

// MaxContentBytes caps one text value (message content and the like). SQLite
// itself allows 1e9; beyond this a write is refused with ErrInvalid instead
// of risking memory exhaustion in every later reader.
const MaxContentBytes = 64 << 20

// MaxIDBytes caps session ids.
const MaxIDBytes = 256

// checkText refuses invalid UTF-8 (which Python readers of the file cannot
// decode) and oversize values. NUL characters are allowed: SQLite binds text
// by length and Hermes itself stores NUL-prefixed multimodal content.
func checkText(op, field, s string) error {
	if len(s) > MaxContentBytes {
		return errs.Errorf(errs.ErrInvalid, op, "%s is %d bytes; the limit is %d", field, len(s), MaxContentBytes)
	}
	if !utf8.ValidString(s) {
		return errs.Errorf(errs.ErrInvalid, op, "%s is not valid UTF-8 (lone surrogates and raw bytes cannot be stored as text); clean it with strings.ToValidUTF8", field)
	}
	return nil
}

func checkTextPtr(op, field string, s *string) error {
	if s == nil {
		return nil
	}
	return checkText(op, field, *s)
}

// checkID validates a session id: non-empty, bounded, valid UTF-8, no
// control characters.
func checkID(op, id string) error {
	if id == "" {
		return errs.Errorf(errs.ErrInvalid, op, "session id is empty")
	}
	if len(id) > MaxIDBytes {
		return errs.Errorf(errs.ErrInvalid, op, "session id is %d bytes; the limit is %d", len(id), MaxIDBytes)
	}
	if !utf8.ValidString(id) {
		return errs.Errorf(errs.ErrInvalid, op, "session id is not valid UTF-8")
	}
	if strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return errs.Errorf(errs.ErrInvalid, op, "session id contains control characters")
	}
	return nil
}

// checkName validates a short identifier-like value (role, source).
func checkName(op, field, s string) error {
	if strings.TrimSpace(s) == "" {
		return errs.Errorf(errs.ErrInvalid, op, "%s is empty", field)
	}
	if len(s) > 64 {
		return errs.Errorf(errs.ErrInvalid, op, "%s is longer than 64 bytes", field)
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return errs.Errorf(errs.ErrInvalid, op, "%s contains invalid or control characters", field)
	}
	return nil
}

// NewSessionID returns an id in Hermes' form: YYYYMMDD_HHMMSS_ and six hex
// digits, in local time.
func NewSessionID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().Format("20060102_150405") + "_" + hex.EncodeToString(b[:])
}

// checkJSON refuses a JSON column value that is not one valid JSON value,
// is oversize, holds invalid UTF-8, or holds a lone UTF-16 surrogate escape
// such as "\ud800" (valid JSON syntax, but no UTF-8 reader can decode it,
// and Go's decoder would silently turn it into U+FFFD, so it could not be
// read back as written). An empty value is NULL and passes.
func checkJSON(op, field string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if len(b) > MaxContentBytes {
		return errs.Errorf(errs.ErrInvalid, op, "%s is %d bytes; the limit is %d", field, len(b), MaxContentBytes)
	}
	if !utf8.Valid(b) {
		return errs.Errorf(errs.ErrInvalid, op, "%s is not valid UTF-8", field)
	}
	if !json.Valid(b) {
		return errs.Errorf(errs.ErrInvalid, op, "%s is not valid JSON", field)
	}
	if off := loneSurrogate(b); off >= 0 {
		return errs.Errorf(errs.ErrInvalid, op, "%s holds a lone UTF-16 surrogate escape (%s at byte %d), which cannot be stored as UTF-8 text; replace it (for example with \\ufffd)", field, b[off:off+6], off)
	}
	return nil
}

// loneSurrogate returns the offset of the first \uD800–\uDFFF escape in
// the JSON text b that is not part of a high+low surrogate pair, or -1.
// b must be valid JSON (backslashes occur only inside strings).
func loneSurrogate(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // skip the escaped character (\\ \" \n ...)
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			return i
		}
		switch {
		case r >= 0xD800 && r <= 0xDBFF:
			if i+11 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				if lo, ok := hex4(b, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 11
					continue
				}
			}
			return i
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		}
		i += 5
	}
	return -1
}

func hex4(b []byte, at int) (rune, bool) {
	if at+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[at : at+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

func errorsAs(err error, target any) bool { return errors.As(err, target) }

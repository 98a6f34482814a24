package repo

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/models"
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
		return models.Errorf(models.ErrInvalid, op, "%s is %d bytes; the limit is %d", field, len(s), MaxContentBytes)
	}
	if !utf8.ValidString(s) {
		return models.Errorf(models.ErrInvalid, op, "%s is not valid UTF-8 (lone surrogates and raw bytes cannot be stored as text); clean it with strings.ToValidUTF8", field)
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
		return models.Errorf(models.ErrInvalid, op, "session id is empty")
	}
	if len(id) > MaxIDBytes {
		return models.Errorf(models.ErrInvalid, op, "session id is %d bytes; the limit is %d", len(id), MaxIDBytes)
	}
	if !utf8.ValidString(id) {
		return models.Errorf(models.ErrInvalid, op, "session id is not valid UTF-8")
	}
	if strings.IndexFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return models.Errorf(models.ErrInvalid, op, "session id contains control characters")
	}
	return nil
}

// checkName validates a short identifier-like value (role, source).
func checkName(op, field, s string) error {
	if strings.TrimSpace(s) == "" {
		return models.Errorf(models.ErrInvalid, op, "%s is empty", field)
	}
	if len(s) > 64 {
		return models.Errorf(models.ErrInvalid, op, "%s is longer than 64 bytes", field)
	}
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return models.Errorf(models.ErrInvalid, op, "%s contains invalid or control characters", field)
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

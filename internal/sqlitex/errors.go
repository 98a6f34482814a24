package sqlitex

import (
	"errors"
	"strings"
)

// Primary SQLite result codes used here (https://sqlite.org/rescode.html).
const (
	codeBusy      = 5
	codeLocked    = 6
	codeInterrupt = 9
	codeIOErr     = 10
	codeCorrupt   = 11
	codeNotADB    = 26
)

type coder interface{ Code() int }

// Code returns the SQLite result code carried by err (extended codes
// included), and false when err carries none.
func Code(err error) (int, bool) {
	var c coder
	if errors.As(err, &c) {
		return c.Code(), true
	}
	engineMu.Lock()
	readers := codeOf
	engineMu.Unlock()
	for _, f := range readers {
		if n, ok := f(err); ok {
			return n, true
		}
	}
	return 0, false
}

// IsLock reports whether err is a transient lock error: SQLITE_BUSY or
// SQLITE_LOCKED, with any extended code (BUSY_SNAPSHOT, BUSY_RECOVERY,
// LOCKED_SHAREDCACHE, ...). Only when the error carries no code at all does it
// fall back to the words "database is locked" / "database table is locked".
func IsLock(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrLockWait) {
		return true
	}
	if c, ok := Code(err); ok {
		p := c & 0xff
		return p == codeBusy || p == codeLocked
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "database is locked") || strings.Contains(msg, "database table is locked")
}

// IsCorrupt reports whether err is SQLITE_CORRUPT or SQLITE_NOTADB.
func IsCorrupt(err error) bool {
	if c, ok := Code(err); ok {
		p := c & 0xff
		return p == codeCorrupt || p == codeNotADB
	}
	return false
}

// IsIOErr reports whether err is SQLITE_IOERR (any extended code).
func IsIOErr(err error) bool {
	if c, ok := Code(err); ok {
		return c&0xff == codeIOErr
	}
	return false
}

// IsInterrupt reports whether err is SQLITE_INTERRUPT (a statement stopped
// by sqlite3_interrupt).
func IsInterrupt(err error) bool {
	if c, ok := Code(err); ok {
		return c&0xff == codeInterrupt
	}
	return false
}

// Package errs holds the error kinds of hermesstate and its one error
// type. Every error the library returns wraps exactly one kind, so callers
// test with errors.Is; the root package re-exports the kinds and the type
// (hermesstate.ErrNotFound, hermesstate.Error), which is where users find
// them.
package errs

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by hermesstate wraps exactly one of
// them, so callers test with errors.Is(err, hermesstate.ErrNotFound).
var (
	// ErrNotFound: the session, message or key does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the write collides with existing data (a title held by
	// another session, an id that exists, a session ended by compression).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the input is refused before anything is written.
	ErrInvalid = errors.New("invalid input")
	// ErrBusy: another process held the write lock for the whole retry budget.
	ErrBusy = errors.New("database busy")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrCorrupt: the database file is damaged; run `hermes-state doctor`.
	ErrCorrupt = errors.New("database corrupt")
	// ErrStorage: the database failed in a way none of the above describes
	// (the cause is wrapped; the message never carries SQL text).
	ErrStorage = errors.New("storage error")
	// ErrUnsupported: the file or the SQLite build cannot do what was asked
	// (for example WAL on a vulnerable SQLite build).
	ErrUnsupported = errors.New("unsupported")
)

// ErrNoStore is not a kind but the cause of the ErrNotFound error returned
// where a store must already exist and there is none: the file is missing
// (its directory too, for a mistyped path) or empty (0 bytes, a truncated
// file), or the PostgreSQL schema holds no store. errors.Is matches both it
// and ErrNotFound; the message says "no store at PATH".
var ErrNoStore = errors.New("no store")

// ErrNotRegular is not a kind but the cause of the ErrInvalid error
// returned for a path that exists and is not a regular file (a directory,
// a device, a FIFO, a socket) where a store or a file of hermesstate
// (backup, recovered store, export) would be opened or written: it is
// refused before SQLite sees the path, so nothing is written to it or
// beside it. errors.Is matches both it and ErrInvalid.
var ErrNotRegular = errors.New("not a regular file")

// ErrUnsearchable is not a kind but the cause of the ErrInvalid error of
// a search whose query holds nothing an index can search (only operators,
// punctuation or symbols): "no messages match" would claim a search that
// did not run. errors.Is matches both it and ErrInvalid.
var ErrUnsearchable = errors.New("the query cannot be searched")

// NotRegular is the error for path, which exists and is a what ("a
// directory", "a block device", ...), not a regular file (see
// ErrNotRegular): kind ErrInvalid, the message names the path and what it
// is, and says that nothing was written.
func NotRegular(op, path, what string) *Error {
	return &Error{Kind: ErrInvalid, Op: op, Err: ErrNotRegular,
		Msg: path + " is " + what + ", not a regular file: a store (and every file hermes-state writes) is a regular file; nothing was written to it or beside it"}
}

// NoStore is the error for a path that holds no store (see ErrNoStore):
// kind ErrNotFound, "no store at WHERE" followed by why when given, and
// cause (if any) kept in the chain.
func NoStore(op, where, why string, cause error) *Error {
	msg := "no store at " + where
	if why != "" {
		msg += ": " + why
	}
	err := ErrNoStore
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrNoStore, cause)
	}
	return &Error{Kind: ErrNotFound, Op: op, Msg: msg, Err: err}
}

// Error is the one error type of hermesstate. Kind is one of the sentinels
// above; Op names the operation ("sessions.create"); Msg is a message for
// people; Err is the underlying cause, if any. errors.Is matches both Kind
// and anything in the Err chain.
type Error struct {
	Kind error
	Op   string
	Msg  string
	Err  error
	// ID is the id of the other party in a conflict (the session that holds a
	// title), when there is one.
	ID string
}

func (e *Error) Error() string {
	s := e.Op
	if s != "" {
		s += ": "
	}
	if e.Kind != nil {
		s += e.Kind.Error()
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil && e.Msg == "" {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Kind and the cause, so errors.Is sees both.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2)
	if e.Kind != nil {
		out = append(out, e.Kind)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Errorf builds an *Error of the given kind with a formatted message.
func Errorf(kind error, op, format string, args ...any) *Error {
	return &Error{Kind: kind, Op: op, Msg: fmt.Sprintf(format, args...)}
}

// Wrap builds an *Error of the given kind around cause.
func Wrap(kind error, op string, cause error, msg string) *Error {
	return &Error{Kind: kind, Op: op, Msg: msg, Err: cause}
}

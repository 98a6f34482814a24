package models

import "github.com/hermesstate/hermesstate/internal/errs"

// The error kinds and the error type live in internal/errs (re-exported by
// the root package as hermesstate.ErrNotFound, hermesstate.Error, ...).
// These names stay while the packages that use them move to errs.
var (
	ErrNotFound    = errs.ErrNotFound
	ErrConflict    = errs.ErrConflict
	ErrInvalid     = errs.ErrInvalid
	ErrBusy        = errs.ErrBusy
	ErrClosed      = errs.ErrClosed
	ErrCorrupt     = errs.ErrCorrupt
	ErrStorage     = errs.ErrStorage
	ErrUnsupported = errs.ErrUnsupported
)

// Error is errs.Error.
type Error = errs.Error

// Errorf is errs.Errorf.
func Errorf(kind error, op, format string, args ...any) *Error {
	return errs.Errorf(kind, op, format, args...)
}

// Wrap is errs.Wrap.
func Wrap(kind error, op string, cause error, msg string) *Error {
	return errs.Wrap(kind, op, cause, msg)
}

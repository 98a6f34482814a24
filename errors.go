package hermesstate

import (
	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/migrations"
)

// The error kinds (internal/errs): every error the store returns wraps
// exactly one, so callers write errors.Is(err, hermesstate.ErrNotFound).
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

// ErrNoStore is the cause of the ErrNotFound error returned where a store
// must exist and there is none (Config.MustExist, ReadOnly, Doctor, Repair):
// a missing or empty (0-byte) file, or a PostgreSQL schema without a store.
// errors.Is matches both ErrNoStore and ErrNotFound.
var ErrNoStore = errs.ErrNoStore

// ErrNotRegularFile is the cause of the ErrInvalid error returned for a
// path that exists and is not a regular file (a directory, a block or
// character device, a FIFO, a socket) given as a store (Open, OpenSnapshot,
// Doctor, Repair, Recover's From) or as a new file to write (Recover's To,
// a backup): it is refused before SQLite opens the path, so nothing is
// written to it or beside it (no -wal, -shm or -journal). errors.Is
// matches both ErrNotRegularFile and ErrInvalid.
var ErrNotRegularFile = errs.ErrNotRegular

// ErrUnsearchableQuery is the cause of the ErrInvalid error of a search
// whose query holds nothing an index can search: only FTS5 operators,
// punctuation or symbols ("*", "-", "\"\" OR \"\"", an emoji alone). The
// message names the query and why. errors.Is matches both it and
// ErrInvalid; the CLI exits 2, MCP answers a tool error, browse says so.
var ErrUnsearchableQuery = errs.ErrUnsearchable

// Error is the one error type every operation returns (see errs.Error).
type Error = errs.Error

// HermesSchemaVersion is the newest Hermes schema version this build
// knows (v30). A file with a higher schema_version is opened read-only.
const HermesSchemaVersion = migrations.HermesSchemaVersion

package hermesstate

import (
	"github.com/hermesstate/hermesstate/migrations"
	"github.com/hermesstate/hermesstate/models"
)

// Sentinel errors, re-exported from models so callers write
// errors.Is(err, hermesstate.ErrNotFound).
var (
	ErrNotFound    = models.ErrNotFound
	ErrConflict    = models.ErrConflict
	ErrInvalid     = models.ErrInvalid
	ErrBusy        = models.ErrBusy
	ErrClosed      = models.ErrClosed
	ErrCorrupt     = models.ErrCorrupt
	ErrStorage     = models.ErrStorage
	ErrUnsupported = models.ErrUnsupported
)

// Error is the one error type every operation returns (see models.Error).
type Error = models.Error

// HermesSchemaVersion is the newest Hermes schema version this build
// knows (v30). A file with a higher schema_version is opened read-only.
const HermesSchemaVersion = migrations.HermesSchemaVersion

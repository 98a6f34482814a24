//go:build !unix

package sqlitex

import (
	"errors"
	"os"
)

var errNoFlock = errors.New("sqlitex: no flock on this system")

// Without flock(2) the lock file is not used: SQLite's locks alone order
// the writers.
func tryFlock(*os.File) (bool, error) { return false, errNoFlock }
func flock(*os.File) error            { return errNoFlock }
func unflock(*os.File)                {}

package sqlitex

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrWALUnreadable is returned (wrapped) by ReadOnlyPlace when a WAL file
// holds commits SQLite cannot read where the file lies.
var ErrWALUnreadable = errors.New("the -wal holds commits that cannot be read here")

// IsCantOpen reports whether err is SQLITE_CANTOPEN (any extended code).
func IsCantOpen(err error) bool {
	c, ok := Code(err)
	return ok && c&0xff == 14
}

// IsReadOnly reports whether err is SQLITE_READONLY (any extended code:
// READONLY_CANTINIT, READONLY_DIRECTORY, ...). A mode=ro reader of a
// WAL-mode file meets it, rather than SQLITE_CANTOPEN, when it may not
// create the -shm in a directory it cannot write (a user without write
// permission, as opposed to a read-only mount).
func IsReadOnly(err error) bool {
	c, ok := Code(err)
	return ok && c&0xff == 8
}

// ReadOnlyPlace is asked after a mode=ro open of path failed with
// SQLITE_CANTOPEN or SQLITE_READONLY. In WAL mode SQLite needs the -shm file beside the
// database and creates it when it is missing; in a directory that cannot be
// written (a read-only mount, a directory without write permission) it
// cannot. When that is the case and no -wal with commits exists either,
// nobody writes to the file from this place and it can be read as
// immutable (no lock, no -shm): immutable is true. When such a -wal exists,
// its commits cannot be read there: the error wraps ErrWALUnreadable and
// says what to do. Otherwise immutable is false (the failure has another
// cause). It never opens the database file (closing a descriptor would drop
// this process's locks on it).
func ReadOnlyPlace(path string) (immutable bool, err error) {
	if _, err := os.Stat(path + "-shm"); err == nil {
		return false, nil
	}
	if dirWritable(filepath.Dir(path)) {
		return false, nil
	}
	if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
		return false, fmt.Errorf("%w: %s is in WAL mode with a -wal of %d bytes and no -shm, in a directory that cannot be written; copy the three files to a writable place (or open it once where it can be written)",
			ErrWALUnreadable, path, st.Size())
	}
	return true, nil
}

package sqlitex

import (
	"errors"
	"io/fs"
	"os"

	"github.com/hermesstate/hermesstate/internal/errs"
)

// CheckStoreFile refuses a path that holds no store where one must exist:
// missing, the path's directories included (errs.NoStore: ErrNotFound and
// ErrNoStore, "no store at PATH"), empty (0 bytes: a truncated file, never
// initialised behind the user's back; also errs.NoStore), or not a regular
// file (see CheckRegular). Other failures (permission denied on a
// directory of the path) are ErrStorage with the cause in words.
func CheckStoreFile(op, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errs.NoStore(op, path, "", err)
		}
		return errs.Wrap(errs.ErrStorage, op, err, "cannot open "+path+": "+Describe(err))
	}
	if !st.Mode().IsRegular() {
		return errs.NotRegular(op, path, FileKind(st.Mode()))
	}
	if st.Size() == 0 {
		return errs.NoStore(op, path, "the file is empty (0 bytes); restore it from a backup, or remove it and run "+Command(path, "migrate")+" for a new store", nil)
	}
	return nil
}

// CheckRegular is the one check every opener of a SQLite file (a store, a
// backup, a recovered store) and every writer of a new file runs before
// SQLite or the writer sees path: a path that exists (symbolic links
// followed) and is not a regular file (a directory, a block or character
// device, a FIFO, a socket) is refused with errs.NotRegular (ErrInvalid
// and ErrNotRegular, naming the path and what it is). A missing path, and
// a path that cannot be examined (its directory may not be searched), pass:
// the open that follows reports those in its own words. Refused before
// anything is opened, the path gets no -wal, -shm or -journal beside it.
func CheckRegular(op, path string) error {
	st, err := os.Stat(path)
	if err != nil || st.Mode().IsRegular() {
		return nil
	}
	return errs.NotRegular(op, path, FileKind(st.Mode()))
}

// FileKind names the kind of file m describes, with its article ("a
// directory", "a block device", "a character device", "a named pipe
// (FIFO)", "a socket", "a regular file").
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "a file of an unknown kind"
	case m.IsRegular():
		return "a regular file"
	}
	return "not a file"
}

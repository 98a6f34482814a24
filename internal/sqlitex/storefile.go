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
// file (ErrInvalid). Other failures (permission denied on a directory of
// the path) are ErrStorage with the cause in words.
func CheckStoreFile(op, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return errs.NoStore(op, path, "", err)
		}
		return errs.Wrap(errs.ErrStorage, op, err, "cannot open "+path+": "+Describe(err))
	}
	if !st.Mode().IsRegular() {
		return errs.Errorf(errs.ErrInvalid, op, "%s is not a regular file", path)
	}
	if st.Size() == 0 {
		return errs.NoStore(op, path, "the file is empty (0 bytes); restore it from a backup, or remove it and run `hermes-state migrate` for a new store", nil)
	}
	return nil
}

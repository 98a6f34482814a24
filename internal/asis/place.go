package asis

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// LeavesNothing reports whether a reader of the SQLite file path can open
// it for reading and writing and so leave nothing beside it: the file and
// its directory may be written by this process and no -wal, -shm or
// -journal lies beside it. Such a reader (PRAGMA query_only keeps it from
// writing) removes the -wal and -shm SQLite makes for a WAL-mode file when
// it closes last, as Hermes' own readers do; one that opens the file with
// mode=ro cannot, and leaves them behind. Without side files there is no
// hot journal to roll back and no WAL content to checkpoint, so the
// database file is never written. It never opens the file (closing a
// descriptor would drop this process's locks on it).
func LeavesNothing(path string) bool {
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(path + side); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	return writable(path) && writable(filepath.Dir(path))
}

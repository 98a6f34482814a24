package sqlitex

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// codeReadOnlyRollback is SQLITE_READONLY_ROLLBACK: a read-only connection
// met a hot journal, which only a writer can roll back.
const codeReadOnlyRollback = 776

// IsHotJournal reports whether err is SQLITE_READONLY_ROLLBACK: the file
// has a hot journal (a write transaction interrupted before it committed)
// that must be rolled back before the file can be read, which needs a
// write-capable connection.
func IsHotJournal(err error) bool {
	c, ok := Code(err)
	return ok && c == codeReadOnlyRollback
}

// More primary result codes (https://sqlite.org/rescode.html), for Cause.
const (
	codePerm     = 3
	codeNoMem    = 7
	codeReadOnly = 8
	codeFull     = 13
	codeCantOpen = 14
	codeProtocol = 15
	codeTooBig   = 18
	codeNoLFS    = 22
	codeAuth     = 23
)

// Cause names what a SQLite or operating-system error means in words a
// user acts on ("disk full", "the database cannot be written", "disk I/O
// error (a short read: ...)", "permission denied"), or returns "" when err
// carries no cause it knows. It never returns SQL text.
func Cause(err error) string {
	if err == nil {
		return ""
	}
	if c, ok := Code(err); ok {
		return codeCause(c)
	}
	var pe *fs.PathError
	var errno syscall.Errno
	if errors.As(err, &pe) || errors.As(err, &errno) {
		return Describe(err)
	}
	return ""
}

// codeCause is Cause for a SQLite result code (extended codes included).
func codeCause(c int) string {
	switch c & 0xff {
	case codeFull:
		return "disk full"
	case codeIOErr:
		what := map[int]string{
			266:  " (reading the file)",
			522:  " (a short read: the file or its -wal was truncated or replaced while in use)",
			778:  " (writing the file)",
			1034: " (syncing the file to disk)",
			1546: " (truncating the file)",
			2570: " (deleting a journal file)",
			3338: " (checking a file)",
			3850: " (taking a file lock; locks may not work on this filesystem)",
			2058: " (taking a file lock; locks may not work on this filesystem)",
			4618: " (opening the shared-memory file -shm)",
			4874: " (growing the shared-memory file -shm)",
			5386: " (mapping the shared-memory file -shm)",
		}[c]
		return "disk I/O error" + what
	case codeReadOnly:
		what := map[int]string{
			264:  ": it needs recovery, which needs write access",
			520:  ": the shared-memory file (-shm) is read-only",
			776:  ": an interrupted transaction (a process stopped in the middle of a write and left a hot -journal beside the file) must be rolled back first, which needs write access: run `hermes-state repair` where the file can be written",
			1032: ": the file was moved or deleted while in use",
			1288: ": the shared-memory file (-shm) cannot be initialised",
			1544: ": its directory cannot be written",
		}[c]
		return "the database cannot be written" + what
	case codeCantOpen:
		what := map[int]string{
			526:  ": no directory for temporary files",
			782:  ": it is a directory",
			1038: ": its full path cannot be worked out",
			1806: ": it is a symbolic link",
		}[c]
		return "the file cannot be opened" + what
	case codePerm:
		return "permission denied"
	case codeNoMem:
		return "out of memory"
	case codeTooBig:
		return "a value is larger than SQLite allows"
	case codeNoLFS:
		return "the file is too large for this system"
	case codeAuth:
		return "not authorized"
	case codeProtocol:
		return "the file locking protocol failed (locks may not work on this filesystem)"
	}
	return ""
}

// Explain is Cause made precise by the place of the SQLite file path when
// the error is about where the file lies (cannot write, cannot open, disk
// I/O error, permission): "the database cannot be written: read-only file
// system"; for a file that cannot be opened the place alone ("it is a
// directory", "read-only file system"). It never opens the database file.
func Explain(err error, path string) string {
	cause := Cause(err)
	c, ok := Code(err)
	if !ok || path == "" {
		return cause
	}
	switch c & 0xff {
	case codeReadOnly, codeCantOpen, codeIOErr, codePerm:
	default:
		return cause
	}
	if c == codeReadOnlyRollback {
		// The advice names the command for this file.
		cause = strings.Replace(cause, "`hermes-state repair`", Command(path, "repair"), 1)
	}
	place := Place(path)
	switch {
	case place == "" || place == cause:
		return cause
	case cause == "", c&0xff == codeCantOpen, c&0xff == codePerm:
		return place // more precise than "cannot be opened"
	}
	return cause + ": " + place
}

// Place says what keeps the SQLite file path from being opened or written
// where it lies, or "" when nothing is found: the path (or its directory)
// does not exist or is not a file, the file system is read-only or full,
// the file or its directory (where SQLite makes its -wal, -shm and
// -journal files) may not be written. It looks with stat(2), access(2)
// and statfs(2) only, never opening the file.
func Place(path string) string {
	dir := filepath.Dir(path)
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			return "the directory " + dir + " does not exist"
		}
		return "the file does not exist"
	case err != nil:
		return Describe(err)
	case st.IsDir():
		return "it is a directory"
	case !st.Mode().IsRegular():
		return "it is not a regular file"
	}
	if diskFull(dir) {
		return "disk full"
	}
	if err := access(path, 6 /* R_OK|W_OK */); err != nil {
		return Describe(err)
	}
	if err := access(dir, 2 /* W_OK */); err != nil {
		return "its directory cannot be written (" + Describe(err) + ")"
	}
	return ""
}

// PlaceFailure reports whether err, met while opening or reading the
// SQLite file path, is a failure of where the file lies rather than damage
// to it (a full disk, a read-only file system, no permission, a -shm that
// cannot be made or grown, no memory), and says why (Explain). A disk I/O
// error counts only when it is about the -shm or the place shows a cause;
// a hot journal only where the file cannot be written.
func PlaceFailure(err error, path string) (string, bool) {
	c, ok := Code(err)
	if !ok {
		return "", false
	}
	if c == codeReadOnlyRollback && Place(path) == "" {
		return "", false // a hot journal where the file can be written: see IsHotJournal
	}
	switch c & 0xff {
	case codeFull, codeReadOnly, codeCantOpen, codePerm, codeNoMem:
	case codeIOErr:
		if c != 4618 && c != 4874 && c != 5386 && Place(path) == "" {
			return "", false
		}
	default:
		return "", false
	}
	return Explain(err, path), true
}

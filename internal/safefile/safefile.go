// Package safefile writes the files hermesstate creates beside a store
// (backups, recovered stores, exports, snapshots) so that a kill, a full
// disk or an error never leaves a partial or world-readable file under the
// final name: the data goes to a private temporary file (mode 0600, created
// with O_EXCL, its name carrying the writer's pid) in the same directory,
// is synced, and is then published under the final name without ever
// replacing an existing file. Temporary files of processes that died are
// removed by the next writer.
//
// It never opens a live database: only files it created itself, and
// backups it is asked to judge.
package safefile

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CreateTemp creates a new empty file in dir, mode 0600, named prefix +
// pid + "-" + random, and returns its path. It fails if the directory
// cannot be written.
func CreateTemp(dir, prefix string) (string, error) {
	for i := 0; i < 100; i++ {
		p := filepath.Join(dir, TempName(prefix))
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		return p, f.Close()
	}
	return "", errors.New("safefile: cannot find a free temporary name in " + dir)
}

// TempName returns prefix + pid + "-" + 12 random hex digits.
func TempName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// Remove removes a temporary file and the SQLite sidecars a failed write
// may have left beside it.
func Remove(path string) {
	for _, p := range []string{path, path + "-journal", path + "-wal", path + "-shm"} {
		_ = os.Remove(p)
	}
}

// Sync flushes the file at path to stable storage.
func Sync(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Publish gives the finished temporary file tmp its final name: it syncs
// tmp, links it to final (which fails, keeping tmp, when final exists),
// removes tmp and syncs the directory. On a filesystem without hard links
// it renames tmp after checking that final does not exist. The error of an
// existing final wraps fs.ErrExist.
func Publish(tmp, final string) error {
	if err := Sync(tmp); err != nil {
		return err
	}
	if err := os.Link(tmp, final); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		if _, serr := os.Lstat(final); serr == nil {
			return &fs.PathError{Op: "publish", Path: final, Err: fs.ErrExist}
		}
		if err := os.Rename(tmp, final); err != nil {
			return err
		}
	} else {
		_ = os.Remove(tmp)
	}
	SyncDir(filepath.Dir(final))
	return nil
}

// SyncDir syncs a directory (the new name of a file), ignoring filesystems
// that cannot.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// RemoveStale removes the entries of dir named prefix + pid + "-..." whose
// process no longer runs (files and directories: what a killed writer
// left). It returns the paths removed.
func RemoveStale(dir, prefix string) []string {
	es, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range es {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		rest := name[len(prefix):]
		i := strings.IndexByte(rest, '-')
		if i <= 0 {
			continue
		}
		pid, err := strconv.Atoi(rest[:i])
		if err != nil || pid <= 0 || pid == os.Getpid() || Alive(pid) {
			continue
		}
		p := filepath.Join(dir, name)
		if os.RemoveAll(p) == nil {
			out = append(out, p)
		}
	}
	return out
}

// CompleteSQLite reports whether the file at path is a whole SQLite
// database as VACUUM INTO writes one: the header's magic and page size are
// valid, its in-header page count is current, and the file holds exactly
// that many pages. A backup cut short by a kill or a full disk fails it.
func CompleteSQLite(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	h := make([]byte, 100)
	if _, err := io.ReadFull(f, h); err != nil {
		return false
	}
	if string(h[:16]) != "SQLite format 3\x00" {
		return false
	}
	ps := int64(binary.BigEndian.Uint16(h[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 {
		return false
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	if pages == 0 || binary.BigEndian.Uint32(h[24:28]) != binary.BigEndian.Uint32(h[92:96]) {
		return false
	}
	return st.Size() == pages*ps
}

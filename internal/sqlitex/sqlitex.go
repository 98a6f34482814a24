// Package sqlitex holds everything about the SQLite connection that is not
// GORM: the typed connection settings that build the DSN, the pragmas applied
// to every connection, the SQLite library version check, the classification
// of SQLite errors by result code, and the retry policy for lock errors.
package sqlitex

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Synchronous is the value of PRAGMA synchronous.
type Synchronous string

// Synchronous modes. NORMAL is the default: in WAL mode a commit is durable
// against an application crash and only the last transactions can be lost on
// power failure, never the integrity of the file. FULL fsyncs every commit.
const (
	SyncNormal Synchronous = "NORMAL"
	SyncFull   Synchronous = "FULL"
	SyncOff    Synchronous = "OFF"
)

// ConnConfig is the typed form of one connection's settings. Engine.DSN and
// Engine.URI render it for an engine; DSN and URI for the pure-Go one. The journal mode is not part of it: it is
// a property of the file, set once at open (see SetJournalMode), so that every
// new pooled connection does not race to change it.
type ConnConfig struct {
	Path        string
	BusyTimeout time.Duration
	Synchronous Synchronous
	ForeignKeys bool
	QueryOnly   bool
	// CacheSizeKiB sets PRAGMA cache_size to -CacheSizeKiB when positive.
	CacheSizeKiB int
	// Immediate makes BEGIN mean BEGIN IMMEDIATE (writers). It must not be
	// combined with _time_format, which silently disables _txlock in the
	// driver; DSN never emits _time_format.
	Immediate bool
	// ReadOnly opens the file with SQLite's mode=ro: the database file is
	// opened for reading only and never created. Only URI renders it.
	ReadOnly bool
	// Immutable adds immutable=1 (with ReadOnly): SQLite takes no lock and
	// needs no -shm. Only for a WAL file in a place that cannot be written
	// (see ReadOnlyPlace).
	Immutable bool
	// WritableSchema sets PRAGMA writable_schema=1 (recover reads a
	// damaged schema with it).
	WritableSchema bool
	// StmtCache is the number of compiled statements each connection keeps
	// for reuse, on engines that can (the C engine); 0 is the engine's
	// default (DefaultStmtCache), negative none.
	StmtCache int
}

// URI renders the settings as a file: URI of the pure-Go engine (see
// Engine.URI). It fails only when the working directory cannot be read to
// make the path absolute.
func (c ConnConfig) URI() (string, error) { return GoEngine.URI(c) }

// DSN renders the settings as a DSN of the pure-Go engine (see
// Engine.DSN): the path followed by _pragma parameters (applied on every
// new connection) and _txlock.
func (c ConnConfig) DSN() string { return GoEngine.DSN(c) }

// fileURI returns the file: URI of path made absolute, percent-escaped, so
// any file name works.
func fileURI(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return "file://" + u.EscapedPath(), nil
}

// Version is a parsed SQLite library version.
type Version struct{ Major, Minor, Patch int }

// ParseVersion parses "3.53.3". It returns an error for anything else.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("sqlitex: unparsable SQLite version %q", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return Version{}, fmt.Errorf("sqlitex: unparsable SQLite version %q", s)
		}
		n[i] = v
	}
	return Version{n[0], n[1], n[2]}, nil
}

func (v Version) less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// HasWALResetBug reports whether this SQLite build has the WAL-reset
// corruption bug: 3.7.0 <= v < 3.51.3, except the fixed backports
// 3.44.6–3.44.x and 3.50.7–3.50.x.
func (v Version) HasWALResetBug() bool {
	if v.less(Version{3, 7, 0}) || !v.less(Version{3, 51, 3}) {
		return false
	}
	if v.Major == 3 && v.Minor == 44 && v.Patch >= 6 {
		return false
	}
	if v.Major == 3 && v.Minor == 50 && v.Patch >= 7 {
		return false
	}
	return true
}

// ErrVulnerableSQLite is returned (wrapped) when WAL is requested on a SQLite
// build that has the WAL-reset bug.
var ErrVulnerableSQLite = errors.New("SQLite build has the WAL-reset corruption bug (3.7.0 to 3.51.2); refusing WAL")

// CheckWAL returns nil when WAL may be enabled with the SQLite library whose
// sqlite_version() is s, and an error wrapping ErrVulnerableSQLite otherwise
// (or a parse error).
func CheckWAL(s string) error {
	v, err := ParseVersion(s)
	if err != nil {
		return err
	}
	if v.HasWALResetBug() {
		return fmt.Errorf("sqlitex: SQLite %s: %w; build with an engine that embeds SQLite >= 3.51.3 (both of this module's do: 3.54.1, from modernc.org/sqlite v1.62.0 and github.com/mattn/go-sqlite3 v1.14.53, unless the C engine was built against the system library with the tag libsqlite3) or configure journal mode delete", v, ErrVulnerableSQLite)
	}
	return nil
}

//go:build cgo && (sqlite_fts5 || fts5)

package sqlitex

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
)

// cDriver is the database/sql driver name of the C engine: mattn's driver
// registered again with a connect hook that adds the functions of
// RegisterFunc to every connection (mattn registers functions per
// connection, not per process). The plain "sqlite3" stays mattn's own.
const cDriver = "hermesstate-sqlite3"

// cEngine is the C engine: the SQLite 3.54.1 C library embedded in
// github.com/mattn/go-sqlite3 v1.14.53, with GORM through
// gorm.io/driver/sqlite. Each connection keeps its compiled statements in
// mattn's bounded LRU cache (_stmt_cache_size, finalized when the
// connection closes), and the driver interrupts a running statement,
// rows included, when its context ends.
var cEngine = &Engine{
	name:    EngineC,
	driver:  cDriver,
	library: "SQLite 3.54.1 C library (github.com/mattn/go-sqlite3 v1.14.53, cgo, FTS5 by its tag sqlite_fts5)",
	query:   cQuery,
	dialector: func(dsn string) gorm.Dialector {
		return sqlite.New(sqlite.Config{DriverName: cDriver, DSN: dsn})
	},
	dialectorOn: func(db *sql.DB) gorm.Dialector {
		return sqlite.New(sqlite.Config{DriverName: cDriver, Conn: db})
	},
	selfInterrupt: true,
}

func init() {
	sql.Register(cDriver, cDriverOf(&sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		for _, f := range registeredFuncs() {
			if err := c.RegisterFunc(f.Name, cFunc(f), f.Deterministic); err != nil {
				return fmt.Errorf("sqlitex: registering %s on the C engine: %w", f.Name, err)
			}
		}
		return nil
	}}))
	register(cEngine, cCode)
}

// cDriverOf is mattn's driver that also takes the pure-Go engine's
// _pragma=NAME(VALUE) parameters, running them as PRAGMA statements, in
// order, on every new connection after mattn's own: a DSN written for
// either engine opens the same connection with both.
func cDriverOf(d *sqlite3.SQLiteDriver) driver.Driver { return pragmaDriver{d} }

type pragmaDriver struct{ d *sqlite3.SQLiteDriver }

// Open opens a connection of mattn's driver on dsn less its _pragma
// parameters, then runs them; it returns the first error of either.
func (p pragmaDriver) Open(dsn string) (driver.Conn, error) {
	dsn, pragmas, err := splitPragmas(dsn)
	if err != nil {
		return nil, err
	}
	c, err := p.d.Open(dsn)
	if err != nil || len(pragmas) == 0 {
		return c, err
	}
	sc := c.(*sqlite3.SQLiteConn)
	for _, pr := range pragmas {
		if _, err := sc.Exec("PRAGMA "+pr, nil); err != nil {
			_ = sc.Close()
			return nil, err
		}
	}
	return sc, nil
}

// splitPragmas removes the _pragma parameters from dsn and returns their
// values, unescaped, in order.
func splitPragmas(dsn string) (string, []string, error) {
	at := strings.IndexByte(dsn, '?')
	if at < 0 || !strings.Contains(dsn[at:], "_pragma=") {
		return dsn, nil, nil
	}
	var keep, pragmas []string
	for _, kv := range strings.Split(dsn[at+1:], "&") {
		v, ok := strings.CutPrefix(kv, "_pragma=")
		if !ok {
			keep = append(keep, kv)
			continue
		}
		u, err := url.QueryUnescape(v)
		if err != nil {
			return "", nil, fmt.Errorf("sqlitex: bad _pragma parameter %q: %w", v, err)
		}
		pragmas = append(pragmas, u)
	}
	out := dsn[:at]
	if len(keep) > 0 {
		out += "?" + strings.Join(keep, "&")
	}
	return out, pragmas, nil
}

// registeredFuncs returns the functions registered so far (the connect
// hook adds them to every new connection).
func registeredFuncs() []Func {
	funcMu.Lock()
	defer funcMu.Unlock()
	return append([]Func{}, funcs...)
}

// cArg turns mattn's NULL (a nil []byte) into nil, and ends TEXT at its
// first NUL as the pure-Go engine does (see Func).
func cArg(v any) any {
	switch a := v.(type) {
	case []byte:
		if a == nil {
			return nil
		}
	case string:
		if i := strings.IndexByte(a, 0); i >= 0 {
			return a[:i]
		}
	}
	return v
}

// cFunc adapts f to the typed Go function mattn's RegisterFunc takes.
func cFunc(f Func) any {
	switch f.NArg {
	case 1:
		return func(a any) (any, error) { return f.Fn([]any{cArg(a)}) }
	case 2:
		return func(a, b any) (any, error) { return f.Fn([]any{cArg(a), cArg(b)}) }
	default:
		return func(a, b, c any) (any, error) { return f.Fn([]any{cArg(a), cArg(b), cArg(c)}) }
	}
}

// cCode reads the result code of a mattn error, extended when it has one.
func cCode(err error) (int, bool) {
	var e sqlite3.Error
	if errors.As(err, &e) {
		if e.ExtendedCode != 0 {
			return int(e.ExtendedCode), true
		}
		return int(e.Code), true
	}
	var n sqlite3.ErrNo
	if errors.As(err, &n) {
		return int(n), true
	}
	var x sqlite3.ErrNoExtended
	if errors.As(err, &x) {
		return int(x), true
	}
	return 0, false
}

// cQuery renders c for mattn/go-sqlite3: its own parameters (_busy_timeout,
// _fk, _sync, _cache_size, _query_only, _writable_schema, _txlock,
// _stmt_cache_size), which it applies as PRAGMAs on every new connection.
func cQuery(c ConnConfig) []string {
	bt := c.BusyTimeout
	if bt < 0 {
		bt = 0
	}
	q := []string{"_busy_timeout=" + strconv.FormatInt(bt.Milliseconds(), 10)}
	if c.ForeignKeys {
		q = append(q, "_fk=1")
	} else {
		q = append(q, "_fk=0")
	}
	if c.Synchronous != "" {
		q = append(q, "_sync="+string(c.Synchronous))
	}
	if c.CacheSizeKiB > 0 {
		q = append(q, "_cache_size=-"+strconv.Itoa(c.CacheSizeKiB))
	}
	if c.QueryOnly {
		q = append(q, "_query_only=1")
	}
	if c.WritableSchema {
		q = append(q, "_writable_schema=1")
	}
	if c.Immediate {
		q = append(q, "_txlock=immediate")
	}
	n := c.StmtCache
	if n == 0 {
		n = DefaultStmtCache
	}
	if n > 0 {
		q = append(q, "_stmt_cache_size="+strconv.Itoa(n))
	}
	return q
}

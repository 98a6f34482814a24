package sqlitex

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strconv"

	gosqlite "github.com/glebarez/go-sqlite"
	"github.com/glebarez/sqlite"
	"gorm.io/gorm"
)

// GoEngine is the pure-Go engine: SQLite 3.54.1 compiled to Go
// (modernc.org/sqlite v1.62.0's lib package) under
// github.com/glebarez/go-sqlite (driver "sqlite") and
// github.com/glebarez/sqlite (GORM). It is in every build. Its driver
// compiles every statement on every call, so it keeps no statements; it
// interrupts a statement on its context only while preparing it or
// executing an Exec, hence WithInterrupt.
var GoEngine = &Engine{
	name:        EngineGo,
	driver:      "sqlite",
	library:     "SQLite 3.54.1 compiled to Go (modernc.org/sqlite v1.62.0 under github.com/glebarez/go-sqlite v1.23.0)",
	query:       goQuery,
	dialector:   func(dsn string) gorm.Dialector { return sqlite.Open(dsn) },
	dialectorOn: func(db *sql.DB) gorm.Dialector { return sqlite.Dialector{Conn: db} },
}

func init() {
	register(GoEngine, nil)
	onFunc(func(f Func) {
		fn := func(_ *gosqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			in := make([]any, len(args))
			for i, a := range args {
				in[i] = a
			}
			return f.Fn(in)
		}
		var err error
		if f.Deterministic {
			err = gosqlite.RegisterDeterministicScalarFunction(f.Name, int32(f.NArg), fn)
		} else {
			err = gosqlite.RegisterScalarFunction(f.Name, int32(f.NArg), fn)
		}
		if err != nil {
			panic(fmt.Sprintf("sqlitex: registering %s on the pure-Go engine: %v", f.Name, err))
		}
	})
}

// goQuery renders c for glebarez/go-sqlite: _pragma=NAME(VALUE) parameters,
// run in order on every new connection, and _txlock. It must never emit
// _time_format, which silently disables _txlock in that driver.
func goQuery(c ConnConfig) []string {
	bt := c.BusyTimeout
	if bt < 0 {
		bt = 0
	}
	p := func(v string) string { return "_pragma=" + escape(v) }
	q := []string{p("busy_timeout(" + strconv.FormatInt(bt.Milliseconds(), 10) + ")")}
	if c.ForeignKeys {
		q = append(q, p("foreign_keys(1)"))
	} else {
		q = append(q, p("foreign_keys(0)"))
	}
	if c.Synchronous != "" {
		q = append(q, p("synchronous("+string(c.Synchronous)+")"))
	}
	if c.CacheSizeKiB > 0 {
		q = append(q, p("cache_size(-"+strconv.Itoa(c.CacheSizeKiB)+")"))
	}
	if c.QueryOnly {
		q = append(q, p("query_only(1)"))
	}
	if c.WritableSchema {
		q = append(q, p("writable_schema(1)"))
	}
	if c.Immediate {
		q = append(q, "_txlock=immediate")
	}
	return q
}

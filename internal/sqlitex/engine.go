package sqlitex

import (
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
	"gorm.io/gorm/schema"
)

// Engine names, as Config.Engine, --engine and HERMES_STATE_ENGINE spell
// them.
const (
	// EngineGo is SQLite compiled to Go (modernc.org/sqlite under
	// github.com/glebarez/go-sqlite, database/sql driver "sqlite"): in
	// every build, no C compiler needed.
	EngineGo = "go"
	// EngineC is the C SQLite library of github.com/mattn/go-sqlite3
	// (through gorm.io/driver/sqlite, database/sql driver "sqlite3"),
	// compiled in only by a build with cgo and the tag sqlite_fts5 (or
	// fts5): see BuildC.
	EngineC = "c"
)

// EnvEngine is the environment variable that picks the engine when the
// configuration names none ("go" or "c").
const EnvEngine = "HERMES_STATE_ENGINE"

// BuildC is the command that builds hermes-state with the C engine.
const BuildC = "CGO_ENABLED=1 go install -tags sqlite_fts5 github.com/hermesstate/hermesstate/cmd/hermes-state@latest"

// ErrEngineNotBuilt is returned (wrapped) when the C engine is asked for in
// a build that does not have it.
var ErrEngineNotBuilt = errors.New("the C SQLite engine is not compiled into this build")

// ErrUnknownEngine is returned (wrapped) for an engine name that is neither
// "go" nor "c".
var ErrUnknownEngine = errors.New("unknown SQLite engine")

// Engine is one SQLite library behind database/sql and GORM: everything
// that differs between the engines (the driver, its DSN syntax, its error
// type, whether it interrupts a running statement when the context ends,
// how SQL functions are registered on its connections) is decided here.
// Engines are values made by this package; use Lookup or Resolve.
type Engine struct {
	name    string
	driver  string
	library string
	// query renders a ConnConfig's parameters in the driver's syntax.
	query func(c ConnConfig) []string
	// dialector opens GORM on a DSN of the engine; dialectorOn on a pool.
	dialector   func(dsn string) gorm.Dialector
	dialectorOn func(db *sql.DB) gorm.Dialector
	// selfInterrupt: the driver interrupts a running statement (the steps
	// of a query included) when its context ends, so WithInterrupt's own
	// watch is not needed.
	selfInterrupt bool
}

// Name returns "go" or "c".
func (e *Engine) Name() string { return e.name }

// DriverName returns the database/sql driver name of the engine.
func (e *Engine) DriverName() string { return e.driver }

// Library describes the SQLite library and Go packages of the engine.
func (e *Engine) Library() string { return e.library }

// String returns Name.
func (e *Engine) String() string { return e.name }

// InterruptsOnContext reports whether the driver itself interrupts a
// statement (sqlite3_interrupt) when the context of its query ends,
// including while rows are read; when false, use WithInterrupt.
func (e *Engine) InterruptsOnContext() bool { return e.selfInterrupt }

// DSN renders c as a DSN of this engine: the path followed by the
// engine's connection parameters (applied on every new connection).
func (e *Engine) DSN(c ConnConfig) string {
	return c.Path + "?" + strings.Join(e.query(c), "&")
}

// URI renders c as a file: URI of this engine (the absolute path,
// percent-escaped), with mode=ro and immutable=1 when c asks for them. It
// fails only when the working directory cannot be read to make the path
// absolute.
func (e *Engine) URI(c ConnConfig) (string, error) {
	base, err := fileURI(c.Path)
	if err != nil {
		return "", err
	}
	q := e.query(c)
	if c.ReadOnly {
		q = append(q, "mode=ro")
	}
	if c.Immutable {
		q = append(q, "immutable=1")
	}
	return base + "?" + strings.Join(q, "&"), nil
}

// Dialector returns the GORM dialector of this engine for dsn (made by DSN
// or URI).
func (e *Engine) Dialector(dsn string) gorm.Dialector { return e.dialector(dsn) }

// DialectorOn returns the GORM dialector of this engine on db, a pool
// opened with OpenDB.
func (e *Engine) DialectorOn(db *sql.DB) gorm.Dialector { return e.dialectorOn(db) }

// OpenDB opens a database/sql pool of this engine on dsn (made by DSN or
// URI). As sql.Open, it connects lazily: errors of the file show at the
// first statement.
func (e *Engine) OpenDB(dsn string) (*sql.DB, error) { return sql.Open(e.driver, dsn) }

// OpenEnv opens a database/sql pool on dsn with the engine Resolve("")
// picks (HERMES_STATE_ENGINE, else the build's default). A DSN in the
// pure-Go engine's syntax (_pragma=NAME(VALUE) parameters) works with
// both engines. For tools and tests that open a file beside a store of
// that engine: two SQLite libraries in one process do not see each
// other's locks on a file (https://sqlite.org/howtocorrupt.html, 2.2.1),
// so one process must use one engine on a file. It returns Resolve's
// error for a bad HERMES_STATE_ENGINE.
func OpenEnv(dsn string) (*sql.DB, error) {
	e, err := Resolve("")
	if err != nil {
		return nil, err
	}
	return e.OpenDB(dsn)
}

// OpenEnvConfig is OpenEnv on c rendered in the engine's own DSN syntax
// (so the C engine's connections keep their compiled statements, as the
// store's do).
func OpenEnvConfig(c ConnConfig) (*sql.DB, error) {
	e, err := Resolve("")
	if err != nil {
		return nil, err
	}
	return e.OpenDB(e.DSN(c))
}

var (
	engineMu sync.Mutex
	engines  = map[string]*Engine{}
	// codeOf holds the error-code readers of engines whose errors do not
	// have a Code() int method (the C engine's sqlite3.Error).
	codeOf []func(error) (int, bool)
)

func register(e *Engine, code func(error) (int, bool)) {
	engineMu.Lock()
	defer engineMu.Unlock()
	engines[e.name] = e
	if code != nil {
		codeOf = append(codeOf, code)
	}
}

// Lookup returns the engine called name ("go" or "c", any letter case).
// An empty name is the build's default (Default). It returns an error
// wrapping ErrEngineNotBuilt, naming the build command, for "c" in a
// build without the C engine, and ErrUnknownEngine for any other name.
func Lookup(name string) (*Engine, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return Default(), nil
	}
	engineMu.Lock()
	e := engines[n]
	engineMu.Unlock()
	if e != nil {
		return e, nil
	}
	if n == EngineC {
		return nil, fmt.Errorf("%w; build hermes-state with cgo and the tag sqlite_fts5 (a C compiler is needed): %s", ErrEngineNotBuilt, BuildC)
	}
	return nil, fmt.Errorf("%w %q (go or c)", ErrUnknownEngine, name)
}

// Resolve returns the engine name asks for; an empty name is the one
// HERMES_STATE_ENGINE names, and when that is unset too, the build's
// default. Its errors are those of Lookup (an invalid HERMES_STATE_ENGINE
// says so).
func Resolve(name string) (*Engine, error) {
	if strings.TrimSpace(name) != "" {
		return Lookup(name)
	}
	env := os.Getenv(EnvEngine)
	if strings.TrimSpace(env) == "" {
		return Default(), nil
	}
	e, err := Lookup(env)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", EnvEngine, env, err)
	}
	return e, nil
}

// Default returns the engine of a configuration that names none: the C
// engine when it is compiled in (a build that asked for it by its tag
// wants it), else the pure-Go one.
func Default() *Engine {
	engineMu.Lock()
	defer engineMu.Unlock()
	if e := engines[EngineC]; e != nil {
		return e
	}
	return engines[EngineGo]
}

// Engines returns the engines compiled into this build, the pure-Go one
// first.
func Engines() []*Engine {
	engineMu.Lock()
	defer engineMu.Unlock()
	out := []*Engine{engines[EngineGo]}
	if e := engines[EngineC]; e != nil {
		out = append(out, e)
	}
	return out
}

// Func is a SQL scalar function registered on every connection of every
// engine (RegisterFunc).
type Func struct {
	Name string
	// NArg is the number of arguments (1 to 3).
	NArg int
	// Deterministic: the same arguments always give the same result.
	Deterministic bool
	// Fn computes the result from the arguments: nil (NULL), int64,
	// float64, string or []byte each (a TEXT argument ends at its first
	// NUL on every engine, as the pure-Go driver reads it and as SQLite's
	// own length() counts); it returns nil for NULL, or an int64, float64,
	// string or []byte. An error fails the statement.
	Fn func(args []any) (any, error)
}

var (
	funcMu sync.Mutex
	funcs  []Func
	// funcHooks register a new Func with every engine that registers
	// functions once per process (the pure-Go one).
	funcHooks []func(Func)
)

// RegisterFunc makes f available to SQL on every connection of every
// engine opened afterwards. Call it from an init function. It panics when
// f has no name or an arity outside 1..3, or when the pure-Go engine
// refuses the registration (a name taken twice).
func RegisterFunc(f Func) {
	if f.Name == "" || f.NArg < 1 || f.NArg > 3 || f.Fn == nil {
		panic(fmt.Sprintf("sqlitex.RegisterFunc: bad function %q/%d", f.Name, f.NArg))
	}
	funcMu.Lock()
	funcs = append(funcs, f)
	hooks := append([]func(Func){}, funcHooks...)
	funcMu.Unlock()
	for _, h := range hooks {
		h(f)
	}
}

// onFunc calls h for every function registered so far and every one
// registered later.
func onFunc(h func(Func)) {
	funcMu.Lock()
	fs := append([]Func{}, funcs...)
	funcHooks = append(funcHooks, h)
	funcMu.Unlock()
	for _, f := range fs {
		h(f)
	}
}

// escape percent-escapes a DSN parameter value.
func escape(v string) string { return url.QueryEscape(v) }

// DefaultStmtCache is the number of compiled statements a connection of
// the C engine keeps (least recently used dropped first): the store's hot
// statements (append and its counter update, listing pages, replay,
// search routes, the checkpoint) with room for the rest.
const DefaultStmtCache = 64

// EnvDialector is the GORM dialector on dsn of the engine Resolve("")
// picks, for tests and tools that open a file beside a store (see
// OpenEnv). When HERMES_STATE_ENGINE names no engine of this build, the
// dialector fails gorm.Open with Resolve's error.
func EnvDialector(dsn string) gorm.Dialector {
	e, err := Resolve("")
	if err != nil {
		return failDialector{err}
	}
	return e.Dialector(dsn)
}

// failDialector is a gorm.Dialector whose Initialize fails with err.
type failDialector struct{ err error }

func (f failDialector) Name() string                                   { return "sqlite" }
func (f failDialector) Initialize(*gorm.DB) error                      { return f.err }
func (f failDialector) Migrator(*gorm.DB) gorm.Migrator                { return nil }
func (f failDialector) DataTypeOf(*schema.Field) string                { return "" }
func (f failDialector) DefaultValueOf(*schema.Field) clause.Expression { return nil }
func (f failDialector) BindVarTo(clause.Writer, *gorm.Statement, any)  {}
func (f failDialector) QuoteTo(clause.Writer, string)                  {}
func (f failDialector) Explain(sql string, _ ...any) string            { return sql }

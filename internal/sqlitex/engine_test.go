package sqlitex

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sqlite3 "modernc.org/sqlite/lib"
)

// cBuilt reports whether this test binary has the C engine.
func cBuilt() bool { return len(Engines()) == 2 }

// TestLookupEngines: "go" is in every build; "c" is there exactly when the
// build has cgo and the tag, and otherwise the error says how to build it;
// other names are refused. The default is c where it is compiled in.
func TestLookupEngines(t *testing.T) {
	g, err := Lookup(" GO ")
	require.NoError(t, err)
	require.Same(t, GoEngine, g)
	require.Equal(t, "sqlite", g.DriverName())

	c, err := Lookup("c")
	if cBuilt() {
		require.NoError(t, err)
		require.Equal(t, EngineC, c.Name())
		require.Same(t, c, Default())
		require.True(t, c.InterruptsOnContext())
	} else {
		require.ErrorIs(t, err, ErrEngineNotBuilt)
		require.Contains(t, err.Error(), "-tags sqlite_fts5")
		require.Contains(t, err.Error(), BuildC)
		require.Same(t, GoEngine, Default())
		require.Equal(t, []*Engine{GoEngine}, Engines())
	}
	require.False(t, GoEngine.InterruptsOnContext())

	_, err = Lookup("cgo")
	require.ErrorIs(t, err, ErrUnknownEngine)
	require.Contains(t, err.Error(), `"cgo"`)
}

// TestResolveEnv: an empty name is HERMES_STATE_ENGINE's, and a bad value
// of it is an error that names the variable (never a silent default).
func TestResolveEnv(t *testing.T) {
	t.Setenv(EnvEngine, "go")
	e, err := Resolve("")
	require.NoError(t, err)
	require.Same(t, GoEngine, e)
	if cBuilt() {
		e, err = Resolve("c") // the name given wins over the variable
		require.NoError(t, err)
		require.Equal(t, EngineC, e.Name())
	}
	t.Setenv(EnvEngine, "sqlite")
	_, err = Resolve("")
	require.ErrorIs(t, err, ErrUnknownEngine)
	require.Contains(t, err.Error(), EnvEngine+"=sqlite")
	_, err = OpenEnv(":memory:")
	require.ErrorIs(t, err, ErrUnknownEngine)
	t.Setenv(EnvEngine, "")
	e, err = Resolve("")
	require.NoError(t, err)
	require.Same(t, Default(), e)
}

// TestEnginesSameSQLite: every engine compiled in runs the SQLite this
// module requires (the preview function counts characters as 3.54 does),
// and passes the WAL-reset check.
func TestEnginesSameSQLite(t *testing.T) {
	for _, e := range Engines() {
		db, err := e.OpenDB(":memory:")
		require.NoError(t, err)
		var v string
		require.NoError(t, db.QueryRow("SELECT sqlite_version()").Scan(&v))
		require.NoError(t, db.Close())
		require.Equal(t, sqlite3.SQLITE_VERSION, v, e.Name())
		require.NoError(t, CheckWAL(v), e.Name())
	}
}

// TestEngineDSNApplied: the settings of a ConnConfig reach the connection
// on every engine, in its own DSN syntax and as a URI; the pure-Go syntax
// (_pragma=...) works on every engine too.
func TestEngineDSNApplied(t *testing.T) {
	dir := t.TempDir()
	for _, e := range Engines() {
		path := filepath.Join(dir, e.Name()+".db")
		cfg := ConnConfig{Path: path, BusyTimeout: 1234 * time.Millisecond, Synchronous: SyncFull, ForeignKeys: true, CacheSizeKiB: 3000}
		for _, dsn := range []string{e.DSN(cfg), path + "?_pragma=busy_timeout(1234)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_pragma=cache_size(-3000)"} {
			db, err := e.OpenDB(dsn)
			require.NoError(t, err)
			var bt, fk, syn, cache int
			require.NoError(t, db.QueryRow("PRAGMA busy_timeout").Scan(&bt), dsn)
			require.NoError(t, db.QueryRow("PRAGMA foreign_keys").Scan(&fk))
			require.NoError(t, db.QueryRow("PRAGMA synchronous").Scan(&syn))
			require.NoError(t, db.QueryRow("PRAGMA cache_size").Scan(&cache))
			require.NoError(t, db.Close())
			require.Equal(t, []int{1234, 1, 2, -3000}, []int{bt, fk, syn, cache}, "%s: %s", e.Name(), dsn)
		}
		// query_only and a read-only URI refuse writes.
		db, err := e.OpenDB(e.DSN(ConnConfig{Path: path, QueryOnly: true}))
		require.NoError(t, err)
		_, err = db.Exec("CREATE TABLE t(x)")
		require.Error(t, err, e.Name())
		code, ok := Code(err)
		require.True(t, ok, "%s: %v", e.Name(), err)
		require.Equal(t, codeReadOnly, code&0xff, e.Name())
		require.NoError(t, db.Close())
		uri, err := e.URI(ConnConfig{Path: path, ReadOnly: true})
		require.NoError(t, err)
		db, err = e.OpenDB(uri)
		require.NoError(t, err)
		_, err = db.Exec("CREATE TABLE t(x)")
		require.Error(t, err, e.Name())
		require.NoError(t, db.Close())
		// Immediate: BEGIN takes the write lock at once.
		w, err := e.OpenDB(e.DSN(ConnConfig{Path: path, Immediate: true}))
		require.NoError(t, err)
		tx, err := w.Begin()
		require.NoError(t, err)
		other, err := e.OpenDB(e.DSN(ConnConfig{Path: path}))
		require.NoError(t, err)
		_, err = other.Exec("BEGIN IMMEDIATE")
		require.True(t, IsLock(err), "%s: a second writer got the lock: %v", e.Name(), err)
		require.NoError(t, tx.Rollback())
		require.NoError(t, other.Close())
		require.NoError(t, w.Close())
	}
}

// TestEngineErrorCodes: every engine's errors give their SQLite result
// code (extended codes included) to Code, IsLock and the constraint check.
func TestEngineErrorCodes(t *testing.T) {
	for _, e := range Engines() {
		db, err := e.OpenDB(":memory:")
		require.NoError(t, err)
		db.SetMaxOpenConns(1)
		_, err = db.Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT UNIQUE)")
		require.NoError(t, err)
		_, err = db.Exec("INSERT INTO t(v) VALUES ('a')")
		require.NoError(t, err)
		_, err = db.Exec("INSERT INTO t(v) VALUES ('a')")
		c, ok := Code(err)
		require.True(t, ok, "%s: %v", e.Name(), err)
		require.Equal(t, 2067, c, "%s: SQLITE_CONSTRAINT_UNIQUE", e.Name())
		_, err = db.Exec("SELECT * FROM nowhere")
		c, ok = Code(err)
		require.True(t, ok, e.Name())
		require.Equal(t, 1, c&0xff, e.Name())
		require.NoError(t, db.Close())
	}
}

// TestEngineFuncs: a function of RegisterFunc is on every connection of
// every engine, sees NULL as nil, and its NULL result is NULL.
func TestEngineFuncs(t *testing.T) {
	for _, e := range Engines() {
		db, err := e.OpenDB(":memory:")
		require.NoError(t, err)
		var got []any
		rows, err := db.Query("SELECT hermesstate_test_kind(NULL), hermesstate_test_kind(''), hermesstate_test_kind(1), hermesstate_test_kind(2.5), hermesstate_test_kind(x'00'), hermesstate_test_kind('nil') IS NULL, hermesstate_test_kind(CAST(x'61006263' AS TEXT))")
		require.NoError(t, err)
		require.True(t, rows.Next())
		vals := make([]any, 7)
		ptrs := make([]any, 7)
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		require.NoError(t, rows.Close())
		for _, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			got = append(got, v)
		}
		require.Equal(t, []any{"nil", "string:", "int64", "float64", "bytes", int64(1), "string:a"}, got, e.Name())
		require.NoError(t, db.Close())
	}
}

func init() {
	RegisterFunc(Func{Name: "hermesstate_test_kind", NArg: 1, Deterministic: true, Fn: func(args []any) (any, error) {
		switch v := args[0].(type) {
		case nil:
			return "nil", nil
		case string:
			if v == "nil" {
				return nil, nil
			}
			return "string:" + v, nil
		case int64:
			return "int64", nil
		case float64:
			return "float64", nil
		case []byte:
			return "bytes", nil
		}
		return nil, errors.New("unexpected type")
	}})
}

// TestEngineInterruptsLongQuery: a query whose rows are being read stops
// soon after its context ends, on every engine: the C driver by itself,
// the pure-Go one through WithInterrupt.
func TestEngineInterruptsLongQuery(t *testing.T) {
	for _, e := range Engines() {
		db, err := e.OpenDB(":memory:")
		require.NoError(t, err)
		conn, err := db.Conn(context.Background())
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		run := func() error {
			rows, err := conn.QueryContext(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c")
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
			}
			return rows.Err()
		}
		if e.InterruptsOnContext() {
			err = run()
		} else {
			err = WithInterrupt(ctx, conn, run)
		}
		cancel()
		took := time.Since(start)
		require.Error(t, err, e.Name())
		require.True(t, errors.Is(err, context.DeadlineExceeded) || IsInterrupt(err), "%s: %v", e.Name(), err)
		require.Less(t, took, 3*time.Second, e.Name())
		require.NoError(t, conn.Close())
		require.NoError(t, db.Close())
	}
}

// TestEngineDSNNoTimeFormat: no engine's DSN carries _time_format, which
// disables _txlock in the pure-Go driver.
func TestEngineDSNNoTimeFormat(t *testing.T) {
	for _, e := range Engines() {
		d := e.DSN(ConnConfig{Path: "/x/state.db", Immediate: true})
		require.NotContains(t, d, "_time_format", e.Name())
		require.True(t, strings.Contains(d, "_txlock=immediate"), e.Name())
	}
}

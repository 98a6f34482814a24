package sqlitex

import (
	"context"
	"database/sql"
	"reflect"
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// WithInterrupt runs fn, which uses conn (a connection of the
// github.com/glebarez/go-sqlite driver), and interrupts the statement
// running on conn (sqlite3_interrupt) as soon as ctx is done. The driver
// interrupts only while a statement is being prepared or executed for Exec;
// the steps of a query happen in rows.Next, which it never interrupts, so a
// long SELECT otherwise runs to its end after the context ended. The
// interrupted statement fails with SQLITE_INTERRUPT, returned as the
// context's error (context.Canceled or context.DeadlineExceeded).
//
// The interrupt never reaches a later user of the connection: it is only
// raised while fn runs, and a flag raised just before fn returned is
// cleared by SQLite when the next statement starts. When the driver
// connection is not the expected one, fn runs without this watch. It
// returns fn's error.
func WithInterrupt(ctx context.Context, conn *sql.Conn, fn func() error) error {
	if ctx.Done() == nil {
		return fn()
	}
	var handle uintptr
	_ = conn.Raw(func(dc any) error {
		handle = dbHandle(dc)
		return nil
	})
	if handle == 0 {
		return fn()
	}
	var mu sync.Mutex
	active := true
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if active {
			interrupt(handle)
		}
	})
	err := fn()
	if !stop() {
		// The watch ran or is running: wait for it before the connection
		// goes back to the pool.
		mu.Lock()
		active = false
		mu.Unlock()
	}
	if err != nil && ctx.Err() != nil && IsInterrupt(err) {
		return ctx.Err()
	}
	return err
}

// dbHandle returns the sqlite3* of a glebarez/go-sqlite driver connection
// (its unexported field db), or 0 when dc is not one.
func dbHandle(dc any) uintptr {
	v := reflect.ValueOf(dc)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return 0
	}
	v = v.Elem()
	if v.Kind() != reflect.Struct {
		return 0
	}
	f := v.FieldByName("db")
	if !f.IsValid() || f.Kind() != reflect.Uintptr {
		return 0
	}
	return uintptr(f.Uint())
}

// interrupt calls sqlite3_interrupt, which only sets a flag the running
// statement checks and is safe from any thread.
func interrupt(handle uintptr) {
	tls := libc.NewTLS()
	sqlite3.Xsqlite3_interrupt(tls, handle)
	tls.Close()
}

package hermesstate_test

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest/storetest"
)

// storeSQL opens a plain database/sql handle on the database behind st
// (the SQLite file, or the PostgreSQL schema), so a test can plant rows the
// API would never write (NULL counters, legacy values) and read columns
// back exactly as stored.
func storeSQL(t *testing.T, st *hs.Store) *sql.DB {
	t.Helper()
	if st.Driver() == hs.DriverPostgres {
		db, err := sql.Open("pgx", storetest.PostgresDSN(t, st))
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	return fixturetest.Raw(t, st.Path())
}

// rebind turns ? placeholders into $n for PostgreSQL.
func rebind(st *hs.Store, q string) string {
	if st.Driver() != hs.DriverPostgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// execSQL runs one statement on st's database outside hermesstate.
func execSQL(t *testing.T, st *hs.Store, q string, args ...any) {
	t.Helper()
	_, err := storeSQL(t, st).Exec(rebind(st, q), args...)
	require.NoError(t, err, q)
}

// queryRow scans one row of q into dst.
func queryRow(t *testing.T, st *hs.Store, q string, args []any, dst ...any) {
	t.Helper()
	require.NoError(t, storeSQL(t, st).QueryRow(rebind(st, q), args...).Scan(dst...), q)
}

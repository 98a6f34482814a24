package hermesstatetest

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/repo"
)

// SQL opens a plain database/sql handle on the database behind st (the
// SQLite file, or the PostgreSQL schema), so a test can plant rows the API
// would never write (NULL counters, legacy values) and read columns back
// exactly as stored. It is closed when t ends.
func SQL(t testing.TB, st *hs.Store) *sql.DB {
	t.Helper()
	if st.Driver() == hs.DriverPostgres {
		db, err := sql.Open("pgx", PostgresDSN(t, st))
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	return fixturetest.Raw(t, st.Path())
}

// PostgresDSN is the test server's DSN with st's schema as search_path.
func PostgresDSN(t testing.TB, st *hs.Store) string {
	t.Helper()
	dsn := pgtest.DSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + st.Schema()
}

// Rebind turns ? placeholders into $n for PostgreSQL.
func Rebind(st *hs.Store, q string) string {
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

// Exec runs one statement on st's database outside hermesstate.
func Exec(t testing.TB, st *hs.Store, q string, args ...any) {
	t.Helper()
	_, err := SQL(t, st).Exec(Rebind(st, q), args...)
	require.NoError(t, err, q)
}

// QueryRow scans one row of q into dst.
func QueryRow(t testing.TB, st *hs.Store, q string, args []any, dst ...any) {
	t.Helper()
	require.NoError(t, SQL(t, st).QueryRow(Rebind(st, q), args...).Scan(dst...), q)
}

// AppendAll appends ms to session sid in one batch and returns their ids.
func AppendAll(t testing.TB, st *hs.Store, sid string, ms ...repo.MessageInput) []int64 {
	t.Helper()
	ids, err := st.Messages().AppendBatch(fixturetest.Ctx(t), sid, ms)
	require.NoError(t, err)
	return ids
}

// FixtureStore is Fixture without the path.
func FixtureStore(t testing.TB, f *fixturetest.Fixture) *hs.Store {
	t.Helper()
	st, _ := Fixture(t, f)
	return st
}

// IDs runs q (one integer column) on db and returns its values in row
// order (an empty, non-nil slice when there are none).
func IDs(t testing.TB, db *sql.DB, q string, args ...any) []int64 {
	t.Helper()
	rows, err := db.Query(q, args...)
	require.NoError(t, err)
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		require.NoError(t, rows.Scan(&id))
		out = append(out, id)
	}
	require.NoError(t, rows.Err())
	return out
}

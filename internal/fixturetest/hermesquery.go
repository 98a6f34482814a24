package fixturetest

import (
	"testing"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// HermesRefused reports whether FTS5 refuses, as a MATCH expression, the
// query the Hermes version of schema v made of query (fts.SanitizeVersion;
// v1 passed it as typed): that Hermes answered it with no hits without
// searching, where hermesstate searches fts.Repair's form of it (issue 28,
// item 6), so a search answer with hits is the better answer, not a
// difference.
func HermesRefused(t testing.TB, v int, query string) bool {
	t.Helper()
	q, _ := fts.SanitizeVersion(query, v)
	if q == "" {
		return false
	}
	db, err := sqlitex.OpenEnv(":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE VIRTUAL TABLE probe USING fts5(content)"); err != nil {
		t.Fatal(err)
	}
	var n int
	return db.QueryRow("SELECT count(*) FROM probe WHERE probe MATCH ?", q).Scan(&n) != nil
}

package fts_test

import (
	"database/sql"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/querytext"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

func TestSanitize(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"docker", "docker"},
		{"c++", "c"},
		{"TODO: fix", "TODO  fix"},
		{"1 OR 1=1", "1 OR 1 1"},
		{"-", "-"},
		{"\x00", "\x00"},
		{"NEAR(", "NEAR"},
		{"{x}^", "x"},
		{"((()", ""},
		{"***deploy", "deploy"},
		{"*", ""},
		{"deploy*", "deploy*"},
		{"a **b", "a b"},
		{"hello AND", "hello"},
		{"AND", ""},
		{"OR world", "world"},
		{"and or", "or"},
		{"ANDROID", "ANDROID"},
		{"x ORACLE", "x ORACLE"},
		{`"unbalanced`, "unbalanced"},
		{`"" OR ""`, `"" OR ""`},
		{`"docker image"`, `"docker image"`},
		{`"a-b" c-d`, `"a-b" "c-d"`},
		{"chat-send", `"chat-send"`},
		{"my-app.config.ts", `"my-app.config.ts"`},
		{"P2.2", `"P2.2"`},
		{"execute_code", `"execute_code"`},
		{"_private", "_private"},
		{"trailing_", "trailing_"},
		{"a__b", `"a__b"`},
		{"a._b", `"a._b"`},
		{"end.", "end."},
		{"a-b-", `"a-b"-`},
		{"修改-配置", `"修改-配置"`},
		{"'; DROP TABLE messages; --", "DROP TABLE messages  --"},
		{"content:secret", "content secret"},
		{"100%", "100"},
		{"桂林 100%", "桂林 100%"},
		{"x\u3000AND", "x"},
		{"a\x1cOR", "a"},
	} {
		if got := fts.Sanitize(c.in); got != c.want {
			t.Errorf("fts.Sanitize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	long := strings.Repeat("a", 3000)
	if got := fts.Sanitize(long); utf8.RuneCountInString(got) != fts.MaxQueryChars {
		t.Errorf("cap: got %d chars", utf8.RuneCountInString(got))
	}
	if got := fts.Sanitize(strings.Repeat("桂", 3000)); utf8.RuneCountInString(got) != fts.MaxQueryChars {
		t.Errorf("cap counts code points: got %d chars", utf8.RuneCountInString(got))
	}
}

var (
	probeOnce sync.Once
	probeDB   *sql.DB
	probeErr  error
)

// probe is an in-memory FTS5 table to parse MATCH expressions with.
func probe(t testing.TB) *sql.DB {
	probeOnce.Do(func() {
		probeDB, probeErr = sqlitex.OpenEnv(":memory:")
		if probeErr != nil {
			return
		}
		probeDB.SetMaxOpenConns(1)
		_, probeErr = probeDB.Exec("CREATE VIRTUAL TABLE p USING fts5(content); INSERT INTO p VALUES ('docker image deploy 桂林')")
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return probeDB
}

// parses reports the error SQLite gives for MATCH q (nil when it parses).
func parses(t testing.TB, q string) error {
	var n int
	return probe(t).QueryRow("SELECT count(*) FROM p WHERE p MATCH ?", q).Scan(&n)
}

// Prepare-level invariants, for any input: the sanitizer never panics,
// returns valid UTF-8 of at most fts.MaxQueryChars code points, and its output
// either parses as an FTS5 query or is one of the shapes Hermes' sanitizer
// lets through that FTS5 rejects (a lone operator character such as '-',
// '.', '*' after a word, or a NUL), which search answers with no results
// (as Hermes does), never with an error. The fuzz also checks the
// quoted-token form used by the trigram and CJK routes always parses.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"docker", "c++", "TODO: fix", `"unbalanced`, "hello AND", "AND", "OR world", "*",
		"***deploy", "NEAR(", "((()", "-", `"" OR ""`, "'; DROP TABLE messages; --", "1 OR 1=1", "content:secret",
		"{x}^", "\x00", strings.Repeat("a", 3000), "广西 OR 桂林", "修改youer服务端", "my-app.config.ts", "deploy*",
		"a NOT b", `"a" NEAR "b"`, "x - y", "a.", "\xff\xfe", "桂林 100%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s := fts.Sanitize(in)
		if !utf8.ValidString(s) {
			t.Fatalf("invalid UTF-8 from %q", in)
		}
		if utf8.RuneCountInString(s) > fts.MaxQueryChars {
			t.Fatalf("too long: %d", utf8.RuneCountInString(s))
		}
		if s == "" {
			return
		}
		if err := parses(t, s); err != nil {
			// SQLITE_ERROR is the query-error class Hermes swallows into
			// no results; anything else (corruption, misuse, crash) fails.
			if c, ok := sqlitex.Code(err); !ok || c&0xff != 1 {
				t.Fatalf("fts.Sanitize(%q) = %q: unexpected error class %v", in, s, err)
			}
		}
		if q := ftsql.QuoteTokens(ftsql.StripQuotes(s)); q != "" && !strings.ContainsRune(q, 0) {
			if err := parses(t, q); err != nil && !onlyOperators(ftsql.StripQuotes(s)) {
				t.Fatalf("ftsql.QuoteTokens(%q) = %q does not parse: %v", s, q, err)
			}
		}
	})
}

func onlyOperators(s string) bool {
	return len(ftsql.NonOperatorTokens(s)) == 0 || strings.HasPrefix(strings.ToUpper(querytext.Strip(s)), "AND") ||
		strings.HasPrefix(strings.ToUpper(querytext.Strip(s)), "OR") || strings.HasPrefix(strings.ToUpper(querytext.Strip(s)), "NOT") ||
		dangling(s)
}

func dangling(s string) bool {
	toks := querytext.Fields(s)
	if len(toks) == 0 {
		return true
	}
	for i, tk := range toks {
		if querytext.IsOperator(tk) && (i == len(toks)-1 || querytext.IsOperator(toks[i+1])) {
			return true
		}
	}
	return false
}

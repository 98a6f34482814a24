package fts_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/errs"
)

// TestRepair (issue 28, item 6): the queries whose Hermes sanitization
// FTS5 refuses become phrases of their tokens, which parse and find the
// text they name; the ones Hermes sanitizes into valid FTS5 are not its
// business (search repairs only what FTS5 refused).
func TestRepair(t *testing.T) {
	db := probe(t)
	if _, err := db.Exec(`INSERT INTO p VALUES ('use kubernetes e.g. helm'), ('node.js is fine'), ('pass --flag=value on'),
		('edit $HOME/.config now'), ('the U.S.A. team')`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want, finds string }{
		{"kubernetes e.g.", `kubernetes "e.g."`, "use kubernetes e.g. helm"},
		{"node.js.", `"node.js."`, "node.js is fine"},
		{"U.S.A.", `"U.S.A."`, "the U.S.A. team"},
		{"--flag=value", `"--flag=value"`, "pass --flag=value on"},
		{"$HOME/.config", `"$HOME/.config"`, "edit $HOME/.config now"},
		{"node.js*", `"node.js"*`, "node.js is fine"},
		{`"e.g". helm`, `"e.g" helm`, "use kubernetes e.g. helm"},
		{"AND node.js. OR", `"node.js."`, "node.js is fine"},
		{"helm AND OR e.g.", `helm OR "e.g."`, "use kubernetes e.g. helm"},
		{"OR* fine", `"OR"* fine`, ""},
		{"-", "", ""},
		{`"*"`, "", ""},
		{"\x00", "", ""},
	} {
		got := fts.Repair(c.in)
		if got != c.want {
			t.Errorf("fts.Repair(%q) = %q, want %q", c.in, got, c.want)
			continue
		}
		if got == "" {
			if fts.HasTerm(fts.Sanitize(c.in)) {
				t.Errorf("fts.Repair(%q) is empty, but its sanitized form %q has a term", c.in, fts.Sanitize(c.in))
			}
			continue
		}
		if err := parses(t, got); err != nil {
			t.Errorf("fts.Repair(%q) = %q does not parse: %v", c.in, got, err)
		}
		if c.finds == "" {
			continue
		}
		var content string
		if err := db.QueryRow("SELECT content FROM p WHERE p MATCH ? LIMIT 1", got).Scan(&content); err != nil || content != c.finds {
			t.Errorf("fts.Repair(%q) = %q found %q (%v), want %q", c.in, got, content, err, c.finds)
		}
	}
}

// TestNothingToSearch: the typed error names the query and why.
func TestNothingToSearch(t *testing.T) {
	for q, why := range map[string]string{"*": "only search operators", "AND": "only search operators", `"" OR ""`: "only search operators",
		"-": "no letter or digit", "🚀": "no letter or digit"} {
		err := fts.NothingToSearch("search", q)
		if !errors.Is(err, fts.ErrNothingToSearch) || !errors.Is(err, errs.ErrInvalid) {
			t.Errorf("%q: %v is not ErrNothingToSearch and ErrInvalid", q, err)
		}
		if !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "cannot be searched") {
			t.Errorf("%q: %v does not say %q", q, err, why)
		}
		if fts.HasTerm(fts.Sanitize(q)) {
			t.Errorf("HasTerm(Sanitize(%q)) is true", q)
		}
	}
	for _, q := range []string{"docker", "node.js.", "NEAR(a b)", "c++", "e.g.", "x AND y"} {
		if !fts.HasTerm(fts.Sanitize(q)) {
			t.Errorf("HasTerm(Sanitize(%q)) is false", q)
		}
	}
}

// FuzzRepair: for any input, Repair returns valid UTF-8 within the cap
// that FTS5 parses, or "" exactly when the sanitized query has no term
// either (so search never answers "no hits" for something it did not
// search, nor fails with a syntax error of its own making).
func FuzzRepair(f *testing.F) {
	for _, s := range []string{"node.js.", "--flag=value", "$HOME/.config", `"" OR* 00`, "kubernetes e.g.", "a NOT", "NOT NOT x",
		"x OR OR y", `"a`, `a"b"c`, "*a*", "-x-", "NEAR(a b)", "桂林.", "\x00a", "a\x00b", strings.Repeat("a.", 1500)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := fts.Repair(in)
		if !utf8.ValidString(r) {
			t.Fatalf("invalid UTF-8 from %q", in)
		}
		if r == "" {
			return
		}
		if err := parses(t, r); err != nil {
			t.Fatalf("fts.Repair(%q) = %q does not parse: %v", in, r, err)
		}
	})
}

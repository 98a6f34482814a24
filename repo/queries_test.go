package repo

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestQueries checks queries/*.sql against their call sites: every call of
// query names a file that exists and passes exactly the placeholders the
// file has, and every file is used.
func TestQueries(t *testing.T) {
	placeholder := regexp.MustCompile(`\{\{(\w+)\}\}`)
	call := regexp.MustCompile(`query\("(\w+)"((?:,\s*"\w+",\s*[^,()]+(?:\([^()]*\))?)*)\)`)
	key := regexp.MustCompile(`,\s*"(\w+)",\s*`)
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "queries.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(b), -1) {
			name := m[1]
			used[name] = true
			q, ok := queries[name]
			if !ok {
				t.Errorf("%s: query(%q): no queries/%s.sql", f, name, name)
				continue
			}
			var want, got []string
			for _, p := range placeholder.FindAllStringSubmatch(q, -1) {
				if !contains(want, p[1]) {
					want = append(want, p[1])
				}
			}
			for _, k := range key.FindAllStringSubmatch(m[2], -1) {
				got = append(got, k[1])
			}
			sort.Strings(want)
			sort.Strings(got)
			if strings.Join(want, ",") != strings.Join(got, ",") {
				t.Errorf("%s: query(%q) fills %v, the file has %v", f, name, got, want)
			}
		}
	}
	if len(queries) == 0 {
		t.Fatal("no queries embedded")
	}
	for name, q := range queries {
		if !used[name] {
			t.Errorf("queries/%s.sql is not used", name)
		}
		if strings.HasPrefix(q, "--") || q == "" {
			t.Errorf("queries/%s.sql: empty or heading left in", name)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestQueryRender(t *testing.T) {
	parts := splitQueries(map[string]string{"q": "A {{x}} B {{y}}{{x}} C", "plain": "SELECT 1"})
	saved := queryParts
	queryParts = parts
	defer func() { queryParts = saved }()
	if got := query("q", "x", "1", "y", "22"); got != "A 1 B 221 C" {
		t.Errorf("query = %q", got)
	}
	if got := query("q", "x", "1"); got != "A 1 B {{y}}1 C" {
		t.Errorf("a placeholder without a value stays: %q", got)
	}
	if got := query("plain"); got != "SELECT 1" {
		t.Errorf("plain = %q", got)
	}
	if got := query("nope"); got != "" {
		t.Errorf("unknown = %q", got)
	}
}

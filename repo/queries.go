package repo

import (
	"embed"
	"path"
	"strings"
)

// Long fixed statements live in queries/NAME.sql, one statement a file,
// headed by a comment saying what it selects and what it binds. A
// statement's dialect fragments and bounds are named placeholders
// ({{edge}}, {{max_depth}}, ...) that query fills in; values are bound with
// ? as usual. Statements built from parts at run time (the listing, search
// routes) stay in Go beside their builders.

//go:embed queries/*.sql
var queryFiles embed.FS

// queries maps NAME to the statement of queries/NAME.sql, its heading
// comment removed.
var queries = loadQueries()

func loadQueries() map[string]string {
	out := map[string]string{}
	entries, _ := queryFiles.ReadDir("queries")
	for _, e := range entries {
		b, err := queryFiles.ReadFile(path.Join("queries", e.Name()))
		if err != nil {
			continue
		}
		lines := strings.Split(string(b), "\n")
		for len(lines) > 0 && strings.HasPrefix(lines[0], "--") {
			lines = lines[1:]
		}
		out[strings.TrimSuffix(e.Name(), ".sql")] = strings.TrimSpace(strings.Join(lines, "\n"))
	}
	return out
}

// query returns the statement of queries/NAME.sql with each {{key}}
// replaced by its value (kv: key, value, key, value, ...). An unknown name
// gives "", which the database refuses (TestQueries checks every call).
func query(name string, kv ...string) string {
	q := queries[name]
	if len(kv) == 0 {
		return q
	}
	pairs := make([]string, len(kv))
	for i := 0; i+1 < len(kv); i += 2 {
		pairs[i], pairs[i+1] = "{{"+kv[i]+"}}", kv[i+1]
	}
	return strings.NewReplacer(pairs...).Replace(q)
}

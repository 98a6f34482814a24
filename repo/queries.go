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

// queryParts maps NAME to its statement cut at the placeholders: literal
// text, placeholder name, literal text, ... (an odd count), so that query
// fills it in by appending (the listing renders its statements per call).
var queryParts = splitQueries(queries)

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

func splitQueries(qs map[string]string) map[string][]string {
	out := make(map[string][]string, len(qs))
	for name, q := range qs {
		var parts []string
		for {
			i := strings.Index(q, "{{")
			j := strings.Index(q[max(i, 0):], "}}")
			if i < 0 || j < 0 {
				break
			}
			parts = append(parts, q[:i], q[i+2:i+j])
			q = q[i+j+2:]
		}
		out[name] = append(parts, q)
	}
	return out
}

// query returns the statement of queries/NAME.sql with each {{key}}
// replaced by its value (kv: key, value, key, value, ...); a placeholder
// without a value is left as it is. An unknown name gives "", which the
// database refuses (TestQueries checks every call).
func query(name string, kv ...string) string {
	parts := queryParts[name]
	if len(parts) == 1 {
		return parts[0]
	}
	n := 0
	for i := 0; i < len(parts); i += 2 {
		n += len(parts[i])
	}
	for i := 1; i < len(kv); i += 2 {
		n += len(kv[i]) * 2
	}
	var b strings.Builder
	b.Grow(n)
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(p)
			continue
		}
		v, ok := lookupKV(kv, p)
		if !ok {
			v = "{{" + p + "}}"
		}
		b.WriteString(v)
	}
	return b.String()
}

func lookupKV(kv []string, key string) (string, bool) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i] == key {
			return kv[i+1], true
		}
	}
	return "", false
}

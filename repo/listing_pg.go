package repo

import (
	"strconv"
	"strings"

	"github.com/hermesstate/hermesstate/internal/pgsql"
)

// pgLiteral returns v as a PostgreSQL literal, or ok false for a type it
// does not write. Strings are escaped as the driver connection escapes
// arguments (pgsql.EscapeText: U+0000 is stored escaped), quotes doubled,
// and written E'...' with doubled backslashes when they hold a backslash,
// so the literal means the same under either standard_conforming_strings.
func pgLiteral(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		s := strings.ReplaceAll(pgsql.EscapeText(x), "'", "''")
		if strings.Contains(s, `\`) {
			return "E'" + strings.ReplaceAll(s, `\`, `\\`) + "'", true
		}
		return "'" + s + "'", true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case float64:
		return "CAST('" + strconv.FormatFloat(x, 'g', -1, 64) + "' AS double precision)", true
	}
	return "", false
}

// inlinedPostgres returns f with its arguments written into its clauses as
// literals (PostgreSQL), or f itself when an argument has a type pgLiteral
// does not write or the placeholders do not match the arguments.
//
// A listing statement with parameters is planned again on every call:
// pgx prepares it, and PostgreSQL keeps a custom plan for it when the
// generic plan looks costlier (the source filter's did), so each call paid
// the planning of the whole statement (32-125 ms at load 12, against 1-8
// ms to run it). Without parameters a prepared statement has one generic
// plan, made once per connection: a listing with a source filter costs
// what the listing without one costs. The clauses are the listing's own
// (no '?' but the placeholders).
func (f *filter) inlinedPostgres() *filter {
	out := &filter{}
	args := f.args
	for _, c := range f.where {
		parts := strings.Split(c, "?")
		if len(parts)-1 > len(args) {
			return f
		}
		var b strings.Builder
		b.WriteString(parts[0])
		for i, p := range parts[1:] {
			lit, ok := pgLiteral(args[i])
			if !ok {
				return f
			}
			b.WriteString(lit)
			b.WriteString(p)
		}
		args = args[len(parts)-1:]
		out.where = append(out.where, b.String())
	}
	if len(args) != 0 {
		return f
	}
	return out
}

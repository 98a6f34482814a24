package repo

import (
	"strconv"
	"strings"

	"gorm.io/gorm"

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

// listedCondPostgres returns the condition on ActivityTable (alias a) that
// selects, among the sessions not ended by compression, the ones the
// listing opt shows, when the listed column of migration 0107 answers it:
// the default filter (no children, not archived, not hidden), optionally
// restricted by sources. It returns "" for any other filter (the listing
// then reads sessions for every row, as before).
func listedCondPostgres(opt RichOptions) string {
	if !opt.OrderByLastActive || opt.IncludeChildren || opt.IncludeArchived || opt.ArchivedOnly || opt.IncludeHidden ||
		opt.CwdPrefix != "" || opt.SessionKey != "" || opt.MinMessageCount != 0 || opt.IDQuery != "" || opt.SearchQuery != "" ||
		opt.StartedSince != 0 || opt.StartedBefore != 0 {
		return ""
	}
	cond := "a.listed = 1"
	list := func(vals []string) (string, bool) {
		lits := make([]string, len(vals))
		for i, v := range vals {
			l, ok := pgLiteral(v)
			if !ok {
				return "", false
			}
			lits[i] = l
		}
		return strings.Join(lits, ", "), true
	}
	include := opt.Sources
	if opt.Source != "" {
		include = []string{opt.Source}
	}
	if len(include) > 0 {
		l, ok := list(include)
		if !ok {
			return ""
		}
		cond += " AND a.source IN (" + l + ")"
	}
	if len(opt.ExcludeSources) > 0 {
		l, ok := list(opt.ExcludeSources)
		if !ok {
			return ""
		}
		cond += " AND a.source NOT IN (" + l + ")"
	}
	return cond
}

// activityListedObjects are the triggers of migration 0107 that keep the
// listed, source and started_at columns of ActivityTable.
var activityListedObjects = []string{"hermesstate_activity_session_listed", "hermesstate_activity_session_parent"}

// hasActivityListed reports whether the PostgreSQL activity table carries
// migration 0107's columns and their triggers (cached once found).
func (d *DB) hasActivityListed(tx *gorm.DB) bool {
	if d.activityListed.Load() == 1 {
		return true
	}
	var n int64
	err := tx.Raw(`SELECT (SELECT COUNT(*) FROM pg_attribute at JOIN pg_class c ON c.oid = at.attrelid JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relname = ? AND at.attname = 'listed' AND NOT at.attisdropped)
		+ (SELECT COUNT(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND NOT t.tgisinternal AND t.tgname IN (?, ?))`,
		ActivityTable, activityListedObjects[0], activityListedObjects[1]).Scan(&n).Error
	if err == nil && n == 3 {
		d.activityListed.Store(1)
		return true
	}
	return false
}

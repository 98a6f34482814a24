package bench

import (
	"context"
	"database/sql"
	"runtime"
	"strings"

	"github.com/hermesstate/hermesstate/repo"
)

// memSnap measures Go allocations over a stretch of work.
type memSnap struct{ mallocs, bytes uint64 }

func memStats() memSnap {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSnap{m.Mallocs, m.TotalAlloc}
}

func (s memSnap) since() (allocs, bytes uint64) {
	n := memStats()
	return n.mallocs - s.mallocs, n.bytes - s.bytes
}

// drain runs q and scans every column of every row into generic values
// (the least a caller can do with the rows); it returns the row count.
func drain(ctx context.Context, d *sql.DB, q string, args ...any) (int, error) {
	rows, err := d.QueryContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		n++
	}
	return n, rows.Err()
}

// rawSearchSelect: the 20 best rows by bm25 from the FTS table alone (FTS5
// sorts with a bounded heap), then their messages and sessions.
const rawSearchSelect = "SELECT m.id, m.session_id, m.role, h.snip, m.timestamp, s.source, s.model FROM " +
	"(SELECT rowid, rank, snippet(%[1]s, -1, '>>>', '<<<', '...', 40) AS snip FROM %[1]s WHERE %[1]s MATCH ? ORDER BY rank LIMIT 20) h " +
	"JOIN messages m ON m.id = h.rowid JOIN sessions s ON s.id = m.session_id ORDER BY h.rank"

// rawSearch times one statement on the index the route used: FTS5 MATCH
// on messages_fts (word routes) or messages_fts_trigram (trigram routes)
// with bm25 order and a snippet, or Hermes' LIKE scan for the CJK and LIKE
// routes; no context rows.
func rawSearch(ctx context.Context, d *sql.DB, p *params, run repo.SearchResult, qr *QueryResult) error {
	var q string
	var args []any
	switch run.Route {
	case repo.RouteWord:
		q, args = strings.ReplaceAll(rawSearchSelect, "%[1]s", "messages_fts"), []any{run.Sanitized}
		qr.RawSQLStatement = "FTS5 MATCH on messages_fts, ORDER BY rank LIMIT 20 with snippet, then messages and sessions"
	case repo.RouteTrigram, repo.RouteWordRetry:
		term := strings.Trim(run.Sanitized, `"`)
		if run.Route == repo.RouteWordRetry || term == "" {
			term = strings.Trim(qr.Query, `"*`)
		}
		q, args = strings.ReplaceAll(rawSearchSelect, "%[1]s", "messages_fts_trigram"), []any{`"` + strings.ReplaceAll(term, `"`, `""`) + `"`}
		qr.RawSQLStatement = "FTS5 MATCH on messages_fts_trigram, ORDER BY rank LIMIT 20 with snippet, then messages and sessions"
	default:
		term := strings.Trim(qr.Query, `"*`)
		q = "SELECT m.id, m.session_id, m.role, substr(m.content, 1, 200), m.timestamp, s.source, s.model FROM messages m " +
			"JOIN sessions s ON s.id = m.session_id WHERE m.content LIKE ? ORDER BY m.timestamp DESC LIMIT 20"
		args = []any{"%" + term + "%"}
		qr.RawSQLStatement = "LIKE scan of messages.content ORDER BY timestamp DESC LIMIT 20 (Hermes' route for this query)"
	}
	var n int
	tm, err := timeCalls(p.Warmup, p.Reps, func() error {
		var err error
		n, err = drain(ctx, d, q, args...)
		return err
	})
	if err != nil {
		return err
	}
	qr.RawSQLMedianMS, qr.RawSQLP95MS, qr.RawSQLRows = &tm.MedianMS, &tm.P95MS, &n
	return nil
}

// Raw listing statements: the least SQL that answers each listing call on
// this engine, scanned into generic values.
var rawListingSQL = map[string]string{
	// Page of 20 by started_at (idx_sessions_started), then preview and
	// last activity for those 20 rows only.
	"list_started_at": `SELECT s.*, (SELECT substr(replace(replace(m.content, char(10), ' '), char(13), ' '), 1, 63) FROM messages m
		WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1) AS preview,
		COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active
		FROM (SELECT * FROM sessions ORDER BY started_at DESC LIMIT 20) s ORDER BY s.started_at DESC`,
	// Hermes' way: the last activity of every session, sorted.
	"list_last_active_full": `SELECT s.*, COALESCE((SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id), s.started_at) AS last_active
		FROM sessions s WHERE s.parent_session_id IS NULL ORDER BY last_active DESC LIMIT 20`,
	// With hermesstate's activity table: 20 rows from its index, then
	// each one's preview.
	"list_last_active_index": `SELECT s.*, a.active_at, (SELECT substr(replace(replace(m.content, char(10), ' '), char(13), ' '), 1, 63) FROM messages m
		WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL ORDER BY m.timestamp, m.id LIMIT 1) AS preview
		FROM (SELECT session_id, active_at FROM hermesstate_session_activity ORDER BY active_at DESC LIMIT 20) a
		JOIN sessions s ON s.id = a.session_id ORDER BY a.active_at DESC`,
	// Replay of one session: the columns a conversation needs.
	"replay": `SELECT role, content, tool_call_id, tool_calls, tool_name, reasoning, reasoning_content, reasoning_details,
		codex_reasoning_items, codex_message_items, finish_reason, timestamp, api_content, display_kind, display_metadata,
		platform_message_id, observed, effect_disposition FROM messages WHERE session_id = ? AND active = 1 ORDER BY id`,
	// Export of one session: every column of the session and its messages.
	"export_session":  `SELECT * FROM sessions WHERE id = ?`,
	"export_messages": `SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY id`,
}

func rawListing(ctx context.Context, p *params, res *ListingResult) error {
	d, err := rawReadDB(p.DB)
	if err != nil {
		return err
	}
	defer d.Close()
	res.RawSQL = map[string]any{}
	res.RawSQLStatements = map[string]string{}
	one := func(key string, fn func() error) error {
		tm, err := timeCalls(p.Warmup, p.Reps, fn)
		if err != nil {
			return err
		}
		res.RawSQL[key] = tm
		return nil
	}
	for _, k := range []string{"list_started_at", "list_last_active_full", "list_last_active_index"} {
		q := rawListingSQL[k]
		if k == "list_last_active_index" {
			var n int
			if d.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = 'hermesstate_session_activity'").Scan(&n); n == 0 {
				continue
			}
		}
		res.RawSQLStatements[k] = strings.Join(strings.Fields(q), " ")
		if err := one(k, func() error { _, err := drain(ctx, d, q); return err }); err != nil {
			return err
		}
	}
	res.RawSQLStatements["replay"] = strings.Join(strings.Fields(rawListingSQL["replay"]), " ")
	if err := one("replay_200", func() error { _, err := drain(ctx, d, rawListingSQL["replay"], p.LongID); return err }); err != nil {
		return err
	}
	res.RawSQLStatements["export"] = rawListingSQL["export_session"] + "; " + rawListingSQL["export_messages"]
	return one("export_200", func() error {
		if _, err := drain(ctx, d, rawListingSQL["export_session"], p.LongID); err != nil {
			return err
		}
		_, err := drain(ctx, d, rawListingSQL["export_messages"], p.LongID)
		return err
	})
}

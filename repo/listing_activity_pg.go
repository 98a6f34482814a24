package repo

import (
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgsql"
)

// PostgreSQL keeps ActivityTable too (migration
// 0106_hermesstate_pg_session_activity): the same rule as on SQLite (the
// newer of last_activity_at and the newest message timestamp within the
// sane epoch window, else started_at when sane, else NULL), kept by
// triggers in the transaction of the write that changes it, so the listing
// by last activity reads the newest sessions from an index instead of
// scanning messages.
//
//   - messages INSERT: one statement-level trigger with the inserted rows
//     as a transition table raises each touched session's activity to its
//     newest new timestamp (one UPDATE per statement, none when the value
//     does not change), so a batch of 200 messages costs one row update.
//   - messages DELETE (statement level), messages UPDATE OF timestamp,
//     session_id, sessions INSERT and UPDATE OF id, started_at,
//     last_activity_at (row level): the session's row is recomputed
//     (hs_activity_recompute: one seek in idx_messages_session).
//   - sessions DELETE: the row goes.
//
// Migration 0107 adds each session's started_at, source and listed (1
// when the default listing shows it on its own, 0 when not, NULL when the
// trigger cannot decide) with indexes in the listing's order, kept by the
// same triggers plus one on the session's and its parent's writes
// (listedCondPostgres, activityUnionPage).
//
// The copy tool loads rows with hermesstate.copying = 'on': the triggers
// stand aside and the table is rebuilt in one statement at the end
// (SessionActivityRebuildPostgres). The DDL is migration 0106's
// (migrations/step_0106_pg_session_activity.go).

// activityRebuildPostgres fills the emptied table from every session in
// one statement (one pass over messages, grouped).
var activityRebuildPostgres = strings.Join(strings.Fields(`INSERT INTO `+ActivityTable+` (session_id, active_at, active_sane, started_at, source, listed)
	SELECT s.id, COALESCE(v.t, CASE WHEN `+"s.started_at "+sqlIn+` THEN s.started_at END), v.t IS NOT NULL,
		s.started_at, s.source, hs_activity_listed(s.id)
	FROM sessions s
	LEFT JOIN (SELECT session_id, MAX(timestamp) AS mt FROM messages WHERE `+"timestamp "+sqlIn+` GROUP BY session_id) m ON m.session_id = s.id
	CROSS JOIN LATERAL (SELECT GREATEST(CASE WHEN `+"s.last_activity_at "+sqlIn+` THEN s.last_activity_at END, m.mt) AS t) v`), " ")

// SessionActivityRebuildPostgres returns the statements that empty and
// refill the activity table of the current schema from its sessions and
// messages (PostgreSQL; run them in one transaction).
func SessionActivityRebuildPostgres() []string {
	return []string{"DELETE FROM " + ActivityTable, activityRebuildPostgres}
}

// hasActivityPostgres reports whether the current schema has the activity
// table and every trigger that keeps it.
func hasActivityPostgres(tx *gorm.DB) bool {
	var n int64
	err := tx.Raw(`SELECT (SELECT COUNT(*) FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND c.relname = ? AND c.relkind = 'r')
		+ (SELECT COUNT(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace ns ON ns.oid = c.relnamespace
			WHERE ns.nspname = current_schema() AND NOT t.tgisinternal AND t.tgname IN (`+placeholders(len(activityObjects)-1)+`))`,
		append([]any{ActivityTable}, anySlice(activityObjects[1:])...)...).Scan(&n).Error
	return err == nil && n == int64(len(activityObjects))
}

// AnalyzedTables are the tables a bulk load fills besides the Hermes
// tables it names: the word-search documents and the activity table.
var AnalyzedTables = []string{"hs_messages_fts", ActivityTable}

// AnalyzePostgres runs ANALYZE on the tables of the current schema (those
// that exist), so the planner has statistics right after a bulk load: a
// server whose autovacuum is off or slow would otherwise plan searches
// without them (seconds instead of milliseconds). It does nothing on
// SQLite and returns the database error.
func AnalyzePostgres(tx *gorm.DB, tables []string) error {
	if !isPostgres(tx) || len(tables) == 0 {
		return nil
	}
	var present []string
	if err := tx.Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind = 'r' AND c.relname IN (`+placeholders(len(tables))+`) ORDER BY c.relname`,
		anySlice(tables)...).Scan(&present).Error; err != nil {
		return err
	}
	if len(present) == 0 {
		return nil
	}
	quoted := make([]string, len(present))
	for i, t := range present {
		quoted[i] = pgsql.QuoteIdent(t)
	}
	return tx.Exec("ANALYZE " + strings.Join(quoted, ", ")).Error
}

package migrations

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgsql"
)

// Step 0106_hermesstate_pg_session_activity (PostgreSQL only), written out
// here as shipped: hermesstate_session_activity as on SQLite (step 0102),
// each session's own last activity (the newer of last_activity_at and the
// newest message timestamp within the sane epoch window, else started_at
// when sane, else NULL), indexed, kept by triggers in the transaction of
// the write that changes it, and filled from the rows already there.
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
// Under hermesstate.copying = 'on' (the copy tool's load) the triggers
// stand aside; the copy rebuilds the table in one statement at its end
// (repo.SessionActivityRebuildPostgres). Every table name in a function
// body is qualified with the store's schema, so a write planned under
// another search_path still keeps this schema's table. The repository's
// side (the trigger names it checks, the rebuild) is repo's
// listing_activity_pg.go; TestPostgresActivityMatchesRepo compares them.

const activityTable = "hermesstate_session_activity"

// pgSaneWindow is the sane epoch window of activity stamps (2000-2100).
const pgSaneWindow = "BETWEEN 946684800.0 AND 4102444800.0"

// pgSane is the sane-epoch test of a PostgreSQL expression.
func pgSane(expr string) string { return expr + " " + pgSaneWindow }

// sessionActivityPostgres returns the DDL of the activity table, its index,
// functions and triggers in schema (quoted).
func sessionActivityPostgres(schema string) []string {
	q := pgsql.QuoteIdent(schema) + "."
	act := q + activityTable
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + activityTable + ` (
			session_id TEXT PRIMARY KEY,
			active_at DOUBLE PRECISION,
			active_sane BOOLEAN NOT NULL DEFAULT false
		)`,
		// DESC NULLS LAST: the listing reads the newest first, with the
		// sessions without activity last as SQLite orders them.
		`CREATE INDEX IF NOT EXISTS idx_hermesstate_session_activity ON ` + activityTable + ` (active_at DESC NULLS LAST)`,
		// The compressed roots, which the listing merges in with the
		// activity of their whole chain (activityUnionPage).
		`CREATE INDEX IF NOT EXISTS idx_hermesstate_sessions_compressed ON sessions (id) WHERE end_reason = 'compression'`,
		`CREATE OR REPLACE FUNCTION hs_activity_recompute(sid text) RETURNS void LANGUAGE plpgsql AS $f$
		BEGIN
			DELETE FROM ` + act + ` WHERE session_id = sid;
			INSERT INTO ` + act + ` (session_id, active_at, active_sane)
			SELECT s.id, COALESCE(v.t, CASE WHEN ` + pgSane("s.started_at") + ` THEN s.started_at END), v.t IS NOT NULL
			FROM ` + q + `sessions s, LATERAL (SELECT GREATEST(CASE WHEN ` + pgSane("s.last_activity_at") + ` THEN s.last_activity_at END,
				(SELECT MAX(m.timestamp) FROM ` + q + `messages m WHERE m.session_id = sid AND ` + pgSane("m.timestamp") + `)) AS t) v
			WHERE s.id = sid;
		END
		$f$`,
		`CREATE OR REPLACE FUNCTION hs_activity_messages_inserted() RETURNS trigger LANGUAGE plpgsql AS $f$
		BEGIN
			IF current_setting('hermesstate.copying', true) = 'on' THEN
				RETURN NULL;
			END IF;
			UPDATE ` + act + ` a SET active_at = CASE WHEN a.active_sane THEN GREATEST(a.active_at, n.t) ELSE n.t END, active_sane = true
			FROM (SELECT session_id, MAX(timestamp) AS t FROM hs_new_messages WHERE ` + pgSane("timestamp") + ` GROUP BY session_id) n
			WHERE a.session_id = n.session_id AND NOT (a.active_sane AND a.active_at >= n.t);
			RETURN NULL;
		END
		$f$`,
		`CREATE OR REPLACE FUNCTION hs_activity_messages_deleted() RETURNS trigger LANGUAGE plpgsql AS $f$
		DECLARE
			sid text;
		BEGIN
			IF current_setting('hermesstate.copying', true) = 'on' THEN
				RETURN NULL;
			END IF;
			FOR sid IN SELECT DISTINCT session_id FROM hs_old_messages LOOP
				PERFORM ` + q + `hs_activity_recompute(sid);
			END LOOP;
			RETURN NULL;
		END
		$f$`,
		`CREATE OR REPLACE FUNCTION hs_activity_message_updated() RETURNS trigger LANGUAGE plpgsql AS $f$
		BEGIN
			IF current_setting('hermesstate.copying', true) = 'on' THEN
				RETURN NULL;
			END IF;
			PERFORM ` + q + `hs_activity_recompute(OLD.session_id);
			IF NEW.session_id IS DISTINCT FROM OLD.session_id THEN
				PERFORM ` + q + `hs_activity_recompute(NEW.session_id);
			END IF;
			RETURN NULL;
		END
		$f$`,
		`CREATE OR REPLACE FUNCTION hs_activity_session_written() RETURNS trigger LANGUAGE plpgsql AS $f$
		BEGIN
			IF current_setting('hermesstate.copying', true) = 'on' THEN
				RETURN NULL;
			END IF;
			IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id) THEN
				DELETE FROM ` + act + ` WHERE session_id = OLD.id;
			END IF;
			IF TG_OP <> 'DELETE' THEN
				PERFORM ` + q + `hs_activity_recompute(NEW.id);
			END IF;
			RETURN NULL;
		END
		$f$`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_message_insert AFTER INSERT ON messages
			REFERENCING NEW TABLE AS hs_new_messages FOR EACH STATEMENT EXECUTE FUNCTION hs_activity_messages_inserted()`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_message_delete AFTER DELETE ON messages
			REFERENCING OLD TABLE AS hs_old_messages FOR EACH STATEMENT EXECUTE FUNCTION hs_activity_messages_deleted()`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_message_update AFTER UPDATE OF timestamp, session_id ON messages
			FOR EACH ROW WHEN (OLD.timestamp IS DISTINCT FROM NEW.timestamp OR OLD.session_id IS DISTINCT FROM NEW.session_id)
			EXECUTE FUNCTION hs_activity_message_updated()`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_session_insert AFTER INSERT ON sessions
			FOR EACH ROW EXECUTE FUNCTION hs_activity_session_written()`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_session_update AFTER UPDATE OF id, started_at, last_activity_at ON sessions
			FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.started_at IS DISTINCT FROM NEW.started_at
				OR OLD.last_activity_at IS DISTINCT FROM NEW.last_activity_at)
			EXECUTE FUNCTION hs_activity_session_written()`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_session_delete AFTER DELETE ON sessions
			FOR EACH ROW EXECUTE FUNCTION hs_activity_session_written()`,
	}
}

// activityBackfill0106 fills the emptied table from every session in one
// statement (one pass over messages, grouped).
const activityBackfill0106 = `INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
	SELECT s.id, COALESCE(v.t, CASE WHEN s.started_at ` + pgSaneWindow + ` THEN s.started_at END), v.t IS NOT NULL
	FROM sessions s
	LEFT JOIN (SELECT session_id, MAX(timestamp) AS mt FROM messages WHERE timestamp ` + pgSaneWindow + ` GROUP BY session_id) m ON m.session_id = s.id
	CROSS JOIN LATERAL (SELECT GREATEST(CASE WHEN s.last_activity_at ` + pgSaneWindow + ` THEN s.last_activity_at END, m.mt) AS t) v`

// postgresSessionActivity is the Postgres step of migration 0106: the
// activity table, its index, functions and triggers in the current schema,
// filled from the rows already there. It returns the database error.
func postgresSessionActivity(tx *gorm.DB) error {
	var schema string
	if err := tx.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		return err
	}
	if schema == "" {
		return fmt.Errorf("no current schema")
	}
	for _, q := range append(sessionActivityPostgres(schema), "DELETE FROM "+activityTable, activityBackfill0106) {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

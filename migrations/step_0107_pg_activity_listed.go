package migrations

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgsql"
)

// Step 0107_hermesstate_pg_activity_listed (PostgreSQL only), written out
// here as shipped: hermesstate_session_activity (step 0106) also carries,
// for each session, its started_at and source and whether the default
// listing shows it on its own (listed), so a listing by last activity
// reads its page from one index of this table instead of probing sessions
// for every row it skips (an --offset 5,000 read 5,020 session rows).
//
// listed is 1 when the session passes the default listing's filter (a
// root, a branch or reset child as Hermes lists them, no delegate marker,
// not archived, not hidden, not ended by compression: repo's
// listableChildSQL AND archived = 0 AND hidden = 0, with the end_reason
// test of the listing's first arm), 0 when it does not, NULL when its
// model_config starts like JSON but is not JSON (the listing's own filter
// raises the error there; the listing reads such rows through sessions).
// It depends on the session's row and on its parent's end_reason, ended_at
// and session_key, so it is recomputed (hs_activity_listed) when the row
// is written (the 0106 triggers, whose recompute now fills the new
// columns) and, for the children of a session, when that session is
// inserted, deleted, or changes id, end_reason, ended_at or session_key.
// Indexed: (active_at DESC NULLS LAST, started_at DESC, session_id DESC)
// and the same after source, both WHERE listed = 1 (the listing's order),
// and the rows with listed NULL.

// activityListedCond is the default listing's filter of the session alias
// s as repo writes it for PostgreSQL (listableChildSQL, then archived,
// hidden, and the first arm's end_reason test), every table qualified
// with q.
func activityListedCond(q string) string {
	marker := func(key string) string {
		return `(CASE WHEN s.model_config ~ '^\s*\{' THEN (s.model_config::jsonb ->> '` + key + `') END)`
	}
	return `(s.parent_session_id IS NULL
		OR ` + marker("_branched_from") + ` IS NOT NULL
		OR EXISTS (SELECT 1 FROM ` + q + `sessions bp WHERE bp.id = s.parent_session_id AND bp.end_reason = 'branched' AND s.started_at >= bp.ended_at)
		OR ` + marker("_reset_from") + ` IS NOT NULL
		OR EXISTS (SELECT 1 FROM ` + q + `sessions rp WHERE rp.id = s.parent_session_id AND rp.end_reason IN ('session_reset', 'session_switch', 'idle', 'daily', 'suspended', 'resume_pending_expired')
			AND s.session_key IS NOT NULL AND s.session_key <> '' AND s.session_key = rp.session_key))
		AND (s.model_config IS NULL OR ` + marker("_delegate_from") + ` IS NULL) AND s.archived = 0 AND s.hidden = 0
		AND (s.end_reason IS NULL OR s.end_reason <> 'compression')`
}

// activityListedPostgres returns the DDL of step 0107 in schema.
func activityListedPostgres(schema string) []string {
	q := pgsql.QuoteIdent(schema) + "."
	act := q + activityTable
	return []string{
		`ALTER TABLE ` + activityTable + ` ADD COLUMN IF NOT EXISTS started_at DOUBLE PRECISION,
			ADD COLUMN IF NOT EXISTS source TEXT, ADD COLUMN IF NOT EXISTS listed SMALLINT`,
		`CREATE OR REPLACE FUNCTION hs_activity_listed(sid text) RETURNS smallint LANGUAGE plpgsql AS $f$
		DECLARE
			r smallint;
		BEGIN
			SELECT CASE WHEN ` + activityListedCond(q) + ` THEN 1 ELSE 0 END INTO r FROM ` + q + `sessions s WHERE s.id = sid;
			RETURN r;
		EXCEPTION WHEN invalid_text_representation THEN
			RETURN NULL;
		END
		$f$`,
		// 0106's recompute, filling the new columns too.
		`CREATE OR REPLACE FUNCTION hs_activity_recompute(sid text) RETURNS void LANGUAGE plpgsql AS $f$
		BEGIN
			DELETE FROM ` + act + ` WHERE session_id = sid;
			INSERT INTO ` + act + ` (session_id, active_at, active_sane, started_at, source, listed)
			SELECT s.id, COALESCE(v.t, CASE WHEN ` + pgSane("s.started_at") + ` THEN s.started_at END), v.t IS NOT NULL,
				s.started_at, s.source, ` + q + `hs_activity_listed(s.id)
			FROM ` + q + `sessions s, LATERAL (SELECT GREATEST(CASE WHEN ` + pgSane("s.last_activity_at") + ` THEN s.last_activity_at END,
				(SELECT MAX(m.timestamp) FROM ` + q + `messages m WHERE m.session_id = sid AND ` + pgSane("m.timestamp") + `)) AS t) v
			WHERE s.id = sid;
		END
		$f$`,
		`CREATE OR REPLACE FUNCTION hs_activity_children_relisted(pid text) RETURNS void LANGUAGE plpgsql AS $f$
		BEGIN
			UPDATE ` + act + ` a SET listed = ` + q + `hs_activity_listed(a.session_id)
			WHERE a.session_id IN (SELECT c.id FROM ` + q + `sessions c WHERE c.parent_session_id = pid)
				AND a.listed IS DISTINCT FROM ` + q + `hs_activity_listed(a.session_id);
		END
		$f$`,
		`CREATE OR REPLACE FUNCTION hs_activity_session_listed() RETURNS trigger LANGUAGE plpgsql AS $f$
		BEGIN
			IF current_setting('hermesstate.copying', true) = 'on' THEN
				RETURN NULL;
			END IF;
			IF TG_OP = 'UPDATE' THEN
				UPDATE ` + act + ` SET source = NEW.source, listed = ` + q + `hs_activity_listed(NEW.id) WHERE session_id = NEW.id;
				IF NEW.id IS DISTINCT FROM OLD.id OR NEW.end_reason IS DISTINCT FROM OLD.end_reason
					OR NEW.ended_at IS DISTINCT FROM OLD.ended_at OR NEW.session_key IS DISTINCT FROM OLD.session_key THEN
					PERFORM ` + q + `hs_activity_children_relisted(NEW.id);
				END IF;
			END IF;
			IF TG_OP = 'INSERT' THEN
				PERFORM ` + q + `hs_activity_children_relisted(NEW.id);
			END IF;
			IF TG_OP = 'DELETE' OR (TG_OP = 'UPDATE' AND NEW.id IS DISTINCT FROM OLD.id) THEN
				PERFORM ` + q + `hs_activity_children_relisted(OLD.id);
			END IF;
			RETURN NULL;
		END
		$f$`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_session_listed AFTER UPDATE OF id, source, parent_session_id,
			model_config, archived, hidden, end_reason, ended_at, session_key ON sessions
			FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.source IS DISTINCT FROM NEW.source
				OR OLD.parent_session_id IS DISTINCT FROM NEW.parent_session_id OR OLD.model_config IS DISTINCT FROM NEW.model_config
				OR OLD.archived IS DISTINCT FROM NEW.archived OR OLD.hidden IS DISTINCT FROM NEW.hidden
				OR OLD.end_reason IS DISTINCT FROM NEW.end_reason OR OLD.ended_at IS DISTINCT FROM NEW.ended_at
				OR OLD.session_key IS DISTINCT FROM NEW.session_key)
			EXECUTE FUNCTION hs_activity_session_listed()`,
		`CREATE OR REPLACE TRIGGER hermesstate_activity_session_parent AFTER INSERT OR DELETE ON sessions
			FOR EACH ROW EXECUTE FUNCTION hs_activity_session_listed()`,
		`CREATE INDEX IF NOT EXISTS idx_hermesstate_activity_listed ON ` + activityTable + `
			(active_at DESC NULLS LAST, started_at DESC, session_id DESC) WHERE listed = 1`,
		`CREATE INDEX IF NOT EXISTS idx_hermesstate_activity_listed_source ON ` + activityTable + `
			(source, active_at DESC NULLS LAST, started_at DESC, session_id DESC) WHERE listed = 1`,
		`CREATE INDEX IF NOT EXISTS idx_hermesstate_activity_unlisted ON ` + activityTable + ` (session_id) WHERE listed IS NULL`,
		// The backfill after the indexes: its updates then change indexed
		// columns (no HOT update), so no index is created over a broken
		// HOT chain, which would keep it unused (pg_index.indcheckxmin)
		// until every transaction older than this one has ended.
		`UPDATE ` + activityTable + ` a SET started_at = s.started_at, source = s.source, listed = hs_activity_listed(s.id)
			FROM sessions s WHERE s.id = a.session_id`,
	}
}

// postgresActivityListed is the Postgres step of migration 0107. It
// returns the database error.
func postgresActivityListed(tx *gorm.DB) error {
	var schema string
	if err := tx.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		return err
	}
	if schema == "" {
		return fmt.Errorf("no current schema")
	}
	for _, q := range activityListedPostgres(schema) {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

package repo

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// ActivityTable keeps, per session, its own last activity exactly as
// lastActiveSQL computes it (the newer of last_activity_at and the newest
// message timestamp within the sane epoch window, else started_at when
// sane, else NULL), indexed, so that the listing by last activity reads the
// newest sessions from an index whatever the relation between started_at
// and the messages (imported transcripts, empty sessions). It is ours
// (SQLite only), kept by triggers so that writes by Hermes' own code are
// caught up too; Hermes ignores tables and triggers it does not know.
//
// active_sane says whether active_at comes from a sane stamp (a message or
// last_activity_at) rather than the started_at fallback: a new message
// then only needs MAX(active_at, timestamp), without reading anything.
const ActivityTable = "hermesstate_session_activity"

// activityRecompute is the trigger step that sets the row of the session
// whose id is the SQL expression id from the session and its messages. It
// is a DELETE and a plain INSERT (no OR REPLACE / upsert): the conflict
// clause of the statement that fired a trigger (Hermes' INSERT OR IGNORE)
// overrides the trigger's own.
func activityRecompute(id string) string {
	return fmt.Sprintf(`DELETE FROM hermesstate_session_activity WHERE session_id = %[1]s;
		INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
		SELECT s.id, COALESCE(v.t, CASE WHEN s.started_at %[2]s THEN s.started_at END), v.t IS NOT NULL
		FROM sessions s, (SELECT MAX(x) AS t FROM (SELECT s2.last_activity_at AS x FROM sessions s2 WHERE s2.id = %[1]s
			UNION ALL SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = %[1]s AND m.timestamp %[2]s) WHERE x %[2]s) v
		WHERE s.id = %[1]s;`, id, sqlIn)
}

// activityDDL creates the table, its index and the triggers that keep it.
func activityDDL() []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS hermesstate_session_activity (
			session_id TEXT PRIMARY KEY,
			active_at REAL,
			active_sane INTEGER NOT NULL DEFAULT 0
		) WITHOUT ROWID`,
		`CREATE INDEX IF NOT EXISTS idx_hermesstate_session_activity ON hermesstate_session_activity (active_at)`,
		// A new message with a sane timestamp: its session's activity is
		// at least that (one UPDATE by primary key, nothing else read). The
		// session's row exists: the session insert trigger made it (a
		// message of a session that does not exist yet is caught up when
		// the session is inserted).
		fmt.Sprintf(`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_message_insert AFTER INSERT ON messages
		WHEN new.timestamp %s BEGIN
			UPDATE hermesstate_session_activity SET active_at = CASE WHEN active_sane THEN MAX(active_at, new.timestamp)
				ELSE new.timestamp END, active_sane = 1 WHERE session_id = new.session_id;
		END`, sqlIn),
		`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_message_delete AFTER DELETE ON messages BEGIN
			` + activityRecompute("old.session_id") + `
		END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_message_update AFTER UPDATE OF timestamp, session_id ON messages
		WHEN old.timestamp IS NOT new.timestamp OR old.session_id IS NOT new.session_id BEGIN
			` + activityRecompute("old.session_id") + `
			` + activityRecompute("new.session_id") + `
		END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_session_insert AFTER INSERT ON sessions BEGIN
			` + activityRecompute("new.id") + `
		END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_session_update AFTER UPDATE OF id, started_at, last_activity_at ON sessions
		WHEN old.id IS NOT new.id OR old.started_at IS NOT new.started_at OR old.last_activity_at IS NOT new.last_activity_at BEGIN
			DELETE FROM hermesstate_session_activity WHERE session_id = old.id;
			` + activityRecompute("new.id") + `
		END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_session_delete AFTER DELETE ON sessions BEGIN
			DELETE FROM hermesstate_session_activity WHERE session_id = old.id;
		END`,
	}
}

// activityRebuild fills the emptied table from every session (one
// statement; each newest timestamp is one seek in idx_messages_session).
const activityRebuild = `INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
	SELECT id, COALESCE(t, CASE WHEN started_at ` + sqlIn + ` THEN started_at END), t IS NOT NULL FROM (
		SELECT s.id, s.started_at, (SELECT MAX(x) FROM (SELECT s.last_activity_at AS x UNION ALL
			SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id AND m.timestamp ` + sqlIn + `) WHERE x ` + sqlIn + `) AS t
		FROM sessions s)`

// SessionActivityStatements are the statements that (re)create the
// activity table, its index and triggers and fill it from scratch (run
// them in one transaction).
func SessionActivityStatements() []string {
	return append(activityDDL(), "DELETE FROM hermesstate_session_activity", activityRebuild)
}

// SessionActivityTriggers are the names of the triggers that keep the
// activity table.
func SessionActivityTriggers() []string { return append([]string(nil), activityObjects[1:]...) }

// activityDriftSQL counts sessions whose activity row is missing or differs
// from the value computed from the session and its messages.
var activityDriftSQL = strings.Join(strings.Fields(`SELECT COUNT(*) FROM sessions s
	LEFT JOIN hermesstate_session_activity a ON a.session_id = s.id
	WHERE a.session_id IS NULL OR a.active_at IS NOT `+lastActiveSQL("s")), " ")

// ActivityDriftSQL is the statement doctor runs to count sessions whose
// activity row is missing or wrong (0 when the table is consistent).
func ActivityDriftSQL() string { return activityDriftSQL }

// activityObjects are the table and triggers the listing relies on.
var activityObjects = []string{ActivityTable, "hermesstate_activity_message_insert", "hermesstate_activity_message_delete",
	"hermesstate_activity_message_update", "hermesstate_activity_session_insert", "hermesstate_activity_session_update",
	"hermesstate_activity_session_delete"}

// hasActivity reports whether the store has the activity table and every
// trigger that keeps it (cached once found).
func (d *DB) hasActivity(tx *gorm.DB) bool {
	if d.activity.Load() == 1 {
		return true
	}
	if d.Dialect == Postgres {
		if hasActivityPostgres(tx) {
			d.activity.Store(1)
			return true
		}
		return false
	}
	var n int64
	if tx.Raw("SELECT COUNT(*) FROM sqlite_master WHERE name IN ("+placeholders(len(activityObjects))+")", anySlice(activityObjects)...).Scan(&n).Error != nil {
		return false
	}
	if n == int64(len(activityObjects)) {
		d.activity.Store(1)
		return true
	}
	return false
}

package migrations

import "gorm.io/gorm"

// Step 0102_hermesstate_session_activity, frozen as shipped: the table
// hermesstate_session_activity (each session's own last activity: the newer
// of last_activity_at and its newest message timestamp within the sane epoch
// window, else started_at when sane), its index and the triggers that keep
// it, then the table filled from the rows already in the file. The SQL is
// written out here, not taken from package repo, so that the step does what
// it did when it shipped whatever repo becomes; repo.SessionActivityStatements
// (used by repair) must stay equivalent, or a new step must bring files to the
// new shape (TestFrozenActivityMatchesRepo says when they part).
var sessionActivity0102 = []string{
	`CREATE TABLE IF NOT EXISTS hermesstate_session_activity (
			session_id TEXT PRIMARY KEY,
			active_at REAL,
			active_sane INTEGER NOT NULL DEFAULT 0
		) WITHOUT ROWID`,
	`CREATE INDEX IF NOT EXISTS idx_hermesstate_session_activity ON hermesstate_session_activity (active_at)`,
	`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_message_insert AFTER INSERT ON messages
		WHEN new.timestamp BETWEEN 946684800.0 AND 4102444800.0 BEGIN
			UPDATE hermesstate_session_activity SET active_at = CASE WHEN active_sane THEN MAX(active_at, new.timestamp)
				ELSE new.timestamp END, active_sane = 1 WHERE session_id = new.session_id;
		END`,
	`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_message_delete AFTER DELETE ON messages BEGIN
			DELETE FROM hermesstate_session_activity WHERE session_id = old.session_id;
		INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
		SELECT s.id, COALESCE(v.t, CASE WHEN s.started_at BETWEEN 946684800.0 AND 4102444800.0 THEN s.started_at END), v.t IS NOT NULL
		FROM sessions s, (SELECT MAX(x) AS t FROM (SELECT s2.last_activity_at AS x FROM sessions s2 WHERE s2.id = old.session_id
			UNION ALL SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = old.session_id AND m.timestamp BETWEEN 946684800.0 AND 4102444800.0) WHERE x BETWEEN 946684800.0 AND 4102444800.0) v
		WHERE s.id = old.session_id;
		END`,
	`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_message_update AFTER UPDATE OF timestamp, session_id ON messages
		WHEN old.timestamp IS NOT new.timestamp OR old.session_id IS NOT new.session_id BEGIN
			DELETE FROM hermesstate_session_activity WHERE session_id = old.session_id;
		INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
		SELECT s.id, COALESCE(v.t, CASE WHEN s.started_at BETWEEN 946684800.0 AND 4102444800.0 THEN s.started_at END), v.t IS NOT NULL
		FROM sessions s, (SELECT MAX(x) AS t FROM (SELECT s2.last_activity_at AS x FROM sessions s2 WHERE s2.id = old.session_id
			UNION ALL SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = old.session_id AND m.timestamp BETWEEN 946684800.0 AND 4102444800.0) WHERE x BETWEEN 946684800.0 AND 4102444800.0) v
		WHERE s.id = old.session_id;
			DELETE FROM hermesstate_session_activity WHERE session_id = new.session_id;
		INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
		SELECT s.id, COALESCE(v.t, CASE WHEN s.started_at BETWEEN 946684800.0 AND 4102444800.0 THEN s.started_at END), v.t IS NOT NULL
		FROM sessions s, (SELECT MAX(x) AS t FROM (SELECT s2.last_activity_at AS x FROM sessions s2 WHERE s2.id = new.session_id
			UNION ALL SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = new.session_id AND m.timestamp BETWEEN 946684800.0 AND 4102444800.0) WHERE x BETWEEN 946684800.0 AND 4102444800.0) v
		WHERE s.id = new.session_id;
		END`,
	`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_session_insert AFTER INSERT ON sessions BEGIN
			DELETE FROM hermesstate_session_activity WHERE session_id = new.id;
		INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
		SELECT s.id, COALESCE(v.t, CASE WHEN s.started_at BETWEEN 946684800.0 AND 4102444800.0 THEN s.started_at END), v.t IS NOT NULL
		FROM sessions s, (SELECT MAX(x) AS t FROM (SELECT s2.last_activity_at AS x FROM sessions s2 WHERE s2.id = new.id
			UNION ALL SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = new.id AND m.timestamp BETWEEN 946684800.0 AND 4102444800.0) WHERE x BETWEEN 946684800.0 AND 4102444800.0) v
		WHERE s.id = new.id;
		END`,
	`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_session_update AFTER UPDATE OF id, started_at, last_activity_at ON sessions
		WHEN old.id IS NOT new.id OR old.started_at IS NOT new.started_at OR old.last_activity_at IS NOT new.last_activity_at BEGIN
			DELETE FROM hermesstate_session_activity WHERE session_id = old.id;
			DELETE FROM hermesstate_session_activity WHERE session_id = new.id;
		INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
		SELECT s.id, COALESCE(v.t, CASE WHEN s.started_at BETWEEN 946684800.0 AND 4102444800.0 THEN s.started_at END), v.t IS NOT NULL
		FROM sessions s, (SELECT MAX(x) AS t FROM (SELECT s2.last_activity_at AS x FROM sessions s2 WHERE s2.id = new.id
			UNION ALL SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = new.id AND m.timestamp BETWEEN 946684800.0 AND 4102444800.0) WHERE x BETWEEN 946684800.0 AND 4102444800.0) v
		WHERE s.id = new.id;
		END`,
	`CREATE TRIGGER IF NOT EXISTS hermesstate_activity_session_delete AFTER DELETE ON sessions BEGIN
			DELETE FROM hermesstate_session_activity WHERE session_id = old.id;
		END`,
	`DELETE FROM hermesstate_session_activity`,
	`INSERT INTO hermesstate_session_activity (session_id, active_at, active_sane)
	SELECT id, COALESCE(t, CASE WHEN started_at BETWEEN 946684800.0 AND 4102444800.0 THEN started_at END), t IS NOT NULL FROM (
		SELECT s.id, s.started_at, (SELECT MAX(x) FROM (SELECT s.last_activity_at AS x UNION ALL
			SELECT MAX(m.timestamp) FROM messages m WHERE m.session_id = s.id AND m.timestamp BETWEEN 946684800.0 AND 4102444800.0) WHERE x BETWEEN 946684800.0 AND 4102444800.0) AS t
		FROM sessions s)`,
}

// sessionActivity runs step 0102 (SQLite only).
func sessionActivity(tx *gorm.DB) error {
	for _, q := range sessionActivity0102 {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

package migrations

import "gorm.io/gorm"

// postgresFTSTable is the Postgres step of migration
// 0101_hermesstate_pg_messages_fts: the word document of every message is
// kept in hs_messages_fts(id, doc tsvector) by triggers on messages (like
// FTS5's external-content table), with a GIN index on doc. Ranking and
// matching then read the stored tsvector instead of recomputing the
// document of every matching row (which the expression index of 0006
// made necessary for ts_rank). The expression index is dropped. On SQLite
// the step does nothing.
func postgresFTSTable(tx *gorm.DB) error {
	for _, q := range []string{
		`CREATE TABLE IF NOT EXISTS hs_messages_fts (
			id BIGINT PRIMARY KEY REFERENCES messages(id) ON DELETE CASCADE,
			doc tsvector NOT NULL
		)`,
		`CREATE INDEX IF NOT EXISTS idx_hs_messages_fts_doc ON hs_messages_fts USING gin (doc)`,
		`CREATE OR REPLACE FUNCTION hs_messages_fts_sync() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO hs_messages_fts (id, doc) VALUES (NEW.id, hs_fts_tsv(NEW.role, NEW.content, NEW.tool_name, NEW.tool_calls))
			ON CONFLICT (id) DO UPDATE SET doc = excluded.doc;
			RETURN NULL;
		END;
		$$`,
		`CREATE OR REPLACE TRIGGER hs_messages_fts_insert AFTER INSERT ON messages
			FOR EACH ROW EXECUTE FUNCTION hs_messages_fts_sync()`,
		`CREATE OR REPLACE TRIGGER hs_messages_fts_update AFTER UPDATE OF role, content, tool_name, tool_calls ON messages
			FOR EACH ROW EXECUTE FUNCTION hs_messages_fts_sync()`,
		`INSERT INTO hs_messages_fts (id, doc)
			SELECT id, hs_fts_tsv(role, content, tool_name, tool_calls) FROM messages ON CONFLICT (id) DO NOTHING`,
		`DROP INDEX IF EXISTS idx_messages_fts_word`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

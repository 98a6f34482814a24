package migrations

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgsql"
)

// PostgreSQL search objects (the Postgres variant of 0006_fts_tables):
//
//   - hs_fts_tsv(role, content, tool_name, tool_calls): the word document of
//     a message, as FTS5's unicode61 tokenizer sees it: every run of
//     characters that are not letters or digits is a separator (so
//     "my-app.config.ts" is the words my app config ts, as in SQLite), tool
//     output is cut to its first 8192 characters like Hermes'
//     messages_fts_src view, and the 'simple' configuration lowercases
//     without stemming (unicode61 does not stem either). A GIN expression
//     index on it serves word search; no column is added to messages.
//   - pg_trgm GIN indexes (gin_trgm_ops) on content, tool_name and
//     tool_calls serve substring search (CJK, and the trigram retry) with
//     ILIKE.
//
// pg_trgm is created in schema public when missing (it is a trusted
// extension: a database owner may create it) under a database-wide advisory
// lock, so stores in several schemas can migrate at once.

const pgWordDocFunc = `CREATE OR REPLACE FUNCTION hs_fts_tsv(role text, content text, tool_name text, tool_calls text)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('simple'::regconfig,
        regexp_replace(CASE WHEN role = 'tool' THEN left(COALESCE(content, ''), 8192) ELSE COALESCE(content, '') END, '[^[:alnum:]]+', ' ', 'g')
        || ' ' || regexp_replace(COALESCE(tool_name, ''), '[^[:alnum:]]+', ' ', 'g')
        || ' ' || regexp_replace(COALESCE(tool_calls, ''), '[^[:alnum:]]+', ' ', 'g'))
$$`

func postgresSearchObjects(tx *gorm.DB) error {
	if err := tx.Exec("SELECT pg_advisory_xact_lock(?, 0)", pgsql.LockClassDatabase).Error; err != nil {
		return err
	}
	var nsp []string
	if err := tx.Raw("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").Scan(&nsp).Error; err != nil {
		return err
	}
	if len(nsp) == 0 {
		if err := tx.Exec("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public").Error; err != nil {
			return fmt.Errorf("create extension pg_trgm (needed for substring and CJK search; a superuser can run CREATE EXTENSION pg_trgm SCHEMA public once): %w", err)
		}
		nsp = []string{"public"}
	}
	ops := pgsql.QuoteIdent(nsp[0]) + ".gin_trgm_ops"
	for _, q := range []string{
		pgWordDocFunc,
		"CREATE INDEX IF NOT EXISTS idx_messages_fts_word ON messages USING gin (hs_fts_tsv(role, content, tool_name, tool_calls))",
		"CREATE INDEX IF NOT EXISTS idx_messages_trgm_content ON messages USING gin (content " + ops + ")",
		"CREATE INDEX IF NOT EXISTS idx_messages_trgm_tool_name ON messages USING gin (tool_name " + ops + ")",
		"CREATE INDEX IF NOT EXISTS idx_messages_trgm_tool_calls ON messages USING gin (tool_calls " + ops + ")",
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

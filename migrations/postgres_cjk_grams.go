package migrations

import (
	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/pgsql"
)

// pgCJKClass is fts.IsCJK as a PostgreSQL regular expression bracket.
const pgCJKClass = `[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\u3000-\u303f\u3040-\u309f\u30a0-\u30ff\uac00-\ud7af]`

// postgresCJKGrams is the Postgres step of migration
// 0104_hermesstate_pg_cjk_grams: hs_cjk_grams(content, tool_name,
// tool_calls) is the set of CJK characters and adjacent CJK pairs of a
// message's three searched columns (the characters of package fts' IsCJK),
// and a GIN expression index on it serves 1-2 character CJK search, which
// pg_trgm cannot (a trigram needs three characters). A query term's pairs
// (or its single character) select the candidates; the LIKE predicate of
// the route still decides, so the answer is the scan's. Messages without
// CJK index as an empty set. On SQLite the step does nothing (the CJK
// posting index of 0007 serves it there).
func postgresCJKGrams(tx *gorm.DB) error {
	for _, q := range []string{
		`CREATE OR REPLACE FUNCTION hs_cjk_grams(content text, tool_name text, tool_calls text) RETURNS text[]
		LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
			SELECT COALESCE(array_agg(DISTINCT substr(x.run, i, n)), '{}')
			FROM regexp_matches(COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, ''),
				'` + pgCJKClass + `+', 'g') AS r(m)
			CROSS JOIN LATERAL (SELECT r.m[1]) AS x(run)
			CROSS JOIN LATERAL generate_series(1, char_length(x.run)) AS i
			CROSS JOIN (VALUES (1), (2)) AS v(n)
			WHERE i + n - 1 <= char_length(x.run)
		$f$`,
		`CREATE INDEX IF NOT EXISTS idx_hermesstate_messages_cjk_grams ON messages USING gin (hs_cjk_grams(content, tool_name, tool_calls))`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

// postgresCJKGramsInline is the Postgres step of migration
// 0105_hermesstate_pg_cjk_grams_inline: hs_cjk_grams becomes a CASE
// expression PostgreSQL inlines into the statement that evaluates it (an
// insert's index entry, a search's index match), which looks for a CJK
// character with one regular expression per column and only then calls
// hs_cjk_grams_of (0104's set query, not inlinable: each call was a query
// of its own, planned per statement). Same value for every row; the index
// of 0104 stays valid. A single append on a 200k-message store cost 0.3 ms
// more with 0104, 0.08 ms more now. The call of hs_cjk_grams_of names
// the store's schema: an inlined body is resolved with the search_path of
// the statement that plans it (any statement on messages, whose index
// expressions the planner expands), which need not hold the store's
// schema. On SQLite the step does nothing.
func postgresCJKGramsInline(tx *gorm.DB) error {
	var schema string
	if err := tx.Raw("SELECT current_schema()").Scan(&schema).Error; err != nil {
		return err
	}
	for _, q := range []string{
		`CREATE OR REPLACE FUNCTION hs_cjk_grams_of(t text) RETURNS text[]
		LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
			SELECT COALESCE(array_agg(DISTINCT substr(x.run, i, n)), '{}')
			FROM regexp_matches(t, '` + pgCJKClass + `+', 'g') AS r(m)
			CROSS JOIN LATERAL (SELECT r.m[1]) AS x(run)
			CROSS JOIN LATERAL generate_series(1, char_length(x.run)) AS i
			CROSS JOIN (VALUES (1), (2)) AS v(n)
			WHERE i + n - 1 <= char_length(x.run)
		$f$`,
		`CREATE OR REPLACE FUNCTION hs_cjk_grams(content text, tool_name text, tool_calls text) RETURNS text[]
		LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $f$
			SELECT CASE WHEN content ~ '` + pgCJKClass + `' OR tool_name ~ '` + pgCJKClass + `' OR tool_calls ~ '` + pgCJKClass + `'
				THEN ` + pgsql.QuoteIdent(schema) + `.hs_cjk_grams_of(COALESCE(content, '') || ' ' || COALESCE(tool_name, '') || ' ' || COALESCE(tool_calls, ''))
				ELSE '{}'::text[] END
		$f$`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	return nil
}

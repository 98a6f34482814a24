package migrations

import (
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

var fts5DDLRE = regexp.MustCompile(`(?is)^CREATE\s+VIRTUAL\s+TABLE\s+.*\busing\s+fts5\s*\(`)

// retokenizeFTS rebuilds every FTS5 index that does not match its content
// under the SQLite linked here (0008_fts_retokenize).
//
// Hermes wrote its files with SQLite 3.40.1, whose trigram tokenizer splits
// some text differently from ours (3.53.3): the messages_fts_trigram index
// of every fixture from v11 to v21 fails FTS5 'integrity-check' ("malformed
// inverted index") as shipped, and the v30 one fails the content comparison
// (integrity-check with rank 1). Such an index answers searches from
// another tokenization, and each later delete or update (which removes the
// tokens our tokenizer produces) corrupts it further. The step checks each
// FTS5 table once (inline tables against their own content, external-content
// tables against their content) and, only where the check fails with
// SQLITE_CORRUPT, runs FTS5 'rebuild', which re-tokenizes the content with
// our tokenizer. No message row is touched. Skipped while Hermes' own
// chunked backfill is in progress (fts_rebuild_high_water set), and for
// tables whose tokenizer cannot be loaded here (cjk_unicode61).
//
// Cost: one pass over each FTS index at the first writable open of a file
// (the migration transaction), plus a rebuild where needed.
func retokenizeFTS(tx *gorm.DB) error {
	var n int64
	if err := tx.Raw("SELECT count(*) FROM state_meta WHERE key = 'fts_rebuild_high_water'").Scan(&n).Error; err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	type obj struct{ Name, SQL string }
	var tables []obj
	if err := tx.Raw("SELECT name, COALESCE(sql, '') AS sql FROM sqlite_master WHERE type = 'table' ORDER BY name").Scan(&tables).Error; err != nil {
		return err
	}
	for _, t := range tables {
		low := strings.ToLower(t.SQL)
		if !fts5DDLRE.MatchString(t.SQL) || strings.Contains(low, "cjk_unicode61") {
			continue
		}
		q := fmt.Sprintf(`INSERT INTO %[1]s(%[1]s) VALUES ('integrity-check')`, quoteIdent(t.Name))
		if strings.Contains(low, "content=") || strings.Contains(low, "content =") {
			q = fmt.Sprintf(`INSERT INTO %[1]s(%[1]s, rank) VALUES ('integrity-check', 1)`, quoteIdent(t.Name))
		}
		err := tx.Exec(q).Error
		if err == nil {
			continue
		}
		if !sqlitex.IsCorrupt(err) {
			return fmt.Errorf("integrity-check %s: %w", t.Name, err)
		}
		if err := tx.Exec(fmt.Sprintf(`INSERT INTO %[1]s(%[1]s) VALUES ('rebuild')`, quoteIdent(t.Name))).Error; err != nil {
			return fmt.Errorf("rebuild %s: %w", t.Name, err)
		}
	}
	return nil
}

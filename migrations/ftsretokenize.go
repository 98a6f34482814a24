package migrations

import (
	"fmt"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

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
	tables, err := fts.FTSTables(tx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if t == fts.HermesCJK {
			continue // cjk_unicode61 cannot be loaded here
		}
		err := fts.IntegrityCheck(tx, t)
		if err == nil {
			continue
		}
		if !sqlitex.IsCorrupt(err) {
			return fmt.Errorf("integrity-check %s: %w", t, err)
		}
		if err := tx.Exec(fmt.Sprintf(`INSERT INTO %[1]s(%[1]s) VALUES ('rebuild')`, quoteIdent(t))).Error; err != nil {
			return fmt.Errorf("rebuild %s: %w", t, err)
		}
	}
	return nil
}

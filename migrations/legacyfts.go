package migrations

import (
	"regexp"
	"strings"

	"github.com/hermesstate/hermesstate/internal/schemaref"
	"gorm.io/gorm"
)

var (
	unqualifiedUpdateRE = regexp.MustCompile(`(?i)AFTER\s+UPDATE\s+ON\s+messages\b`)
	inlineDeleteRE      = regexp.MustCompile(`(?is)INSERT\s+INTO\s+(messages_fts(?:_trigram)?)\s*\(\s*messages_fts(?:_trigram)?\s*,\s*rowid\s*,\s*content\s*\)\s*VALUES\s*\(\s*'delete'\s*,\s*old\.id\s*,\s*old\.content\s*\)\s*;`)
)

// qualifyLegacyFTSTriggers keeps the FTS triggers of Hermes files from
// v1–v21 correct once Hermes' display triggers exist.
//
// Those files' update triggers fire on ANY update of a message row
// (AFTER UPDATE ON messages). The v30 display trigger updates display_order
// right after every insert, so an unqualified FTS update trigger would
// re-index the row before the FTS insert trigger indexes it again: a
// primary-key failure on the inline (v10–v21) tables and a duplicate entry in
// the external-content (v1–v9) table. The update triggers are therefore
// limited to the columns they index (as Hermes' current triggers are). v10's
// delete/update triggers also issue the FTS5 'delete' command against an
// inline table, which SQLite refuses (so every delete or update of a message
// failed in a v10 file); they get v11's "DELETE ... WHERE rowid = old.id".
// Trigger bodies are otherwise kept as Hermes wrote them.
func qualifyLegacyFTSTriggers(tx *gorm.DB) error {
	type trig struct{ Name, SQL string }
	var trigs []trig
	if err := tx.Raw(`SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'messages'
		AND name IN ('messages_fts_update', 'messages_fts_trigram_update', 'messages_fts_delete', 'messages_fts_trigram_delete')`).Scan(&trigs).Error; err != nil {
		return err
	}
	for _, tg := range trigs {
		table := "messages_fts"
		if strings.Contains(tg.Name, "trigram") {
			table = "messages_fts_trigram"
		}
		var ddl string
		if err := tx.Raw(`SELECT COALESCE(sql, '') FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&ddl).Error; err != nil {
			return err
		}
		external := strings.Contains(strings.ToLower(ddl), "content=") || strings.Contains(strings.ToLower(ddl), "content =")
		s := tg.SQL
		if strings.HasSuffix(tg.Name, "_update") && unqualifiedUpdateRE.MatchString(s) {
			cols := "content, tool_name, tool_calls"
			if external && !strings.Contains(ddl, "tool_name") {
				cols = "content"
			}
			s = unqualifiedUpdateRE.ReplaceAllString(s, "AFTER UPDATE OF "+cols+" ON messages")
		}
		if !external {
			s = inlineDeleteRE.ReplaceAllString(s, "DELETE FROM $1 WHERE rowid = old.id;")
		}
		if s == tg.SQL {
			continue
		}
		if err := tx.Exec(`DROP TRIGGER ` + schemaref.QuoteIdent(tg.Name)).Error; err != nil {
			return err
		}
		if err := tx.Exec(s).Error; err != nil {
			return err
		}
	}
	return nil
}

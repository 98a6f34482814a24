package ftsql

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hermesstate/hermesstate/internal/ptr"
	"gorm.io/gorm"
)

// Rebuild markers in state_meta (Hermes' names, so Hermes' search tops up
// from the not-yet-indexed gap too and its triggers skip that gap).
const (
	MetaHighWater = "fts_rebuild_high_water"
	MetaProgress  = "fts_rebuild_progress"
)

// SetMeta upserts one state_meta key.
func SetMeta(tx *gorm.DB, key, value string) error {
	return tx.Exec("INSERT INTO state_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", key, value).Error
}

// ftsTriggerNames are every FTS trigger name Hermes has used for the word
// and trigram indexes.
var ftsTriggerNames = []string{
	"messages_fts_insert", "messages_fts_delete", "messages_fts_update",
	"messages_fts_trigram_insert", "messages_fts_trigram_delete", "messages_fts_trigram_update",
}

// StartRebuild begins a chunked rebuild in one write transaction: a file in
// an older layout is converted to the current layout (old triggers and
// tables dropped, current objects created), a current one is emptied with
// 'delete-all', the trigram view and triggers feed text without U+0000
// (see TrigramWithoutNUL), and the markers are set to (progress 0, high water = the
// largest message id). Triggers then index only rows above the high water
// or at or below the progress. It returns the high water. When a rebuild
// is already pending it changes nothing and returns its high water.
func StartRebuild(tx *gorm.DB) (int64, error) {
	if hw, ok, err := metaInt64(tx, MetaHighWater); err != nil || ok {
		if ok {
			if _, has, err := metaInt64(tx, MetaProgress); err == nil && !has {
				return hw, SetMeta(tx, MetaProgress, "0")
			}
		}
		return hw, err
	}
	layout, err := DetectLayout(tx)
	if err != nil {
		return 0, err
	}
	var hw int64
	if err := tx.Raw("SELECT COALESCE(MAX(id), 0) FROM messages").Scan(&hw).Error; err != nil {
		return 0, err
	}
	if err := SetMeta(tx, MetaHighWater, fmt.Sprint(hw)); err != nil {
		return 0, err
	}
	if err := SetMeta(tx, MetaProgress, "0"); err != nil {
		return 0, err
	}
	if layout == LayoutCurrent {
		if _, err := EnsureLayout(tx); err != nil {
			return 0, err
		}
		for _, t := range []string{WordTable, TrigramTable} {
			if err := tx.Exec("INSERT INTO " + t + "(" + t + ") VALUES ('delete-all')").Error; err != nil {
				return 0, fmt.Errorf("empty %s: %w", t, err)
			}
		}
		return hw, trigramDDLWithoutNUL(tx)
	}
	for _, t := range ftsTriggerNames {
		if err := tx.Exec("DROP TRIGGER IF EXISTS " + t).Error; err != nil {
			return 0, err
		}
	}
	for _, v := range []string{"messages_fts_src", "messages_fts_trigram_src"} {
		if err := tx.Exec("DROP VIEW IF EXISTS " + v).Error; err != nil {
			return 0, err
		}
	}
	for _, t := range []string{WordTable, TrigramTable} {
		if err := tx.Exec("DROP TABLE IF EXISTS " + t).Error; err != nil {
			return 0, fmt.Errorf("drop %s: %w", t, err)
		}
	}
	for _, o := range CurrentLayout() {
		if err := tx.Exec(o.SQL).Error; err != nil {
			return 0, fmt.Errorf("create %s %s: %w", o.Type, o.Name, err)
		}
	}
	return hw, trigramDDLWithoutNUL(tx)
}

func metaInt64(tx *gorm.DB, key string) (int64, bool, error) {
	var vals []string
	if err := tx.Raw("SELECT value FROM state_meta WHERE key = ?", key).Pluck("value", &vals).Error; err != nil {
		return 0, false, err
	}
	if len(vals) == 0 {
		return 0, false, nil
	}
	var n int64
	if _, err := fmt.Sscan(strings.TrimSpace(vals[0]), &n); err != nil {
		return 0, false, nil
	}
	return n, true, nil
}

// RebuildStep indexes the next chunk of message ids (progress, progress +
// chunk] into both tables and advances the progress marker in the same
// transaction. It returns the new progress, the high water, and whether
// work remains; done with no markers present means no rebuild is pending.
func RebuildStep(tx *gorm.DB, chunk int) (progress, highWater int64, more bool, err error) {
	hw, ok, err := metaInt64(tx, MetaHighWater)
	if err != nil || !ok {
		return 0, 0, false, err
	}
	p, _, err := metaInt64(tx, MetaProgress)
	if err != nil {
		return 0, hw, false, err
	}
	if p >= hw {
		return p, hw, false, nil
	}
	upper := min(p+int64(chunk), hw)
	if err := tx.Exec("INSERT INTO messages_fts(rowid, content, tool_name, tool_calls) SELECT id, content, tool_name, tool_calls FROM messages_fts_src WHERE id > ? AND id <= ?", p, upper).Error; err != nil {
		return p, hw, true, err
	}
	if err := tx.Exec("INSERT INTO messages_fts_trigram(rowid, content, tool_name) SELECT id, content, tool_name FROM messages_fts_trigram_src WHERE id > ? AND id <= ?", p, upper).Error; err != nil {
		return p, hw, true, err
	}
	if err := SetMeta(tx, MetaProgress, fmt.Sprint(upper)); err != nil {
		return p, hw, true, err
	}
	return upper, hw, upper < hw, nil
}

// FinishRebuild indexes any row near the high water the index lacks (a
// write that raced the start), clears the markers and records
// fts_storage_version = 3.
func FinishRebuild(tx *gorm.DB) error {
	hw, ok, err := metaInt64(tx, MetaHighWater)
	if err != nil || !ok {
		return err
	}
	if err := tx.Exec(`INSERT INTO messages_fts(rowid, content, tool_name, tool_calls)
SELECT v.id, v.content, v.tool_name, v.tool_calls FROM messages_fts_src v
WHERE v.id > ? AND v.id <= ? AND NOT EXISTS (SELECT 1 FROM messages_fts_docsize d WHERE d.id = v.id)`, hw-1000, hw+1000).Error; err != nil {
		return err
	}
	if err := tx.Exec(`INSERT INTO messages_fts_trigram(rowid, content, tool_name)
SELECT v.id, v.content, v.tool_name FROM messages_fts_trigram_src v
WHERE v.id > ? AND v.id <= ? AND NOT EXISTS (SELECT 1 FROM messages_fts_trigram_docsize d WHERE d.id = v.id)`, hw-1000, hw+1000).Error; err != nil {
		return err
	}
	if err := tx.Exec("DELETE FROM state_meta WHERE key IN (?, ?)", MetaHighWater, MetaProgress).Error; err != nil {
		return err
	}
	return SetMeta(tx, "fts_storage_version", "3")
}

// FTSTables returns the FTS5 tables present among Hermes' index names.
func FTSTables(tx *gorm.DB) ([]string, error) {
	var names []string
	err := tx.Raw("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?) AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
		WordTable, TrigramTable, HermesCJK).Pluck("name", &names).Error
	return names, err
}

// IntegrityCheck runs FTS5 'integrity-check' on table (with rank 1, so an
// external-content table is also compared with its content). It returns
// SQLite's error when the index is inconsistent.
func IntegrityCheck(tx *gorm.DB, table string) error {
	return tx.Exec("INSERT INTO " + table + "(" + table + ", rank) VALUES ('integrity-check', 1)").Error
}

// CheckCJKIndex checks the postings against the messages: every message
// that is not queued (CJKPendingTable) has each term of its text in its
// postings, and every posting of an id that is neither queued nor recorded
// as edited or deleted (CJKGoneTable, whose old postings may remain) is a
// term of that message's text. It returns the number of messages checked
// and a description of the first mismatch.
func CheckCJKIndex(tx *gorm.DB) (int, string, error) {
	skip := map[int64]bool{}
	for _, t := range []string{CJKPendingTable, CJKGoneTable} {
		var ids []int64
		if err := tx.Raw("SELECT id FROM " + t).Scan(&ids).Error; err != nil {
			return 0, "", err
		}
		for _, id := range ids {
			skip[id] = true
		}
	}
	// Every term's ids, and how many postings count (ids not skipped).
	lists := map[string][]int64{}
	rows, err := tx.Raw("SELECT term, ids FROM " + CJKIndexTable).Rows()
	if err != nil {
		return 0, "", err
	}
	for rows.Next() {
		var t string
		var b []byte
		if err := rows.Scan(&t, &b); err != nil {
			rows.Close()
			return 0, "", err
		}
		var ok bool
		if lists[t], ok = DecodePostings(lists[t], b); !ok {
			rows.Close()
			return 0, fmt.Sprintf("a posting chunk of %q is malformed", t), nil
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, "", err
	}
	counted := map[int64]int{}
	for t, ids := range lists {
		ids = sortDistinct(ids)
		lists[t] = ids
		for _, id := range ids {
			if !skip[id] {
				counted[id]++
			}
		}
	}
	checked := 0
	var last int64
	for {
		type row struct {
			ID        int64
			Content   *string
			ToolName  *string
			ToolCalls *string
		}
		var rows []row
		if err := tx.Raw("SELECT id, content, tool_name, tool_calls FROM messages WHERE id > ? ORDER BY id LIMIT 1000", last).Scan(&rows).Error; err != nil {
			return checked, "", err
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			last = r.ID
			if skip[r.ID] {
				continue
			}
			want := CJKTerms(ptr.Deref(r.Content), ptr.Deref(r.ToolName), ptr.Deref(r.ToolCalls))
			for _, t := range want {
				if _, found := slices.BinarySearch(lists[t], r.ID); !found {
					return checked, fmt.Sprintf("message %d: its term %q has no posting", r.ID, t), nil
				}
			}
			if got := counted[r.ID]; got != len(want) {
				return checked, fmt.Sprintf("message %d: index holds %d terms, its text has %d", r.ID, got, len(want)), nil
			}
			delete(counted, r.ID)
			checked++
		}
	}
	for id := range counted {
		return checked, fmt.Sprintf("postings for message %d, which does not exist", id), nil
	}
	return checked, "", nil
}

// ResetCJKIndex empties the CJK index (recreating its tables and triggers
// in the current layout, dropping a legacy one) and queues every message
// again.
func ResetCJKIndex(tx *gorm.DB) error {
	for _, t := range CJKTriggerNames {
		if err := tx.Exec("DROP TRIGGER IF EXISTS " + t).Error; err != nil {
			return err
		}
	}
	if err := tx.Exec("DROP TABLE IF EXISTS " + CJKLegacyTable).Error; err != nil {
		return err
	}
	for _, q := range CJKIndexDDL() {
		if err := tx.Exec(q).Error; err != nil {
			return err
		}
	}
	if err := tx.Exec("DELETE FROM " + CJKIndexTable).Error; err != nil {
		return err
	}
	if err := tx.Exec("DELETE FROM " + CJKGoneTable).Error; err != nil {
		return err
	}
	return tx.Exec("INSERT OR IGNORE INTO " + CJKPendingTable + " (id) SELECT id FROM messages").Error
}

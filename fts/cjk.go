package fts

import (
	"fmt"
	"sort"
	"strings"

	"gorm.io/gorm"
)

// hermesstate's own CJK index. Hermes serves 1–2 character CJK queries
// well only through a native tokenizer (cjk_unicode61) that a pure-Go
// build cannot load, and otherwise scans with LIKE. We keep a posting table
// of CJK unigrams and bigrams instead:
//
//   - CJKIndexTable (term, msg_id): every CJK character and every pair of
//     adjacent CJK characters of content, tool_name and tool_calls;
//   - CJKPendingTable (id): messages whose postings are not written yet.
//
// Three triggers written in plain SQL (so any writer, Hermes included,
// keeps them) queue inserted and edited rows in CJKPendingTable and delete
// the postings of edited and deleted rows in the same transaction as the
// write. Go code (IndexPending) turns queued rows into postings: our own
// appends do it inside their insert transaction, and a search first catches
// up and in any case treats still-queued rows as candidates, so results are
// always exact. Candidates from the index are verified with the same LIKE
// predicate Hermes uses, so the index changes speed, never results.
const (
	CJKIndexTable   = "hermesstate_cjk_index"
	CJKPendingTable = "hermesstate_cjk_pending"
)

// CJKIndexDDL returns the statements that create the CJK index, its queue
// and its triggers (all IF NOT EXISTS).
func CJKIndexDDL() []string {
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + CJKIndexTable + ` (
    term TEXT NOT NULL,
    msg_id INTEGER NOT NULL,
    PRIMARY KEY (term, msg_id)
) WITHOUT ROWID`,
		`CREATE INDEX IF NOT EXISTS ` + CJKIndexTable + `_msg ON ` + CJKIndexTable + ` (msg_id)`,
		`CREATE TABLE IF NOT EXISTS ` + CJKPendingTable + ` (id INTEGER PRIMARY KEY)`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_cjk_insert AFTER INSERT ON messages
BEGIN
    INSERT OR IGNORE INTO ` + CJKPendingTable + ` (id) VALUES (new.id);
END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_cjk_update
AFTER UPDATE OF content, tool_name, tool_calls ON messages
WHEN old.content IS NOT new.content OR old.tool_name IS NOT new.tool_name
  OR old.tool_calls IS NOT new.tool_calls OR old.id IS NOT new.id
BEGIN
    DELETE FROM ` + CJKIndexTable + ` WHERE msg_id = old.id;
    INSERT OR IGNORE INTO ` + CJKPendingTable + ` (id) VALUES (new.id);
END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_cjk_delete AFTER DELETE ON messages
BEGIN
    DELETE FROM ` + CJKIndexTable + ` WHERE msg_id = old.id;
    DELETE FROM ` + CJKPendingTable + ` WHERE id = old.id;
END`,
	}
}

// EnsureCJKIndex creates the CJK index when it is missing and queues every
// existing message for indexing (IndexPending does the work in chunks).
func EnsureCJKIndex(tx *gorm.DB) error {
	had, err := HasTable(tx, CJKIndexTable)
	if err != nil {
		return err
	}
	for _, q := range CJKIndexDDL() {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("cjk index: %w", err)
		}
	}
	if had {
		return nil
	}
	return tx.Exec("INSERT OR IGNORE INTO " + CJKPendingTable + " (id) SELECT id FROM messages").Error
}

// CJKTerms returns the distinct index terms of the given texts: every CJK
// character and every pair of adjacent CJK characters, sorted.
func CJKTerms(texts ...string) []string {
	set := map[string]struct{}{}
	for _, t := range texts {
		prev := rune(-1)
		for _, r := range t {
			if !IsCJK(r) {
				prev = -1
				continue
			}
			set[string(r)] = struct{}{}
			if prev >= 0 {
				set[string([]rune{prev, r})] = struct{}{}
			}
			prev = r
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// QueryTerms returns the index terms every row containing tok as a
// substring must have: the bigrams of each CJK run of two or more
// characters and the character of each lone CJK run. ok is false when tok
// has no CJK character (the index cannot narrow it).
func QueryTerms(tok string) (terms []string, ok bool) {
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			terms = append(terms, s)
		}
	}
	var run []rune
	flush := func() {
		switch {
		case len(run) == 1:
			add(string(run))
		case len(run) > 1:
			for i := 1; i < len(run); i++ {
				add(string(run[i-1 : i+1]))
			}
		}
		run = run[:0]
	}
	for _, r := range tok {
		if IsCJK(r) {
			run = append(run, r)
			continue
		}
		flush()
	}
	flush()
	return terms, len(terms) > 0
}

// IndexPending writes the postings of up to limit queued messages (limit
// <= 0: all) and removes them from the queue. It returns how many were
// indexed. tx must be a write transaction.
func IndexPending(tx *gorm.DB, limit int) (int, error) {
	q := "SELECT p.id, m.content, m.tool_name, m.tool_calls FROM " + CJKPendingTable + " p LEFT JOIN messages m ON m.id = p.id ORDER BY p.id"
	if limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", limit)
	}
	return indexRows(tx, q)
}

// IndexPendingIDs indexes the queued messages among ids.
func IndexPendingIDs(tx *gorm.DB, ids []int64) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, id)
	}
	return indexRows(tx, "SELECT p.id, m.content, m.tool_name, m.tool_calls FROM "+CJKPendingTable+" p LEFT JOIN messages m ON m.id = p.id WHERE p.id IN ("+b.String()+")")
}

// DequeuePending removes ids from the CJK queue without indexing them: for
// rows the caller knows hold no CJK character (no postings to write).
func DequeuePending(tx *gorm.DB, ids []int64) error {
	for i := 0; i < len(ids); i += 500 {
		j := min(i+500, len(ids))
		args := make([]any, j-i)
		for k, id := range ids[i:j] {
			args[k] = id
		}
		ph := strings.TrimSuffix(strings.Repeat("?,", j-i), ",")
		if err := tx.Exec("DELETE FROM "+CJKPendingTable+" WHERE id IN ("+ph+")", args...).Error; err != nil {
			return err
		}
	}
	return nil
}

func indexRows(tx *gorm.DB, q string) (int, error) {
	type row struct {
		ID        int64
		Content   *string
		ToolName  *string
		ToolCalls *string
	}
	var rows []row
	if err := tx.Raw(q).Scan(&rows).Error; err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	const per = 400 // (term, id) pairs per INSERT, well under the variable limit
	var args []any
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		ph := strings.TrimSuffix(strings.Repeat("(?, ?),", len(args)/2), ",")
		err := tx.Exec("INSERT OR IGNORE INTO "+CJKIndexTable+" (term, msg_id) VALUES "+ph, args...).Error
		args = args[:0]
		return err
	}
	ids := make([]any, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
		for _, t := range CJKTerms(deref(r.Content), deref(r.ToolName), deref(r.ToolCalls)) {
			args = append(args, t, r.ID)
			if len(args) >= 2*per {
				if err := flush(); err != nil {
					return 0, err
				}
			}
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	for i := 0; i < len(ids); i += 500 {
		j := min(i+500, len(ids))
		ph := strings.TrimSuffix(strings.Repeat("?,", j-i), ",")
		if err := tx.Exec("DELETE FROM "+CJKPendingTable+" WHERE id IN ("+ph+")", ids[i:j]...).Error; err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

package ftsql

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hermesstate/hermesstate/fts"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"gorm.io/gorm"
)

// hermesstate's own CJK index. Hermes serves 1–2 character CJK queries
// well only through a native tokenizer (cjk_unicode61) that a pure-Go
// build cannot load, and otherwise scans with LIKE. We keep postings of CJK
// unigrams and bigrams instead:
//
//   - CJKIndexTable (term, chunk, last, ids): for every CJK character and
//     every pair of adjacent CJK characters of content, tool_name and
//     tool_calls, the ids of the messages holding it, as zig-zag varint
//     deltas in chunks of at most cjkChunkBytes (chunk 0 is the one being
//     appended to, last its last id; full chunks get numbers 1, 2, …);
//   - CJKPendingTable (id): messages whose postings are not written yet;
//   - CJKGoneTable (id): messages deleted or edited since their postings
//     were written (their old postings may remain until CollectCJKGarbage).
//
// Three triggers written in plain SQL (so any writer, Hermes included,
// keeps them) queue inserted and edited rows in CJKPendingTable and record
// edited and deleted ones in CJKGoneTable, in the same transaction as the
// write. Go code (IndexPending) turns queued rows into postings: our own
// appends do it inside their insert transaction, and a search first catches
// up and in any case treats still-queued rows as candidates. The postings
// are thus a superset of the rows holding each term (a stale posting of an
// edited or deleted row costs one candidate check), and candidates are
// verified with the same LIKE predicate Hermes uses, so the index changes
// speed, never results.
//
// Before schema step 0103 the index was a (term, msg_id) table with an
// index on msg_id (CJKLegacyTable), about 30 bytes per posting against
// about 1.5 here; ConvertLegacyCJKIndex moves a file to this layout.
const (
	CJKIndexTable   = "hermesstate_cjk_postings"
	CJKPendingTable = "hermesstate_cjk_pending"
	CJKGoneTable    = "hermesstate_cjk_gone"
	// CJKLegacyTable is the posting table of the layout before 0103.
	CJKLegacyTable = "hermesstate_cjk_index"
)

// cjkChunkBytes bounds a chunk's ids so that a row stays inside one page of
// its WITHOUT ROWID b-tree (no overflow page to rewrite on append).
const cjkChunkBytes = 900

// IsCJKTable reports whether name is one of hermesstate's CJK index tables
// (derived data: rebuilt from the messages, never copied).
func IsCJKTable(name string) bool {
	switch name {
	case CJKIndexTable, CJKPendingTable, CJKGoneTable, CJKLegacyTable, CJKLegacyTable + "_msg":
		return true
	}
	return false
}

// cjkTriggers are the triggers of the CJK index (names unchanged since the
// first layout).
func cjkTriggers() []string {
	return []string{
		`CREATE TRIGGER IF NOT EXISTS hermesstate_cjk_insert AFTER INSERT ON messages
BEGIN
    INSERT OR IGNORE INTO ` + CJKPendingTable + ` (id) VALUES (new.id);
END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_cjk_update
AFTER UPDATE OF content, tool_name, tool_calls ON messages
WHEN old.content IS NOT new.content OR old.tool_name IS NOT new.tool_name
  OR old.tool_calls IS NOT new.tool_calls OR old.id IS NOT new.id
BEGIN
    INSERT OR IGNORE INTO ` + CJKGoneTable + ` (id) VALUES (old.id);
    INSERT OR IGNORE INTO ` + CJKPendingTable + ` (id) VALUES (new.id);
END`,
		`CREATE TRIGGER IF NOT EXISTS hermesstate_cjk_delete AFTER DELETE ON messages
BEGIN
    INSERT OR IGNORE INTO ` + CJKGoneTable + ` (id) VALUES (old.id);
    DELETE FROM ` + CJKPendingTable + ` WHERE id = old.id;
END`,
	}
}

// CJKTriggerNames are the names of the CJK index triggers.
var CJKTriggerNames = []string{"hermesstate_cjk_insert", "hermesstate_cjk_update", "hermesstate_cjk_delete"}

// CJKIndexDDL returns the statements that create the CJK index, its queues
// and its triggers (all IF NOT EXISTS).
func CJKIndexDDL() []string {
	return append([]string{
		`CREATE TABLE IF NOT EXISTS ` + CJKIndexTable + ` (
    term TEXT NOT NULL,
    chunk INTEGER NOT NULL,
    last INTEGER NOT NULL,
    ids BLOB NOT NULL,
    PRIMARY KEY (term, chunk)
) WITHOUT ROWID`,
		`CREATE TABLE IF NOT EXISTS ` + CJKPendingTable + ` (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE IF NOT EXISTS ` + CJKGoneTable + ` (id INTEGER PRIMARY KEY)`,
	}, cjkTriggers()...)
}

// EnsureCJKIndex creates the CJK index when it is missing and queues every
// existing message for indexing (IndexPending does the work in chunks). A
// file with the layout before 0103 is converted (ConvertLegacyCJKIndex).
func EnsureCJKIndex(tx *gorm.DB) error {
	legacy, err := HasTable(tx, CJKLegacyTable)
	if err != nil {
		return err
	}
	if legacy {
		return ConvertLegacyCJKIndex(tx)
	}
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

// ConvertLegacyCJKIndex moves a CJK index of the layout before 0103
// ((term, msg_id) rows and an index on msg_id) to the chunked postings:
// every posting is kept (read in term order and written as chunks), the
// old table and its index are dropped, and the triggers are replaced by
// the current ones. The queue is kept as it is. tx must be a write
// transaction.
func ConvertLegacyCJKIndex(tx *gorm.DB) error {
	for _, t := range CJKTriggerNames {
		if err := tx.Exec("DROP TRIGGER IF EXISTS " + t).Error; err != nil {
			return err
		}
	}
	for _, q := range CJKIndexDDL() {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("cjk index: %w", err)
		}
	}
	rows, err := tx.Raw("SELECT term, msg_id FROM " + CJKLegacyTable + " ORDER BY term, msg_id").Rows()
	if err != nil {
		return err
	}
	w := newPostingWriter(tx)
	var term string
	var ids []int64
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		err := w.addChunks(term, ids)
		ids = ids[:0]
		return err
	}
	for rows.Next() {
		var t string
		var id int64
		if err := rows.Scan(&t, &id); err != nil {
			rows.Close()
			return err
		}
		if t != term {
			if err := flush(); err != nil {
				rows.Close()
				return err
			}
			term = t
		}
		ids = append(ids, id)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return err
	}
	return tx.Exec("DROP TABLE " + CJKLegacyTable).Error
}

// CJKTerms returns the distinct index terms of the given texts: every CJK
// character and every pair of adjacent CJK characters, sorted.
func CJKTerms(texts ...string) []string {
	set := map[string]struct{}{}
	for _, t := range texts {
		prev := rune(-1)
		for _, r := range t {
			if !fts.IsCJK(r) {
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
		if fts.IsCJK(r) {
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
	byTerm := map[string][]int64{}
	ids := make([]any, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
		for _, t := range CJKTerms(ptr.Deref(r.Content), ptr.Deref(r.ToolName), ptr.Deref(r.ToolCalls)) {
			byTerm[t] = append(byTerm[t], r.ID)
		}
	}
	if err := appendPostings(tx, byTerm); err != nil {
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

// appendPostings adds ids to the open chunk (chunk 0) of each term: one
// statement reads the open chunks' last id and size, full chunks are
// numbered in one statement, and one upsert per 400 terms appends the new
// deltas (ids || excluded.ids), so the chunks are never read back.
func appendPostings(tx *gorm.DB, byTerm map[string][]int64) error {
	terms := make([]string, 0, len(byTerm))
	for t := range byTerm {
		terms = append(terms, t)
	}
	sort.Strings(terms)
	type open struct{ last, size int64 }
	opened := map[string]open{}
	for i := 0; i < len(terms); i += 500 {
		part := terms[i:min(i+500, len(terms))]
		args := make([]any, len(part))
		for k, t := range part {
			args[k] = t
		}
		rows, err := tx.Raw("SELECT term, last, length(ids) FROM "+CJKIndexTable+" WHERE chunk = 0 AND term IN ("+
			strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+")", args...).Rows()
		if err != nil {
			return err
		}
		for rows.Next() {
			var t string
			var o open
			if err := rows.Scan(&t, &o.last, &o.size); err != nil {
				rows.Close()
				return err
			}
			opened[t] = o
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return err
		}
	}
	var full []any
	type add struct {
		term  string
		last  int64
		delta []byte
	}
	adds := make([]add, 0, len(terms))
	for _, t := range terms {
		o, ok := opened[t]
		base := int64(0)
		if ok {
			base = o.last
		}
		delta := encodeDeltas(nil, base, byTerm[t])
		if ok && o.size+int64(len(delta)) > cjkChunkBytes {
			full = append(full, t)
			delta = encodeDeltas(delta[:0], 0, byTerm[t])
		}
		ids := byTerm[t]
		adds = append(adds, add{t, ids[len(ids)-1], delta})
	}
	for i := 0; i < len(full); i += 500 {
		part := full[i:min(i+500, len(full))]
		if err := tx.Exec("UPDATE "+CJKIndexTable+" SET chunk = (SELECT max(p.chunk) + 1 FROM "+CJKIndexTable+" p WHERE p.term = "+
			CJKIndexTable+".term) WHERE chunk = 0 AND term IN ("+strings.TrimSuffix(strings.Repeat("?,", len(part)), ",")+")", part...).Error; err != nil {
			return err
		}
	}
	const per = 400
	for i := 0; i < len(adds); i += per {
		part := adds[i:min(i+per, len(adds))]
		args := make([]any, 0, 3*len(part))
		for _, a := range part {
			args = append(args, a.term, a.last, a.delta)
		}
		if err := tx.Exec("INSERT INTO "+CJKIndexTable+" (term, chunk, last, ids) VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, 0, ?, ?),", len(part)), ",")+
			" ON CONFLICT (term, chunk) DO UPDATE SET last = excluded.last, ids = ids || excluded.ids", args...).Error; err != nil {
			return err
		}
	}
	return nil
}

// encodeDeltas appends to dst the zig-zag varint deltas of ids, the first
// relative to base.
func encodeDeltas(dst []byte, base int64, ids []int64) []byte {
	prev := base
	for _, id := range ids {
		dst = binary.AppendVarint(dst, id-prev)
		prev = id
	}
	return dst
}

// DecodePostings appends the ids of one chunk to dst (in the order they
// were written; they may repeat). A malformed chunk stops at the damage and
// reports false.
func DecodePostings(dst []int64, chunk []byte) ([]int64, bool) {
	prev := int64(0)
	for len(chunk) > 0 {
		d, n := binary.Varint(chunk)
		if n <= 0 {
			return dst, false
		}
		prev += d
		dst = append(dst, prev)
		chunk = chunk[n:]
	}
	return dst, true
}

// postingWriter writes whole chunks (conversion, garbage collection), 400
// rows per statement; with upsert a chunk that exists is replaced.
type postingWriter struct {
	tx     *gorm.DB
	upsert bool
	args   []any
	rows   int
}

func (w *postingWriter) add(term string, chunk, last int64, ids []byte) error {
	w.args = append(w.args, term, chunk, last, ids)
	w.rows++
	if w.rows >= 400 {
		return w.flush()
	}
	return nil
}

func newPostingWriter(tx *gorm.DB) *postingWriter { return &postingWriter{tx: tx} }

// addChunks writes the sorted, distinct ids of term as chunks 1…k-1 (full)
// and 0 (the open one). The term must have no chunk yet.
func (w *postingWriter) addChunks(term string, ids []int64) error {
	var chunks [][]byte
	var cur []byte
	var prev int64
	var lasts []int64
	for i, id := range ids {
		if len(cur) >= cjkChunkBytes-10 {
			chunks = append(chunks, cur)
			lasts = append(lasts, ids[i-1])
			cur, prev = nil, 0
		}
		cur = binary.AppendVarint(cur, id-prev)
		prev = id
	}
	chunks = append(chunks, cur)
	lasts = append(lasts, ids[len(ids)-1])
	for i, c := range chunks {
		no := int64(i + 1)
		if i == len(chunks)-1 {
			no = 0
		}
		if err := w.add(term, no, lasts[i], c); err != nil {
			return err
		}
	}
	return nil
}

func (w *postingWriter) flush() error {
	if w.rows == 0 {
		return nil
	}
	q := "INSERT INTO " + CJKIndexTable + " (term, chunk, last, ids) VALUES " +
		strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?),", w.rows), ",")
	if w.upsert {
		q += " ON CONFLICT (term, chunk) DO UPDATE SET last = excluded.last, ids = excluded.ids"
	}
	err := w.tx.Exec(q, w.args...).Error
	w.args, w.rows = w.args[:0], 0
	return err
}

// CandidateIDs returns, sorted and distinct, the ids of the messages whose
// postings hold every one of terms (at most the first maxTermsPerToken are
// used; the caller verifies the candidates). tx may be any reader.
func CandidateIDs(tx *gorm.DB, terms []string) ([]int64, error) {
	if len(terms) > maxTermsPerToken {
		terms = terms[:maxTermsPerToken]
	}
	lists, err := readPostings(tx, terms)
	if err != nil {
		return nil, err
	}
	var out []int64
	for i, t := range terms {
		ids := lists[t]
		if i == 0 {
			out = ids
			continue
		}
		out = intersectSorted(out, ids)
		if len(out) == 0 {
			break
		}
	}
	return out, nil
}

// readPostings reads every chunk of terms with one statement and returns
// each term's ids sorted and distinct.
func readPostings(tx *gorm.DB, terms []string) (map[string][]int64, error) {
	out := make(map[string][]int64, len(terms))
	if len(terms) == 0 {
		return out, nil
	}
	args := make([]any, len(terms))
	for i, t := range terms {
		args[i] = t
	}
	rows, err := tx.Raw("SELECT term, ids FROM "+CJKIndexTable+" WHERE term IN ("+
		strings.TrimSuffix(strings.Repeat("?,", len(terms)), ",")+")", args...).Rows()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var b []byte
		if err := rows.Scan(&t, &b); err != nil {
			return nil, err
		}
		out[t], _ = DecodePostings(out[t], b)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for t, ids := range out {
		out[t] = sortDistinct(ids)
	}
	return out, nil
}

func sortDistinct(ids []int64) []int64 {
	if !slices.IsSorted(ids) {
		slices.Sort(ids)
	}
	return slices.Compact(ids)
}

func intersectSorted(a, b []int64) []int64 {
	out := a[:0:0]
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}

// CollectCJKGarbage removes from the postings every id recorded in
// CJKGoneTable (rewriting only the chunks that hold one), queues again
// those of them that still exist (edited rows: their current terms are
// written by the next IndexPending), and empties CJKGoneTable. It returns
// how many ids it processed. tx must be a write transaction.
func CollectCJKGarbage(tx *gorm.DB) (int, error) {
	var gone []int64
	if err := tx.Raw("SELECT id FROM " + CJKGoneTable + " ORDER BY id").Scan(&gone).Error; err != nil {
		return 0, err
	}
	if len(gone) == 0 {
		return 0, nil
	}
	isGone := make(map[int64]bool, len(gone))
	for _, id := range gone {
		isGone[id] = true
	}
	type chunk struct {
		Term  string
		Chunk int64
		Last  int64
		IDs   []byte
	}
	rows, err := tx.Raw("SELECT term, chunk, last, ids FROM " + CJKIndexTable).Rows()
	if err != nil {
		return 0, err
	}
	var dirty []chunk
	var buf []int64
	for rows.Next() {
		var c chunk
		if err := rows.Scan(&c.Term, &c.Chunk, &c.Last, &c.IDs); err != nil {
			rows.Close()
			return 0, err
		}
		buf, _ = DecodePostings(buf[:0], c.IDs)
		hit := false
		for _, id := range buf {
			if isGone[id] {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		keep := buf[:0]
		for _, id := range buf {
			if !isGone[id] {
				keep = append(keep, id)
			}
		}
		c.IDs = encodeDeltas(nil, 0, keep)
		if len(keep) > 0 {
			c.Last = keep[len(keep)-1]
		}
		dirty = append(dirty, c)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return 0, err
	}
	w := &postingWriter{tx: tx, upsert: true}
	var empty []any
	for _, c := range dirty {
		if len(c.IDs) == 0 {
			empty = append(empty, c.Term, c.Chunk)
			continue
		}
		if err := w.add(c.Term, c.Chunk, c.Last, c.IDs); err != nil {
			return 0, err
		}
	}
	if err := w.flush(); err != nil {
		return 0, err
	}
	for i := 0; i < len(empty); i += 800 {
		part := empty[i:min(i+800, len(empty))]
		if err := tx.Exec("DELETE FROM "+CJKIndexTable+" WHERE (term, chunk) IN (VALUES "+
			strings.TrimSuffix(strings.Repeat("(?, ?),", len(part)/2), ",")+")", part...).Error; err != nil {
			return 0, err
		}
	}
	if err := tx.Exec("INSERT OR IGNORE INTO " + CJKPendingTable + " (id) SELECT g.id FROM " + CJKGoneTable + " g JOIN messages m ON m.id = g.id").Error; err != nil {
		return 0, err
	}
	if err := tx.Exec("DELETE FROM " + CJKGoneTable).Error; err != nil {
		return 0, err
	}
	return len(gone), nil
}

package ftsql

import (
	"fmt"
	"regexp"
	"strings"

	"gorm.io/gorm"
)

// The trigram index and U+0000.
//
// SQLite's trigram tokenizer up to 3.44 stopped at the first U+0000 of a
// text; from 3.45 (the rewrite that added remove_diacritics) it skips the
// character and goes on. Hermes stores multimodal content as "\x00json:" +
// JSON, so the same text is indexed differently by the SQLite Hermes runs
// on (3.40.1 on the files it wrote: nothing of "\x00json:...") and by ours
// (3.54.1: the trigrams of the JSON text), and when one of them deletes or
// updates a row the other indexed, FTS5 removes the tokens it computes, not
// the ones stored: the index keeps stale entries and fails integrity-check
// under both. For text without U+0000 both produce the same trigrams.
//
// So the trigram index is fed each text up to its first U+0000: the content
// view and the triggers wrap the indexed columns in
// CASE WHEN instr(X, char(0)) > 0 THEN substr(X, 1, instr(X, char(0)) - 1)
// ELSE X END. Every SQLite then produces the same trigrams, and they are
// the ones SQLite 3.40.1 wrote into Hermes' files (whose indexes stay valid
// as they are). replace(X, char(0), '') cannot do it: replace() takes a
// pattern whose first byte is 0 for an empty one and returns X unchanged,
// in 3.40.1 and 3.54.1 alike. Both programs run the triggers that are in
// the file, and Hermes creates its FTS objects only IF NOT EXISTS, so it
// keeps them.

// nulFreeMark is in the SQL of every object TrigramWithoutNUL rewrote.
const nulFreeMark = "char(0)"

var (
	viewColsRE  = regexp.MustCompile(`(?s)^(.*?SELECT\s+)(\S+)\.id,\s*(\S+)\.role,\s*(\S+)\.content,\s*(\S+)\.tool_name(\s+FROM.*)$`)
	inlineExpr  = "COALESCE(new.content, '') || ' ' || COALESCE(new.tool_name, '') || ' ' || COALESCE(new.tool_calls, '')"
	bodyStartRE = regexp.MustCompile(`(?m)^BEGIN\b|\bBEGIN\s*$`)
	colRefRE    = regexp.MustCompile(`\b(new|old)\.(content|tool_name)\b`)
)

// nulFreeView rewrites the trigram content view so that it presents
// content and tool_name up to their first U+0000; ok is false when its SQL
// is not the shape Hermes writes.
func nulFreeView(sql string) (string, bool) {
	m := viewColsRE.FindStringSubmatch(sql)
	if m == nil || m[2] != m[3] || m[2] != m[4] || m[2] != m[5] {
		return "", false
	}
	a := m[2]
	return fmt.Sprintf("%s%s.id, %s.role, %s AS content, %s AS tool_name%s", m[1], a, a, beforeNul(a+".content"), beforeNul(a+".tool_name"), m[6]), true
}

// nulFreeTrigger rewrites a trigram trigger so that what it writes into
// the index stops before any U+0000: in its body, the inline layout's
// concatenation is cut (beforeNul), and the current layout's new./old.
// content and tool_name are. Its WHEN clause is left as it is. need is false when the
// body writes no text (an inline delete by rowid) or is rewritten already;
// ok is false when the SQL has no body.
func nulFreeTrigger(sql string) (out string, need, ok bool) {
	loc := bodyStartRE.FindStringIndex(sql)
	if loc == nil {
		return "", false, false
	}
	if strings.Contains(sql, nulFreeMark) {
		return sql, false, true
	}
	head, body := sql[:loc[1]], sql[loc[1]:]
	if strings.Contains(body, inlineExpr) {
		body = strings.ReplaceAll(body, inlineExpr, beforeNul(inlineExpr))
	} else {
		body = colRefRE.ReplaceAllStringFunc(body, beforeNul)
	}
	out = head + body
	return out, out != sql, true
}

// rewriteFor returns the NUL-free SQL of the trigram object name (the
// content view when name is content, else a trigger); need is false when
// it needs none, ok false when its shape is unknown.
func rewriteFor(name, sql, content string) (out string, need, ok bool) {
	if name == content {
		if strings.Contains(sql, nulFreeMark) {
			return sql, false, true
		}
		out, ok = nulFreeView(sql)
		return out, ok, ok
	}
	return nulFreeTrigger(sql)
}

// trigramTriggers are the names of the trigram triggers.
var trigramTriggers = []string{TrigramTable + "_insert", TrigramTable + "_delete", TrigramTable + "_update"}

// contentOption returns the content= option of an FTS5 table's SQL ("" for
// an inline table).
func contentOption(sql string) string {
	m := regexp.MustCompile(`(?i)\bcontent\s*=\s*'([^']*)'`).FindStringSubmatch(sql)
	if m == nil {
		return ""
	}
	return m[1]
}

// TrigramFeedsNUL reports whether the file's trigram index is fed text
// that may hold U+0000 (its view or triggers are not rewritten by
// TrigramWithoutNUL yet); false when there is no trigram table.
func TrigramFeedsNUL(tx *gorm.DB) (bool, error) {
	objs, content, err := trigramObjects(tx)
	if err != nil {
		return false, err
	}
	for name, sql := range objs {
		if _, need, ok := rewriteFor(name, sql, content); need && ok {
			return true, nil
		}
	}
	return false, nil
}

// trigramObjects returns the SQL of the trigram content view (when the
// table has external content) and triggers, by name, and the table's
// content option.
func trigramObjects(tx *gorm.DB) (map[string]string, string, error) {
	tsql, ok, err := objectSQL(tx, "table", TrigramTable)
	if err != nil || !ok {
		return nil, "", err
	}
	out := map[string]string{}
	content := contentOption(tsql)
	if content != "" {
		v, ok, err := objectSQL(tx, "view", content)
		if err != nil {
			return nil, "", err
		}
		if ok {
			out[content] = v
		}
	}
	for _, n := range trigramTriggers {
		s, ok, err := objectSQL(tx, "trigger", n)
		if err != nil {
			return nil, "", err
		}
		if ok {
			out[n] = s
		}
	}
	return out, content, nil
}

// TrigramWithoutNUL makes the trigram index of the file fed each text up
// to its first U+0000 (see above): it rewrites the content view and the
// triggers, and brings the index to what those give, keeping what it holds
// where it already matches. An index SQLite < 3.45 wrote (Hermes' 3.40.1)
// holds exactly that: an inline table's stored text is cut at U+0000 (so
// that 3.45+ re-tokenizes it alike), the index is kept. An index this
// SQLite wrote (3.45+: the trigrams of the whole text) is corrected row by
// row for the rows holding U+0000. Anything else is rebuilt. Which one it
// is, is checked with FTS5 'integrity-check' (in a savepoint rolled back
// for the older SQLite's). It reports whether it changed the file. tx must
// be a write transaction; it returns the first failing statement's error.
func TrigramWithoutNUL(tx *gorm.DB) (bool, error) {
	objs, content, err := trigramObjects(tx)
	if err != nil || objs == nil {
		return false, err
	}
	rewritten := map[string]string{}
	for name, sql := range objs {
		s, need, ok := rewriteFor(name, sql, content)
		if !ok {
			return false, nil // a shape no Hermes version wrote: left as it is
		}
		if need {
			rewritten[name] = s
		}
	}
	if len(rewritten) == 0 {
		return false, nil
	}
	external := content != ""
	src, cols := TrigramTable+"_content", []string{"c0"}
	if external {
		src, cols = content, []string{"content", "tool_name"}
	}
	var nul int64
	if err := tx.Raw("SELECT count(*) FROM " + src + " WHERE " + nulCond(cols)).Scan(&nul).Error; err != nil {
		return false, err
	}
	exec := func(q string) error { return tx.Exec(q).Error }
	mode := "same" // no text holds U+0000: every SQLite indexed it alike
	if nul > 0 {
		switch older, err := consistentBefore345(tx, external, src, cols); {
		case err != nil:
			return false, err
		case older:
			mode = "older"
		case IntegrityCheck(tx, TrigramTable) == nil:
			mode = "ours"
		default:
			mode = "rebuild"
		}
	}
	switch {
	case mode == "ours" && external:
		// Remove the trigrams of the whole text (this SQLite tokenizes
		// the 'delete' values as it did the insert), add those of the cut.
		for _, q := range []string{
			fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rowid, content, tool_name) SELECT 'delete', id, content, tool_name FROM %[2]s WHERE %[3]s", TrigramTable, src, nulCond(cols)),
			fmt.Sprintf("INSERT INTO %[1]s(rowid, content, tool_name) SELECT id, %[2]s, %[3]s FROM %[4]s WHERE %[5]s", TrigramTable, beforeNul("content"), beforeNul("tool_name"), src, nulCond(cols)),
		} {
			if err := exec(q); err != nil {
				return false, err
			}
		}
	case mode == "ours":
		for _, q := range []string{
			"CREATE TEMP TABLE hermesstate_nul_rows AS SELECT id, c0 FROM " + src + " WHERE " + nulCond(cols),
			"DELETE FROM " + TrigramTable + " WHERE rowid IN (SELECT id FROM temp.hermesstate_nul_rows)",
			"INSERT INTO " + TrigramTable + "(rowid, content) SELECT id, " + beforeNul("c0") + " FROM temp.hermesstate_nul_rows",
			"DROP TABLE temp.hermesstate_nul_rows",
		} {
			if err := exec(q); err != nil {
				return false, err
			}
		}
	case !external && nul > 0:
		// The index holds the older SQLite's trigrams (or is rebuilt
		// below): the stored text is cut as the index was.
		if err := exec("UPDATE " + src + " SET c0 = " + beforeNul("c0") + " WHERE " + nulCond(cols)); err != nil {
			return false, err
		}
	}
	if err := replaceObjects(tx, rewritten, content); err != nil {
		return false, err
	}
	if mode == "rebuild" {
		if err := exec(fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES ('rebuild')", TrigramTable)); err != nil {
			return false, fmt.Errorf("rebuild %s: %w", TrigramTable, err)
		}
	}
	return true, nil
}

// replaceObjects drops and recreates the trigram view (content) and
// triggers of rewritten with their new SQL.
func replaceObjects(tx *gorm.DB, rewritten map[string]string, content string) error {
	for _, name := range sortedNames(rewritten) {
		typ := "TRIGGER"
		if name == content {
			typ = "VIEW"
		}
		if err := tx.Exec("DROP " + typ + " IF EXISTS " + name).Error; err != nil {
			return err
		}
		if err := tx.Exec(rewritten[name]).Error; err != nil {
			return fmt.Errorf("create %s %s: %w", strings.ToLower(typ), name, err)
		}
	}
	return nil
}

// trigramDDLWithoutNUL rewrites the trigram view and triggers only, for an
// index about to be filled from the view (a chunked rebuild).
func trigramDDLWithoutNUL(tx *gorm.DB) error {
	objs, content, err := trigramObjects(tx)
	if err != nil || objs == nil {
		return err
	}
	rewritten := map[string]string{}
	for name, sql := range objs {
		if s, need, ok := rewriteFor(name, sql, content); ok && need {
			rewritten[name] = s
		}
	}
	return replaceObjects(tx, rewritten, content)
}

func sortedNames(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// nulCond is "a column of cols holds U+0000".
func nulCond(cols []string) string {
	var or []string
	for _, c := range cols {
		or = append(or, "instr("+c+", char(0)) > 0")
	}
	return "(" + strings.Join(or, " OR ") + ")"
}

// beforeNul is col up to its first U+0000.
func beforeNul(col string) string {
	return fmt.Sprintf("CASE WHEN instr(%[1]s, char(0)) > 0 THEN substr(%[1]s, 1, instr(%[1]s, char(0)) - 1) ELSE %[1]s END", col)
}

// consistentBefore345 reports whether the trigram index is exactly what
// SQLite before 3.45 wrote for its text (trigrams up to the first U+0000):
// in a savepoint rolled back, the rows holding U+0000 are made to hold
// what this SQLite indexes for their whole text (an inline table's stored
// text cut first; an external-content table's entries of the cut text
// swapped for those of the whole), then integrity-check runs against the
// whole text.
func consistentBefore345(tx *gorm.DB, external bool, src string, cols []string) (bool, error) {
	if err := tx.Exec("SAVEPOINT hermesstate_nul_check").Error; err != nil {
		return false, err
	}
	defer func() {
		tx.Exec("ROLLBACK TO hermesstate_nul_check")
		tx.Exec("RELEASE hermesstate_nul_check")
	}()
	var stmts []string
	if external {
		stmts = []string{
			fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rowid, content, tool_name) SELECT 'delete', id, %[2]s, %[3]s FROM %[4]s WHERE %[5]s",
				TrigramTable, beforeNul("content"), beforeNul("tool_name"), src, nulCond(cols)),
			fmt.Sprintf("INSERT INTO %[1]s(rowid, content, tool_name) SELECT id, content, tool_name FROM %[2]s WHERE %[3]s",
				TrigramTable, src, nulCond(cols)),
		}
	} else {
		stmts = []string{"UPDATE " + src + " SET c0 = " + beforeNul("c0") + " WHERE " + nulCond(cols)}
	}
	for _, q := range stmts {
		if err := tx.Exec(q).Error; err != nil {
			return false, err
		}
	}
	return IntegrityCheck(tx, TrigramTable) == nil, nil
}

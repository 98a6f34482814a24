package doctor

// FTS knowledge doctor and repair need: which Hermes FTS layout a file has,
// which shadow tables, views and triggers that layout needs, and how to
// rebuild an FTS table. Package fts owns the DDL of the current layout (its
// exact Hermes text is used here) and the chunked rebuild of it; the legacy
// layouts (v1-v9 external, v10-v22 inline), which package fts leaves as
// they are, are rebuilt here.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/hermesstate/hermesstate/internal/errs"
	hfts "github.com/hermesstate/hermesstate/internal/ftsql"
	"github.com/hermesstate/hermesstate/internal/schemaref"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/repo"
)

// FTS layouts of Hermes files.
const (
	LayoutNone     = "none"          // no messages_fts table
	LayoutExternal = "v1-external"   // v1–v9: messages_fts(content, content=messages)
	LayoutInline   = "legacy-inline" // v10–v22: inline messages_fts + messages_fts_trigram
	LayoutCurrent  = "current"       // v23+: external content through views
	LayoutUnknown  = "unknown"       // a messages_fts of another shape
	cjkTokenizer   = "cjk_unicode61" // Hermes' native tokenizer, not loadable here
	legacyExpr     = "COALESCE(%[1]s.content, '') || ' ' || COALESCE(%[1]s.tool_name, '') || ' ' || COALESCE(%[1]s.tool_calls, '')"
	rebuildHW      = "fts_rebuild_high_water"
	rebuildProg    = "fts_rebuild_progress"
	ftsStaleKey    = "fts_stale"
	ftsCJKStaleKey = "fts_cjk_stale"
)

type ftsTable struct {
	Name     string
	SQL      string
	Columns  []string
	Content  string // external content table or view ("" = inline)
	RowidCol string // content_rowid (default rowid)
	Tokenize string
	NoSize   bool // columnsize=0
}

func (t ftsTable) external() bool { return t.Content != "" }

// shadows returns the shadow tables FTS5 keeps for t.
func (t ftsTable) shadows() []string {
	out := []string{t.Name + "_data", t.Name + "_idx", t.Name + "_config"}
	if !t.NoSize {
		out = append(out, t.Name+"_docsize")
	}
	if !t.external() {
		out = append(out, t.Name+"_content")
	}
	return out
}

var fts5RE = regexp.MustCompile(`(?is)^CREATE\s+VIRTUAL\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?["'\x60\[]?(\w+)["'\x60\]]?\s+USING\s+fts5\s*\((.*)\)\s*$`)

// parseFTS parses a CREATE VIRTUAL TABLE ... USING fts5(...) statement; ok
// is false for anything else.
func parseFTS(s string) (ftsTable, bool) {
	m := fts5RE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return ftsTable{}, false
	}
	t := ftsTable{Name: m[1], SQL: s}
	for _, arg := range splitArgs(m[2]) {
		arg = strings.TrimSpace(arg)
		if k, v, ok := strings.Cut(arg, "="); ok {
			v = strings.Trim(strings.TrimSpace(v), `'"`)
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "content":
				t.Content = v
			case "content_rowid":
				t.RowidCol = v
			case "tokenize":
				t.Tokenize = v
			case "columnsize":
				t.NoSize = v == "0"
			}
			continue
		}
		if arg != "" {
			t.Columns = append(t.Columns, strings.Fields(arg)[0])
		}
	}
	return t, true
}

func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	var quote rune
	for i, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func detectLayout(tables map[string]ftsTable) string {
	mf, ok := tables["messages_fts"]
	switch {
	case !ok:
		return LayoutNone
	case mf.Content == "messages":
		return LayoutExternal
	case mf.Content == "messages_fts_src":
		return LayoutCurrent
	case !mf.external():
		return LayoutInline
	}
	return LayoutUnknown
}

type triggerDef struct {
	Name  string
	SQL   string
	Table string // FTS table it feeds ("" for display triggers)
}

// expectedTriggers returns the FTS triggers the layout needs for the FTS
// tables present, with DDL that recreates them.
func expectedTriggers(layout string, tables map[string]ftsTable) []triggerDef {
	var out []triggerDef
	add := func(table, name, sql string) {
		if _, ok := tables[table]; ok {
			out = append(out, triggerDef{Name: name, SQL: sql, Table: table})
		}
	}
	switch layout {
	case LayoutExternal:
		add("messages_fts", "messages_fts_insert", `CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END`)
		add("messages_fts", "messages_fts_delete", `CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
END`)
		add("messages_fts", "messages_fts_update", `CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, content) VALUES('delete', old.id, old.content);
    INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
END`)
	case LayoutInline:
		for _, t := range []string{"messages_fts", "messages_fts_trigram"} {
			ins := fmt.Sprintf("INSERT INTO %s(rowid, content) VALUES (new.id, %s);", t, fmt.Sprintf(legacyExpr, "new"))
			del := fmt.Sprintf("DELETE FROM %s WHERE rowid = old.id;", t)
			add(t, t+"_insert", fmt.Sprintf("CREATE TRIGGER %s_insert AFTER INSERT ON messages BEGIN\n    %s\nEND", t, ins))
			add(t, t+"_delete", fmt.Sprintf("CREATE TRIGGER %s_delete AFTER DELETE ON messages BEGIN\n    %s\nEND", t, del))
			add(t, t+"_update", fmt.Sprintf("CREATE TRIGGER %s_update AFTER UPDATE OF content, tool_name, tool_calls ON messages BEGIN\n    %s\n    %s\nEND", t, del, ins))
		}
	case LayoutCurrent:
		for _, o := range hfts.CurrentLayout() {
			if o.Type == "trigger" {
				table := hfts.WordTable
				if strings.HasPrefix(o.Name, hfts.TrigramTable) {
					table = hfts.TrigramTable
				}
				add(table, o.Name, o.SQL)
			}
		}
	}
	return out
}

// fts examines every FTS5 table: shadow tables, triggers, FTS5
// 'integrity-check' (in a rolled-back transaction) and the row count
// against its source.
func (c *checker) fts() {
	tables := c.ftsTables()
	meta := c.meta(rebuildHW, rebuildProg, ftsStaleKey, ftsCJKStaleKey, "fts_storage_version")
	backfill := c.ftsLayout(tables, meta)
	for _, name := range c.r.FTSTables {
		c.ftsTable(tables[name], backfill)
	}
	c.ftsObjects(tables, meta[ftsStaleKey] == "1")
	c.olderTrigramIndexes()
	c.trigramFeed()
	c.cjkIndex()
	if t, ok := tables["messages_fts_cjk"]; ok && meta[ftsCJKStaleKey] != "1" {
		for _, n := range []string{"_insert", "_delete", "_update"} {
			if c.has("trigger", t.Name+n) {
				c.r.add(CheckFTS, Warning, t.Name+n, "open the store once (a pure-Go build drops the cjk triggers and sets fts_cjk_stale)",
					"trigger %s%s feeds a table whose tokenizer this build cannot load: message writes fail here", t.Name, n)
			}
		}
	}
}

// ftsTables finds the FTS5 tables of the file and its layout.
func (c *checker) ftsTables() map[string]ftsTable {
	r := c.r
	tables := map[string]ftsTable{}
	for name, s := range c.objects["table"] {
		if t, ok := parseFTS(s); ok && t.Name == name {
			tables[name] = t
		}
	}
	r.state.ftsByName = tables
	r.state.layout = detectLayout(tables)
	r.FTSLayout = r.state.layout
	r.FTSTables = []string{}
	for n := range tables {
		r.FTSTables = append(r.FTSTables, n)
	}
	sort.Strings(r.FTSTables)
	return tables
}

// ftsLayout reports the layout, its storage version and a backfill in
// progress, which it returns.
func (c *checker) ftsLayout(tables map[string]ftsTable, meta map[string]string) (backfill bool) {
	r := c.r
	backfill = meta[rebuildHW] != ""
	r.state.backfill = backfill && r.state.layout == LayoutCurrent
	switch r.state.layout {
	case LayoutNone:
		r.add(CheckFTS, Info, "", "", "no FTS tables (search uses LIKE until an FTS layout is created)")
	case LayoutUnknown:
		r.add(CheckFTS, Warning, "messages_fts", "", "messages_fts has a shape no Hermes version wrote: %s", tables["messages_fts"].SQL)
	default:
		r.add(CheckFTS, Info, "", "", "FTS layout %s (fts_storage_version %q)", r.state.layout, meta["fts_storage_version"])
	}
	if r.state.layout == LayoutCurrent && meta["fts_storage_version"] != "" && meta["fts_storage_version"] != "3" {
		r.add(CheckFTS, Info, "fts_storage_version", "", "state_meta.fts_storage_version is %q for the current layout (3 expected)", meta["fts_storage_version"])
	}
	if backfill {
		r.add(CheckFTS, Info, "", "", "an FTS backfill is in progress (%s=%s, %s=%s); index counts are not compared",
			rebuildHW, meta[rebuildHW], rebuildProg, meta[rebuildProg])
	}
	return backfill
}

// ftsTable checks one FTS table: its shadow tables, its content source,
// FTS5's integrity check and (without a backfill) its row count.
func (c *checker) ftsTable(t ftsTable, backfill bool) {
	r := c.r
	name := t.Name
	if strings.Contains(t.Tokenize, cjkTokenizer) {
		r.add(CheckFTS, Info, name, "", "%s uses the native tokenizer %s, which this build cannot load; not checked", name, cjkTokenizer)
		return
	}
	var missing []string
	for _, sh := range t.shadows() {
		if !c.has("table", sh) {
			missing = append(missing, sh)
		}
	}
	if len(missing) > 0 {
		r.state.badFTS[name] = "missing shadow tables"
		r.add(CheckFTS, Error, name, FixRepair, "FTS table %s lacks its shadow tables %s: every message write fails while its triggers exist", name, strings.Join(missing, ", "))
		return
	}
	if t.external() && !c.has("table", t.Content) && !c.has("view", t.Content) {
		r.state.badFTS[name] = "missing content source"
		r.add(CheckFTS, Error, name, FixRepair, "FTS table %s reads its content from %s, which is missing", name, t.Content)
		return
	}
	// quick_check/integrity_check already ran FTS5's integrity check
	// (xIntegrity, SQLite >= 3.44) on every FTS table; the explicit
	// 'integrity-check' command runs again only with Full (then with
	// rank 1: index against content) or when the pragma could not run.
	if _, bad := r.state.badFTS[name]; !bad && (c.opts.Full || !c.pragmaRan) {
		if err := c.ftsIntegrity(t, c.opts.Full && !backfill); errors.Is(err, errNoWriteAccess) {
			r.add(CheckFTS, Info, name, "", "the explicit FTS5 integrity-check of %s was skipped: SQLite runs it as a write, and %v", name, err)
		} else if err != nil && c.busy(CheckFTS, name, "the FTS5 integrity-check of "+name, err) {
			return
		} else if err != nil {
			r.state.badFTS[name] = err.Error()
			if sqlitex.IsCorrupt(err) {
				r.state.ftsMismatch[name] = err.Error()
				r.add(CheckFTS, Error, name, FixRepair, "FTS index %s fails FTS5 integrity-check (the index does not match its content)", name)
			} else {
				r.add(CheckFTS, Error, name, FixRepair, "FTS table %s cannot be checked: %s", name, describeErr(err))
			}
			return
		}
	}
	if !backfill {
		idx, src, err := c.ftsCounts(t)
		if err == nil && idx != src {
			r.state.badFTS[name] = "row count differs"
			r.add(CheckFTS, Error, name, FixRepair, "FTS table %s indexes %d rows but its source holds %d (search misses or returns stale rows)", name, idx, src)
		}
	}
}

// ftsObjects reports the missing FTS triggers (absent on purpose while
// fts_stale is set) and, in the current layout, the missing content views.
func (c *checker) ftsObjects(tables map[string]ftsTable, stale bool) {
	r := c.r
	for _, tg := range expectedTriggers(r.state.layout, tables) {
		if c.has("trigger", tg.Name) {
			continue
		}
		if stale {
			r.add(CheckFTS, Info, tg.Name, "", "FTS trigger %s is absent because state_meta.fts_stale = 1 (search uses LIKE until a rebuild)", tg.Name)
			continue
		}
		r.state.missingTrig = append(r.state.missingTrig, tg)
		r.state.badFTS[tg.Table] = "trigger missing"
		r.add(CheckFTS, Error, tg.Name, FixRepair, "FTS trigger %s is missing: new or changed messages are not indexed in %s", tg.Name, tg.Table)
	}
	if r.state.layout != LayoutCurrent {
		return
	}
	for _, o := range hfts.CurrentLayout() {
		if o.Type == "view" && !c.has("view", o.Name) {
			r.state.missingViews = append(r.state.missingViews, o.SQL)
			r.state.badFTS[strings.TrimSuffix(o.Name, "_src")] = "content view missing"
			r.add(CheckFTS, Error, o.Name, FixRepair, "FTS content view %s is missing: its FTS table cannot be read or rebuilt", o.Name)
		}
	}
}

func (c *checker) meta(keys ...string) map[string]string {
	out := map[string]string{}
	if !c.has("table", "state_meta") {
		return out
	}
	for _, k := range keys {
		var v sql.NullString
		if err := c.db.QueryRowContext(c.ctx, "SELECT value FROM state_meta WHERE key = ?", k).Scan(&v); err == nil && v.Valid {
			out[k] = v.String
		}
	}
	return out
}

// ftsIntegrity runs FTS5 'integrity-check' on t inside a transaction that
// is rolled back. withContent compares an external-content index with its
// content too (rank 1; it re-tokenizes every row).
func (c *checker) ftsIntegrity(t ftsTable, withContent bool) error {
	db, err := c.writer()
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(c.ctx, nil)
	if err != nil {
		if isReadOnlyErr(err) {
			return fmt.Errorf("%w (%s)", errNoWriteAccess, describeErr(err))
		}
		return err
	}
	defer tx.Rollback()
	q := fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES ('integrity-check')", schemaref.QuoteIdent(t.Name))
	if withContent && t.external() {
		q = fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rank) VALUES ('integrity-check', 1)", schemaref.QuoteIdent(t.Name))
	}
	_, err = tx.ExecContext(c.ctx, q)
	if err != nil && isReadOnlyErr(err) {
		return fmt.Errorf("%w (%s)", errNoWriteAccess, describeErr(err))
	}
	return err
}

// isReadOnlyErr reports SQLITE_READONLY or SQLITE_CANTOPEN (any extended
// code): the file, its directory or the mount cannot be written here.
func isReadOnlyErr(err error) bool {
	c, ok := sqlitex.Code(err)
	return ok && (c&0xff == 8 || c&0xff == 14)
}

// ftsCounts returns the rows t indexes (its docsize or content shadow) and
// the rows its source holds.
func (c *checker) ftsCounts(t ftsTable) (idx, src int64, err error) {
	shadow := t.Name + "_docsize"
	if t.NoSize {
		if t.external() {
			return 0, 0, errors.New("no docsize")
		}
		shadow = t.Name + "_content"
	}
	if err = c.db.QueryRowContext(c.ctx, "SELECT count(*) FROM "+schemaref.QuoteIdent(shadow)).Scan(&idx); err != nil {
		return
	}
	source := "messages"
	if t.external() {
		source = t.Content
	}
	err = c.db.QueryRowContext(c.ctx, "SELECT count(*) FROM "+schemaref.QuoteIdent(source)).Scan(&src)
	return
}

// ftsSegments returns the number of segments of t's index, read from its
// structure record (id 10 of %_data): a 4-byte cookie, then varints nLevel,
// nSegment, ...
func ftsSegments(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table string) (int64, error) {
	var b []byte
	if err := q.QueryRowContext(ctx, "SELECT block FROM "+schemaref.QuoteIdent(table+"_data")+" WHERE id = 10").Scan(&b); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return 0, nil
		}
		return 0, err
	}
	if len(b) < 5 {
		return 0, nil
	}
	p := b[4:]
	_, n := sqliteVarint(p) // nLevel
	if n == 0 {
		return 0, nil
	}
	seg, m := sqliteVarint(p[n:])
	if m == 0 {
		return 0, nil
	}
	return int64(seg), nil
}

// sqliteVarint decodes SQLite's big-endian varint; it returns the byte
// count 0 on a short buffer.
func sqliteVarint(p []byte) (uint64, int) {
	var v uint64
	for i := 0; i < 9 && i < len(p); i++ {
		if i == 8 {
			return v<<8 | uint64(p[i]), 9
		}
		v = v<<7 | uint64(p[i]&0x7f)
		if p[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// cjkIndex checks hermesstate's CJK posting index (package fts): its
// tables and triggers, and with Full every posting against its message.
func (c *checker) cjkIndex() {
	r := c.r
	if !c.has("table", hfts.CJKIndexTable) && !c.has("table", hfts.CJKPendingTable) {
		return // a file not adopted yet, or from before the index existed
	}
	var missing []string
	for _, n := range []string{hfts.CJKIndexTable, hfts.CJKPendingTable, hfts.CJKGoneTable} {
		if !c.has("table", n) {
			missing = append(missing, "table "+n)
		}
	}
	for _, n := range hfts.CJKTriggerNames {
		if !c.has("trigger", n) {
			missing = append(missing, "trigger "+n)
		}
	}
	if len(missing) > 0 {
		r.state.cjkReset = true
		r.add(CheckFTS, Error, hfts.CJKIndexTable, FixRepair, "the CJK index lacks %s: CJK searches may miss new or changed messages", strings.Join(missing, ", "))
		return
	}
	if !c.opts.Full {
		return
	}
	g, err := gormOn(c.eng, c.db)
	if err != nil {
		return
	}
	_, bad, err := hfts.CheckCJKIndex(g.WithContext(c.ctx))
	switch {
	case err != nil && c.busy(CheckFTS, hfts.CJKIndexTable, "the check of the CJK index", err):
	case err != nil:
		r.state.cjkReset = true
		r.add(CheckFTS, Error, hfts.CJKIndexTable, FixRepair, "the CJK index cannot be checked: %s", describeErr(err))
	case bad != "":
		r.state.cjkReset = true
		r.add(CheckFTS, Error, hfts.CJKIndexTable, FixRepair, "the CJK index disagrees with the messages (%s)", bad)
	}
}

// Trigram indexes written by SQLite before 3.45.
//
// SQLite's trigram tokenizer up to 3.44 stopped at the first U+0000 of a
// text (it read the character as the end of the input); the rewrite of
// 3.45.0 that added remove_diacritics skips every character that folds to
// 0, U+0000 included, and goes on. Hermes stores multimodal content as
// "\x00json:" + JSON, so on the files Hermes wrote with SQLite 3.40.1 the
// trigram index holds nothing for those rows, while SQLite 3.45+ expects
// the trigrams of the JSON text: FTS5 'integrity-check' (and quick_check,
// for inline tables) calls such an index inconsistent although it is
// exactly what the SQLite that wrote it produced.

// isTrigram reports whether t uses SQLite's trigram tokenizer.
func isTrigram(t ftsTable) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(t.Tokenize)), "trigram")
}

// nulText is the SQL condition "a column of the text t indexes holds
// U+0000", on the columns cols (quoted, with prefix).
func nulText(cols []string) string {
	var or []string
	for _, c := range cols {
		or = append(or, "instr("+c+", char(0)) > 0")
	}
	return "(" + strings.Join(or, " OR ") + ")"
}

// beforeNul is the SQL expression of col up to its first U+0000.
func beforeNul(col string) string {
	return fmt.Sprintf("CASE WHEN instr(%[1]s, char(0)) > 0 THEN substr(%[1]s, 1, instr(%[1]s, char(0)) - 1) ELSE %[1]s END", col)
}

// ftsSource returns the table or view t reads its text from, the column
// of its rowid and the columns it indexes, quoted.
func ftsSource(t ftsTable) (source, rowid string, cols []string) {
	if !t.external() {
		for i := range t.Columns {
			cols = append(cols, fmt.Sprintf("c%d", i))
		}
		return schemaref.QuoteIdent(t.Name + "_content"), "id", cols
	}
	rowid = "rowid"
	if t.RowidCol != "" {
		rowid = schemaref.QuoteIdent(t.RowidCol)
	}
	for _, c := range t.Columns {
		cols = append(cols, schemaref.QuoteIdent(c))
	}
	return schemaref.QuoteIdent(t.Content), rowid, cols
}

// nulRows counts the rows whose indexed text holds U+0000.
func nulRows(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, t ftsTable) (int64, error) {
	src, _, cols := ftsSource(t)
	if len(cols) == 0 {
		return 0, nil
	}
	var n int64
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+src+" WHERE "+nulText(cols)).Scan(&n)
	return n, err
}

// consistentBefore345 reports whether t's index is what SQLite before 3.45
// wrote for its content: in a transaction that is rolled back, the rows
// holding U+0000 are made to hold what that SQLite indexed (an inline
// table's stored text cut at the first U+0000; an external-content
// table's index entries of the cut text replaced by those this SQLite
// makes of the whole text), then FTS5 'integrity-check' runs. Nothing is
// written: the rollback journal is kept in memory (a WAL file gets no
// frame), and the cache never spills.
func (c *checker) consistentBefore345(t ftsTable) (bool, error) {
	db, err := c.writer()
	if err != nil {
		return false, err
	}
	conn, err := db.Conn(c.ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	var mode string
	if err := conn.QueryRowContext(c.ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return false, err
	}
	if !strings.EqualFold(mode, "wal") && !strings.EqualFold(mode, "memory") {
		if err := conn.QueryRowContext(c.ctx, "PRAGMA journal_mode=MEMORY").Scan(&mode); err != nil {
			return false, err
		}
		defer conn.ExecContext(context.WithoutCancel(c.ctx), "PRAGMA journal_mode=DELETE") //nolint:errcheck // a per-connection setting of a connection doctor closes
	}
	if _, err := conn.ExecContext(c.ctx, "PRAGMA cache_spill=OFF"); err != nil {
		return false, err
	}
	tx, err := conn.BeginTx(c.ctx, nil)
	if err != nil {
		if isReadOnlyErr(err) {
			return false, fmt.Errorf("%w (%s)", errNoWriteAccess, describeErr(err))
		}
		return false, err
	}
	defer tx.Rollback() //nolint:errcheck // the transaction exists to be rolled back
	name := schemaref.QuoteIdent(t.Name)
	src, rowid, cols := ftsSource(t)
	var stmts []string
	if !t.external() {
		for _, col := range cols {
			stmts = append(stmts, fmt.Sprintf("UPDATE %s SET %s = %s WHERE instr(%[2]s, char(0)) > 0", src, col, beforeNul(col)))
		}
		stmts = append(stmts, fmt.Sprintf("INSERT INTO %[1]s(%[1]s) VALUES ('integrity-check')", name))
	} else {
		var cut, quoted []string
		for i, col := range cols {
			cut = append(cut, beforeNul(col))
			quoted = append(quoted, schemaref.QuoteIdent(t.Columns[i]))
		}
		where := " FROM " + src + " WHERE " + nulText(cols)
		stmts = append(stmts,
			fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rowid, %[2]s) SELECT 'delete', %[3]s, %[4]s%[5]s", name, strings.Join(quoted, ", "), rowid, strings.Join(cut, ", "), where),
			fmt.Sprintf("INSERT INTO %[1]s(rowid, %[2]s) SELECT %[3]s, %[4]s%[5]s", name, strings.Join(quoted, ", "), rowid, strings.Join(cols, ", "), where),
			fmt.Sprintf("INSERT INTO %[1]s(%[1]s, rank) VALUES ('integrity-check', 1)", name))
	}
	for _, q := range stmts {
		if _, err := tx.ExecContext(c.ctx, q); err != nil {
			if sqlitex.IsCorrupt(err) {
				return false, nil
			}
			if isReadOnlyErr(err) {
				return false, fmt.Errorf("%w (%s)", errNoWriteAccess, describeErr(err))
			}
			return false, err
		}
	}
	return true, nil
}

// olderTrigramIndexes re-examines each trigram table found inconsistent
// with its content and nothing else wrong with it: when rows of its text
// hold U+0000 and the index is exactly what SQLite before 3.45 wrote (see
// consistentBefore345), the error becomes information.
func (c *checker) olderTrigramIndexes() {
	st := c.r.state
	for _, name := range sortedKeys(st.ftsMismatch) {
		t, ok := st.ftsByName[name]
		if !ok || !isTrigram(t) || st.badFTS[name] != st.ftsMismatch[name] {
			continue
		}
		n, err := nulRows(c.ctx, c.db, t)
		if err != nil || n == 0 {
			continue
		}
		same, err := c.consistentBefore345(t)
		switch {
		case errors.Is(err, errNoWriteAccess):
			c.r.add(CheckFTS, Info, name, "", "%d rows of %s hold U+0000, which SQLite before 3.45 (the one Hermes wrote its files with) did not index past; whether that explains the mismatch cannot be checked here (%v)", n, name, err)
			continue
		case err != nil || !same:
			continue
		}
		delete(st.badFTS, name)
		delete(st.ftsMismatch, name)
		kept := c.r.Findings[:0]
		for _, f := range c.r.Findings {
			if f.Check == CheckFTS && f.Object == name && f.Severity == Error {
				continue
			}
			kept = append(kept, f)
		}
		c.r.Findings = kept
		c.r.add(CheckFTS, Info, name, "", "%s was written by a SQLite before 3.45 (Hermes writes with 3.40.1), whose trigram tokenizer stopped at U+0000: %d rows hold it (multimodal messages start with it) and are indexed up to it, which this SQLite (%s) calls a mismatch; checked: the index is exactly what that SQLite wrote",
			name, n, c.r.SQLiteVersion)
	}
}

// CheckIndexes runs FTS5 'integrity-check' on every FTS table of the SQLite
// file path (an external-content one compared with its content, rank 1),
// recognises trigram indexes SQLite before 3.45 wrote, and checks
// hermesstate's CJK posting index, without changing the file: no
// migration, no journal-mode switch, the FTS5 commands in a rolled-back
// transaction. It returns one result per index, and an error wrapping
// errs.ErrNotFound when there is no store, errs.ErrStorage when the file
// cannot be read, errs.ErrCorrupt when its schema cannot be read.
func CheckIndexes(ctx context.Context, path, engine string) ([]repo.FTSCheck, error) {
	r, err := Check(ctx, Options{Path: path, Full: true, ftsOnly: true, Engine: engine})
	if err != nil {
		return nil, err
	}
	if len(r.Unchecked) > 0 {
		return nil, errs.Errorf(errs.ErrBusy, "fts check", "%s could not be checked: another process kept it locked (%s); run `hermes-state --db %s fts check` again when the file is idle",
			path, strings.Join(r.Unchecked, ", "), path)
	}
	if r.state.hotJournal || r.state.place != "" || r.objects == nil {
		var msgs []string
		for _, f := range r.Problems() {
			msgs = append(msgs, f.Message)
		}
		kind := errs.ErrCorrupt
		if r.state.hotJournal || r.state.place != "" {
			kind = errs.ErrStorage
		}
		return nil, errs.Errorf(kind, "fts check", "%s cannot be checked: %s", path, strings.Join(msgs, "; "))
	}
	var out []repo.FTSCheck
	for _, name := range r.FTSTables {
		c := repo.FTSCheck{Table: name, OK: true}
		if t := r.state.ftsByName[name]; strings.Contains(t.Tokenize, cjkTokenizer) {
			continue // Hermes' native tokenizer: not loadable here
		}
		var why []string
		for _, f := range r.Problems() {
			if f.Check == CheckFTS && (f.Object == name || strings.HasPrefix(f.Object, name+"_")) {
				why = append(why, f.Message)
			}
		}
		if reason, bad := r.state.badFTS[name]; bad && len(why) == 0 {
			why = append(why, reason)
		}
		if len(why) > 0 {
			c.OK, c.Detail = false, strings.Join(why, "; ")
		}
		out = append(out, c)
	}
	if r.objects["table"][hfts.CJKIndexTable] != "" || r.state.cjkReset {
		c := repo.FTSCheck{Table: hfts.CJKIndexTable, OK: !r.state.cjkReset}
		for _, f := range r.Problems() {
			if f.Object == hfts.CJKIndexTable {
				c.Detail = f.Message
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// trigramFeed notes a trigram index whose view or triggers still feed it
// text past U+0000 (Hermes' own, which SQLite < 3.45 and 3.45+ tokenize
// differently: see ftsql.TrigramWithoutNUL); the next writable open or
// repair rewrites them. It is information: the index is consistent for
// the SQLite that wrote it.
func (c *checker) trigramFeed() {
	if _, ok := c.r.state.ftsByName[hfts.TrigramTable]; !ok {
		return
	}
	g, err := gormOn(c.eng, c.db)
	if err != nil {
		return
	}
	feeds, err := hfts.TrigramFeedsNUL(g.WithContext(c.ctx))
	if err != nil || !feeds {
		return
	}
	c.r.state.trigramFeed = true
	c.r.add(CheckFTS, Info, hfts.TrigramTable, "", "the view and triggers of %s feed it text past U+0000, which SQLite before 3.45 (Hermes') and after index differently; the next writable open (or repair) feeds it each text up to its first U+0000, so both index alike", hfts.TrigramTable)
}

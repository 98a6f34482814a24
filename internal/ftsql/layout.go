package ftsql

import (
	_ "embed"
	"fmt"
	"strings"

	"gorm.io/gorm"
)

//go:embed current_layout.sql
var currentLayoutSQL string

//go:embed inline_triggers.sql
var inlineTriggersSQL string

// Layout is the shape of the FTS objects in a file.
type Layout int

// Layouts Hermes has written.
const (
	// LayoutNone: no messages_fts table.
	LayoutNone Layout = iota
	// LayoutLegacyExternal: v1–v9, messages_fts(content) with
	// content=messages, indexing content only.
	LayoutLegacyExternal
	// LayoutInlineV10: v10, inline messages_fts / messages_fts_trigram whose
	// delete and update triggers issue the 'delete' command (which an inline
	// table rejects, so deleting or editing a message fails).
	LayoutInlineV10
	// LayoutInline: v11–v22, inline tables indexing
	// content || ' ' || tool_name || ' ' || tool_calls, deleted by rowid.
	LayoutInline
	// LayoutCurrent: v23+, external content through the messages_fts_src
	// and messages_fts_trigram_src views (detected by a tool_name column).
	LayoutCurrent
)

func (l Layout) String() string {
	switch l {
	case LayoutNone:
		return "none"
	case LayoutLegacyExternal:
		return "legacy-external (v1-v9)"
	case LayoutInlineV10:
		return "inline-v10"
	case LayoutInline:
		return "inline (v11-v22)"
	case LayoutCurrent:
		return "current (v23+)"
	}
	return fmt.Sprintf("layout(%d)", int(l))
}

// Object is one named schema statement.
type Object struct {
	Type string // "view", "table", "trigger"
	Name string
	SQL  string
}

func parseObjects(src string) []Object {
	var out []Object
	for _, part := range strings.Split(src, "\n-- ;\n") {
		var typ, name string
		var lines []string
		for _, l := range strings.Split(part, "\n") {
			if strings.HasPrefix(l, "-- ") {
				if f := strings.Fields(l[3:]); len(f) == 2 && (f[0] == "view" || f[0] == "table" || f[0] == "trigger") {
					typ, name = f[0], f[1]
				}
				continue
			}
			lines = append(lines, l)
		}
		sql := strings.TrimSpace(strings.Join(lines, "\n"))
		if sql == "" || name == "" {
			continue
		}
		out = append(out, Object{Type: typ, Name: name, SQL: sql})
	}
	return out
}

// CurrentLayout returns the FTS objects of Hermes' current layout (schema
// v30) in creation order: the two source views, the two FTS5 tables and the
// six triggers, with Hermes' exact SQL text.
func CurrentLayout() []Object { return parseObjects(currentLayoutSQL) }

// InlineTriggers returns Hermes' v11 triggers of the inline layout.
func InlineTriggers() []Object { return parseObjects(inlineTriggersSQL) }

// Tables of the FTS indexes Hermes knows.
const (
	WordTable    = "messages_fts"
	TrigramTable = "messages_fts_trigram"
	HermesCJK    = "messages_fts_cjk"
)

// CJKTriggers are the triggers of Hermes' native-tokenizer CJK index.
var CJKTriggers = []string{"messages_fts_cjk_insert", "messages_fts_cjk_delete", "messages_fts_cjk_update"}

func objectSQL(tx *gorm.DB, typ, name string) (string, bool, error) {
	var rows []struct{ SQL *string }
	if err := tx.Raw("SELECT sql FROM sqlite_master WHERE type = ? AND name = ?", typ, name).Scan(&rows).Error; err != nil {
		return "", false, err
	}
	if len(rows) == 0 {
		return "", false, nil
	}
	if rows[0].SQL == nil {
		return "", true, nil
	}
	return *rows[0].SQL, true, nil
}

// HasTable reports whether table (ordinary or virtual) exists.
func HasTable(tx *gorm.DB, name string) (bool, error) {
	_, ok, err := objectSQL(tx, "table", name)
	return ok, err
}

// DetectLayout reads sqlite_master and returns the file's FTS layout.
func DetectLayout(tx *gorm.DB) (Layout, error) {
	sql, ok, err := objectSQL(tx, "table", WordTable)
	if err != nil || !ok {
		return LayoutNone, err
	}
	var cols []string
	if err := tx.Raw("SELECT name FROM pragma_table_info(?)", WordTable).Pluck("name", &cols).Error; err != nil {
		return LayoutNone, err
	}
	for _, c := range cols {
		if strings.EqualFold(c, "tool_name") {
			return LayoutCurrent, nil
		}
	}
	if strings.Contains(strings.ReplaceAll(strings.ToLower(sql), " ", ""), "content=") {
		return LayoutLegacyExternal, nil
	}
	trig, _, err := objectSQL(tx, "trigger", "messages_fts_delete")
	if err != nil {
		return LayoutNone, err
	}
	if strings.Contains(trig, "'delete'") {
		return LayoutInlineV10, nil
	}
	return LayoutInline, nil
}

// EnsureLayout makes the file's FTS objects work, keeping the layout the
// file has:
//   - no FTS: creates Hermes' current layout and indexes existing rows;
//   - current layout: recreates any missing view or trigger;
//   - v10: replaces the four broken delete/update triggers with Hermes' v11
//     triggers (DELETE by rowid), so deleting or editing a message works;
//   - legacy external (v1–v9) and inline (v11–v22): left as they are; their
//     triggers keep them current and search serves them.
//
// In every adopted layout an FTS table that fails 'integrity-check' is
// rebuilt from its content ('rebuild').
//
// tx must be a write transaction. It returns the layout found and the first
// failing statement's error.
func EnsureLayout(tx *gorm.DB) (Layout, error) {
	layout, err := DetectLayout(tx)
	if err != nil {
		return layout, err
	}
	switch layout {
	case LayoutNone:
		for _, o := range CurrentLayout() {
			if err := tx.Exec(o.SQL).Error; err != nil {
				return layout, fmt.Errorf("create %s %s: %w", o.Type, o.Name, err)
			}
		}
		var n int64
		if err := tx.Raw("SELECT count(*) FROM (SELECT 1 FROM messages LIMIT 1)").Scan(&n).Error; err != nil {
			return layout, err
		}
		if n > 0 {
			for _, t := range []string{WordTable, TrigramTable} {
				if err := tx.Exec("INSERT INTO " + t + "(" + t + ") VALUES ('rebuild')").Error; err != nil {
					return layout, fmt.Errorf("index %s: %w", t, err)
				}
			}
		}
	case LayoutCurrent:
		for _, o := range CurrentLayout() {
			_, ok, err := objectSQL(tx, o.Type, o.Name)
			if err != nil {
				return layout, err
			}
			if ok || o.Type == "table" {
				continue
			}
			if err := tx.Exec(o.SQL).Error; err != nil {
				return layout, fmt.Errorf("create %s %s: %w", o.Type, o.Name, err)
			}
		}
	case LayoutInlineV10:
		if err := fixV10Triggers(tx); err != nil {
			return layout, err
		}
	}
	if layout != LayoutNone {
		if err := repairIndexes(tx); err != nil {
			return layout, err
		}
	}
	return layout, nil
}

// repairIndexes runs 'integrity-check' on each FTS table of an adopted
// file and rebuilds ('rebuild') a table that fails it. Hermes files written
// by SQLite 3.40 can fail the check under the SQLite we link (seen on the
// trigram tables of the v11-v21 fixtures: the index holds other tokens than
// this SQLite's tokenizer produces for the same text).
func repairIndexes(tx *gorm.DB) error {
	tables, err := FTSTables(tx)
	if err != nil {
		return err
	}
	for _, t := range tables {
		if t == HermesCJK {
			continue // its tokenizer cannot be loaded here
		}
		if IntegrityCheck(tx, t) == nil {
			continue
		}
		if err := tx.Exec("INSERT INTO " + t + "(" + t + ") VALUES ('rebuild')").Error; err != nil {
			return fmt.Errorf("rebuild %s: %w", t, err)
		}
	}
	return nil
}

func fixV10Triggers(tx *gorm.DB) error {
	{
		for _, o := range InlineTriggers() {
			if !strings.HasSuffix(o.Name, "_delete") && !strings.HasSuffix(o.Name, "_update") {
				continue
			}
			if err := tx.Exec("DROP TRIGGER IF EXISTS " + o.Name).Error; err != nil {
				return err
			}
			if err := tx.Exec(o.SQL).Error; err != nil {
				return fmt.Errorf("create trigger %s: %w", o.Name, err)
			}
		}
	}
	return nil
}

// DropHermesCJKTriggers applies Hermes' rule for a process that cannot load
// the cjk_unicode61 tokenizer: when any messages_fts_cjk_* trigger exists,
// drop the three triggers and then set state_meta.fts_cjk_stale = '1', so
// message writes keep working. It reports whether it dropped anything.
func DropHermesCJKTriggers(tx *gorm.DB) (bool, error) {
	var n int64
	if err := tx.Raw("SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?, ?)",
		CJKTriggers[0], CJKTriggers[1], CJKTriggers[2]).Scan(&n).Error; err != nil {
		return false, err
	}
	if n == 0 {
		return false, nil
	}
	for _, t := range CJKTriggers {
		if err := tx.Exec("DROP TRIGGER IF EXISTS " + t).Error; err != nil {
			return false, err
		}
	}
	err := tx.Exec("INSERT INTO state_meta (key, value) VALUES ('fts_cjk_stale', '1') ON CONFLICT(key) DO UPDATE SET value = excluded.value").Error
	return err == nil, err
}

package repo

import (
	"github.com/hermesstate/hermesstate/hooks"
	"strconv"
	"strings"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/models"
)

// Leaving columns out of a message INSERT.
//
// A messages row has 25 columns and a typical message sets four or five.
// With the pure-Go driver every statement is parsed again on every
// execution (it keeps no prepared statements), and parsing, binding and
// coding 25 values per row, with the FTS and display triggers compiled in,
// was most of the difference between the store and a hand-written INSERT:
// a 1,000-message batch cost 296 µs of CPU per message with all 25 columns
// against 130 µs with the six it uses (BENCHMARKS.md). So the store leaves
// out every column that is NULL, or equal to the column's default, in all
// rows of the statement. SQLite then stores exactly what the explicit
// value would have stored: the default is read from the file itself
// (PRAGMA table_info), so a file whose column has another default, or
// none, is handled right, and a column is only ever left out when the value
// the store would write is that default.

// insertRows inserts rows (their ids zero) with tx and sets their ids; on
// SQLite it leaves out the columns that are absent in every row
// (omitColumns). One row is one INSERT, more go in batches of batchRows.
func (r *messageRepo) insertRows(tx *gorm.DB, rows []*models.Message) error {
	// The insert rules (display_identity included) apply before the
	// columns are chosen: a column is left out only when no row has it.
	now := models.Now()
	for _, m := range rows {
		hooks.NormalizeMessage(m, now)
	}
	q := tx
	if r.db.Dialect == SQLite {
		if omit := omitColumns(r.defaults.load(tx), rows); len(omit) > 0 {
			q = tx.Omit(omit...)
		}
	}
	if len(rows) == 1 {
		return q.Create(rows[0]).Error
	}
	return q.CreateInBatches(rows, batchRows).Error
}

// omittable are the messages columns a value of which may equal "absent".
var omittable = []string{"tool_call_id", "tool_calls", "tool_name", "effect_disposition", "token_count",
	"finish_reason", "reasoning", "reasoning_content", "reasoning_details", "codex_reasoning_items",
	"codex_message_items", "platform_message_id", "observed", "_compressed_summary", "active", "compacted",
	"api_content", "display_kind", "display_metadata", "display_identity", "display_order"}

// colDefault is what SQLite fills in for a column left out of an INSERT:
// NULL (isNull) or an integer.
type colDefault struct {
	isNull bool
	n      int64
}

// messageDefaults caches the defaults of the omittable columns of the
// messages table, read from the file once per store.
type messageDefaults struct {
	m atomic.Pointer[map[string]colDefault]
}

// load returns the defaults, reading them with tx on first use. On any
// failure it returns nil (nothing is left out).
func (d *messageDefaults) load(tx *gorm.DB) map[string]colDefault {
	if p := d.m.Load(); p != nil {
		return *p
	}
	var cols []struct {
		Name      string
		Type      string
		NotNull   int `gorm:"column:notnull"`
		DfltValue *string
		Pk        int
	}
	if err := tx.Raw("PRAGMA table_info(messages)").Scan(&cols).Error; err != nil || len(cols) == 0 {
		return nil
	}
	want := map[string]bool{}
	for _, c := range omittable {
		want[c] = true
	}
	out := map[string]colDefault{}
	for _, c := range cols {
		if !want[c.Name] {
			continue
		}
		if c.DfltValue == nil || strings.EqualFold(strings.TrimSpace(*c.DfltValue), "NULL") {
			if c.NotNull == 0 {
				out[c.Name] = colDefault{isNull: true}
			}
			continue
		}
		if n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(*c.DfltValue), "()'"), 10, 64); err == nil {
			out[c.Name] = colDefault{n: n}
		}
	}
	d.m.Store(&out)
	return out
}

// isDefault reports whether row's value of col is what SQLite would store
// if col were left out.
func isDefault(row *models.Message, col string, d colDefault) bool {
	if !d.isNull {
		switch col {
		case "observed":
			return row.Observed == d.n
		case "_compressed_summary":
			return row.CompressedSummary == d.n
		case "active":
			return row.Active == d.n
		case "compacted":
			return row.Compacted == d.n
		}
		return false
	}
	switch col {
	case "tool_call_id":
		return row.ToolCallID == nil
	case "tool_calls":
		return row.ToolCalls.IsNull()
	case "tool_name":
		return row.ToolName == nil
	case "effect_disposition":
		return row.EffectDisposition == nil
	case "token_count":
		return row.TokenCount == nil
	case "finish_reason":
		return row.FinishReason == nil
	case "reasoning":
		return row.Reasoning == nil
	case "reasoning_content":
		return row.ReasoningContent == nil
	case "reasoning_details":
		return row.ReasoningDetails.IsNull()
	case "codex_reasoning_items":
		return row.CodexReasoningItems.IsNull()
	case "codex_message_items":
		return row.CodexMessageItems.IsNull()
	case "platform_message_id":
		return row.PlatformMessageID == nil
	case "api_content":
		return row.APIContent == nil
	case "display_kind":
		return row.DisplayKind == nil
	case "display_metadata":
		return row.DisplayMetadata.IsNull()
	case "display_identity":
		return row.DisplayIdentity == nil
	case "display_order":
		return row.DisplayOrder == nil
	}
	return false
}

// omitColumns returns the columns every one of rows leaves at the default.
func omitColumns(defs map[string]colDefault, rows []*models.Message) []string {
	var out []string
	for _, col := range omittable {
		d, ok := defs[col]
		if !ok {
			continue
		}
		all := true
		for _, r := range rows {
			if !isDefault(r, col, d) {
				all = false
				break
			}
		}
		if all {
			out = append(out, col)
		}
	}
	return out
}

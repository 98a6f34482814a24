package repo

import (
	"errors"
	"strings"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/hooks"
	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/models"
)

// The lone append on SQLite.
//
// An agent loop appends one message at a time, so most group commits hold
// one call. For that call the steps of the write path (RegisterWritePath)
// are spelled out here instead of going through GORM's create callbacks:
//
//  1. hooks.NormalizeMessage: Hermes' insert rules (timestamp, active);
//  2. the session's counters, one UPDATE whose WHERE also refuses a
//     session ended by compression, so no SELECT is needed first (when it
//     changes no row, checkAppendable says why: ErrNotFound or
//     ErrConflict);
//  3. the INSERT, with only the columns the row sets (isDefault against the file's defaults) and
//     RETURNING id;
//  4. the id goes to the deferred CJK index (deferCJK).
//
// The rows and counters written are exactly the GORM path's (the contract
// and fixture tests run through this path). Measured with callgrind on
// this engine: 2.43 M instructions per append before, against 2.02 M for
// the bare INSERT + UPDATE; the SELECT cost 0.12 M and GORM's create 0.14 M
// (BENCHMARKS.md).

// appendCountersSQL bumps a session's counters unless it was ended by
// compression (the refusal checkAppendable words).
const appendCountersSQL = `UPDATE sessions SET message_count = COALESCE(message_count, 0) + 1, ` +
	`tool_call_count = COALESCE(tool_call_count, 0) + ? ` +
	`WHERE id = ? AND (end_reason IS NOT 'compression' OR ended_at IS NULL)`

// appendOne writes m, a lone call's row, in tx and sets m.ID. A missing or
// compression-ended session is an *errs.Error of kind ErrNotFound or
// ErrConflict, with nothing written.
func (r *messageRepo) appendOne(tx *gorm.DB, op string, m *models.Message) error {
	hooks.NormalizeMessage(m, models.Now())
	// Both statements go to the transaction itself (directConn): they are
	// plain SQLite SQL with plain arguments and need none of GORM's
	// statement building (BENCHMARKS.md, "The lone append commits in its
	// caller"). appendOne runs only on SQLite, in a write transaction.
	ctx, pool, ok := directConn(tx)
	if !ok {
		return errs.Errorf(errs.ErrUnsupported, op, "the lone append runs only in a SQLite write transaction")
	}
	res, err := pool.ExecContext(ctx, appendCountersSQL, hooks.CountedToolCalls(m), m.SessionID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n != 1 {
		if err := checkAppendable(tx, op, m.SessionID); err != nil {
			return err
		}
		return noSession(op, m.SessionID)
	}
	q, args, err := messageInsertSQL(r.defaults.load(tx), m)
	if err != nil {
		return err
	}
	m.ID = 0
	if err := pool.QueryRowContext(ctx, q, args...).Scan(&m.ID); err != nil {
		return err
	}
	r.db.deferCJK(tx.Session(&gorm.Session{NewDB: true}), []int64{m.ID})
	return nil
}

// refusal reports whether err is appendOne's word on the session (missing,
// or ended by compression), which answers only that call.
func refusal(err error) bool {
	var me *errs.Error
	return errors.As(err, &me) && (errors.Is(err, errs.ErrNotFound) || errors.Is(err, errs.ErrConflict))
}

// messageInsertSQL returns the INSERT of m with the columns it always sets
// and the omittable ones whose value is not the file's default (defs, see
// isDefault), ending in RETURNING id.
func messageInsertSQL(defs map[string]colDefault, m *models.Message) (string, []any, error) {
	cols := []string{"session_id", "role", "content", "timestamp"}
	args := []any{m.SessionID, m.Role, derefAny(m.Content), float64(m.Timestamp)}
	for _, c := range omittable {
		if d, ok := defs[c]; ok && isDefault(m, c, d) {
			continue
		}
		v, err := messageColumn(m, c)
		if err != nil {
			return "", nil, err
		}
		cols = append(cols, c)
		args = append(args, v)
	}
	q := "INSERT INTO messages (" + strings.Join(cols, ", ") + ") VALUES (" + placeholders(len(cols)) + ") RETURNING id"
	return q, args, nil
}

// messageColumn is the value of an omittable column of m as GORM binds it
// (JSON columns through the pyjson serializer's SQLValue).
func messageColumn(m *models.Message, col string) (any, error) {
	switch col {
	case "tool_call_id":
		return derefAny(m.ToolCallID), nil
	case "tool_calls":
		return m.ToolCalls.SQLValue(col)
	case "tool_name":
		return derefAny(m.ToolName), nil
	case "effect_disposition":
		return derefAny(m.EffectDisposition), nil
	case "token_count":
		if m.TokenCount == nil {
			return nil, nil
		}
		return *m.TokenCount, nil
	case "finish_reason":
		return derefAny(m.FinishReason), nil
	case "reasoning":
		return derefAny(m.Reasoning), nil
	case "reasoning_content":
		return derefAny(m.ReasoningContent), nil
	case "reasoning_details":
		return m.ReasoningDetails.SQLValue(col)
	case "codex_reasoning_items":
		return m.CodexReasoningItems.SQLValue(col)
	case "codex_message_items":
		return m.CodexMessageItems.SQLValue(col)
	case "platform_message_id":
		return derefAny(m.PlatformMessageID), nil
	case "observed":
		return m.Observed, nil
	case "_compressed_summary":
		return m.CompressedSummary, nil
	case "active":
		return m.Active, nil
	case "compacted":
		return m.Compacted, nil
	case "api_content":
		return derefAny(m.APIContent), nil
	case "display_kind":
		return derefAny(m.DisplayKind), nil
	case "display_metadata":
		return m.DisplayMetadata.SQLValue(col)
	case "display_identity":
		if m.DisplayIdentity == nil {
			return nil, nil
		}
		return m.DisplayIdentity, nil
	case "display_order":
		if m.DisplayOrder == nil {
			return nil, nil
		}
		return *m.DisplayOrder, nil
	}
	return nil, errs.Errorf(errs.ErrInvalid, "messages.append", "unknown column %s", col)
}

// derefAny is *s, or nil (NULL) for a nil pointer.
func derefAny(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}

package repo

import (
	"context"
	"database/sql"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/models"
)

// Listing rows are read with database/sql straight into the struct fields
// (no GORM reflection per row, which was a third of a listing's CPU).
// Columns are matched by name; a NULL in a non-pointer number column is 0
// and JSON columns go through the pyjson rules (textCol), as GORM's scan
// does (TestSessionScanMatchesGORM).

// colDest is where one column goes: dest is handed to rows.Scan, post (when
// set) moves a holder's value into the row after the scan.
type colDest struct {
	dest any
	post func()
}

func nullInt(dst *int64) colDest {
	var h sql.NullInt64
	return colDest{&h, func() { *dst = h.Int64 }}
}

func jsonText(dst *models.JSONText) colDest {
	var h any
	return colDest{&h, func() { *dst = textCol(h) }}
}

func strCol(dst *string) colDest {
	var h sql.NullString
	return colDest{&h, func() { *dst = h.String }}
}

func nullEpoch(dst *models.Epoch) colDest {
	var h sql.NullFloat64
	return colDest{&h, func() { *dst = models.Epoch(h.Float64) }}
}

// sessionCol returns the destination of column name in s (ok false for a
// column the model does not have): identity, routing, model, lineage, times,
// title, workspace and state columns here, the counters, billing and
// compression state in sessionAccountingCol.
func sessionCol(s *models.Session, name string) (colDest, bool) {
	switch name {
	case "id":
		return strCol(&s.ID), true
	case "source":
		return strCol(&s.Source), true
	case "created_source":
		return colDest{dest: &s.CreatedSource}, true
	case "user_id":
		return colDest{dest: &s.UserID}, true
	case "session_key":
		return colDest{dest: &s.SessionKey}, true
	case "chat_id":
		return colDest{dest: &s.ChatID}, true
	case "chat_type":
		return colDest{dest: &s.ChatType}, true
	case "thread_id":
		return colDest{dest: &s.ThreadID}, true
	case "display_name":
		return colDest{dest: &s.DisplayName}, true
	case "origin_json":
		return jsonText(&s.OriginJSON), true
	case "expiry_finalized":
		return nullInt(&s.ExpiryFinalized), true
	case "model":
		return colDest{dest: &s.Model}, true
	case "model_config":
		return jsonText(&s.ModelConfig), true
	case "system_prompt":
		return colDest{dest: &s.SystemPrompt}, true
	case "system_prompt_hash":
		return colDest{dest: &s.SystemPromptHash}, true
	case "parent_session_id":
		return colDest{dest: &s.ParentSessionID}, true
	case "started_at":
		return nullEpoch(&s.StartedAt), true
	case "ended_at":
		return colDest{dest: &s.EndedAt}, true
	case "end_reason":
		return colDest{dest: &s.EndReason}, true
	case "cwd":
		return colDest{dest: &s.Cwd}, true
	case "git_branch":
		return colDest{dest: &s.GitBranch}, true
	case "git_repo_root":
		return colDest{dest: &s.GitRepoRoot}, true
	case "git_metadata_generation":
		return nullInt(&s.GitMetadataGeneration), true
	case "title":
		return colDest{dest: &s.Title}, true
	case "title_source":
		return colDest{dest: &s.TitleSource}, true
	case "last_activity_at":
		return colDest{dest: &s.LastActivityAt}, true
	case "last_activity_description":
		return colDest{dest: &s.LastActivityDescription}, true
	case "last_activity_provenance":
		return colDest{dest: &s.LastActivityProvenance}, true
	case "handoff_state":
		return colDest{dest: &s.HandoffState}, true
	case "handoff_platform":
		return colDest{dest: &s.HandoffPlatform}, true
	case "handoff_error":
		return colDest{dest: &s.HandoffError}, true
	case "profile_name":
		return colDest{dest: &s.ProfileName}, true
	case "transport_profile":
		return colDest{dest: &s.TransportProfile}, true
	case "archived":
		return nullInt(&s.Archived), true
	case "pinned":
		return nullInt(&s.Pinned), true
	case "hidden":
		return nullInt(&s.Hidden), true
	case "last_read_at":
		return colDest{dest: &s.LastReadAt}, true
	case "tool_names":
		return jsonText(&s.ToolNames), true
	}
	return sessionAccountingCol(s, name)
}

// sessionAccountingCol is sessionCol for the counter, token, billing, cost
// and compression-state columns.
func sessionAccountingCol(s *models.Session, name string) (colDest, bool) {
	switch name {
	case "message_count":
		return nullInt(&s.MessageCount), true
	case "tool_call_count":
		return nullInt(&s.ToolCallCount), true
	case "input_tokens":
		return nullInt(&s.InputTokens), true
	case "output_tokens":
		return nullInt(&s.OutputTokens), true
	case "cache_read_tokens":
		return nullInt(&s.CacheReadTokens), true
	case "cache_write_tokens":
		return nullInt(&s.CacheWriteTokens), true
	case "reasoning_tokens":
		return nullInt(&s.ReasoningTokens), true
	case "billing_provider":
		return colDest{dest: &s.BillingProvider}, true
	case "billing_base_url":
		return colDest{dest: &s.BillingBaseURL}, true
	case "billing_mode":
		return colDest{dest: &s.BillingMode}, true
	case "estimated_cost_usd":
		return colDest{dest: &s.EstimatedCostUSD}, true
	case "actual_cost_usd":
		return colDest{dest: &s.ActualCostUSD}, true
	case "cost_status":
		return colDest{dest: &s.CostStatus}, true
	case "cost_source":
		return colDest{dest: &s.CostSource}, true
	case "pricing_version":
		return colDest{dest: &s.PricingVersion}, true
	case "api_call_count":
		return nullInt(&s.APICallCount), true
	case "compression_failure_cooldown_until":
		return colDest{dest: &s.CompressionFailureCooldownUntil}, true
	case "compression_failure_error":
		return colDest{dest: &s.CompressionFailureError}, true
	case "compression_fallback_streak":
		return nullInt(&s.CompressionFallbackStreak), true
	case "compression_ineffective_count":
		return nullInt(&s.CompressionIneffectiveCount), true
	case "compression_recovery_deadline":
		return colDest{dest: &s.CompressionRecoveryDeadline}, true
	case "compression_overload_streak":
		return nullInt(&s.CompressionOverloadStreak), true
	case "rewind_count":
		return nullInt(&s.RewindCount), true
	}
	return colDest{}, false
}

// richCol is sessionCol for a listing row's extra columns, then its
// session's.
func richCol(r *richRow, name string) (colDest, bool) {
	switch name {
	case "_prompt":
		return colDest{dest: &r.PromptResolved}, true
	case "_preview":
		return strCol(&r.Preview), true
	case "_last_active":
		return colDest{dest: &r.LastActive}, true
	case "t_id":
		return colDest{dest: &r.TipID}, true
	case "tip_ended_at":
		return colDest{dest: &r.TipEndedAt}, true
	case "tip_end_reason":
		return colDest{dest: &r.TipEndReason}, true
	case "tip_msgs":
		return nullInt(&r.TipMsgs), true
	case "tip_tools":
		return nullInt(&r.TipTools), true
	case "tip_title":
		return colDest{dest: &r.TipTitle}, true
	case "tip_model":
		return colDest{dest: &r.TipModel}, true
	case "tip_prompt":
		return colDest{dest: &r.TipPrompt}, true
	case "tip_cwd":
		return colDest{dest: &r.TipCwd}, true
	case "tip_git_branch":
		return colDest{dest: &r.TipGitBranch}, true
	case "tip_git_repo_root":
		return colDest{dest: &r.TipGitRepoRoot}, true
	case "tip_preview":
		return strCol(&r.TipPreview), true
	case "tip_last_active":
		return colDest{dest: &r.TipLastActive}, true
	case "_bound":
		return colDest{dest: &r.Bound}, true
	case "_above":
		return nullInt(&r.Above), true
	}
	return sessionCol(&r.Session, name)
}

// scanRich runs q and reads every row into a richRow.
func scanRich(tx *gorm.DB, q string, args ...any) ([]richRow, error) {
	rows, err := queryRows(tx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	// Which columns go into the row: known ones, the first of a repeated
	// name (as in GORM); the others are read into a sink.
	var probe richRow
	use := make([]bool, len(cols))
	seen := make(map[string]bool, len(cols))
	for i, c := range cols {
		if _, ok := richCol(&probe, c); ok && !seen[c] {
			use[i], seen[c] = true, true
		}
	}
	var out []richRow
	dest := make([]any, len(cols))
	posts := make([]func(), 0, len(cols))
	var sink sql.RawBytes
	for rows.Next() {
		out = append(out, richRow{})
		r := &out[len(out)-1]
		posts = posts[:0]
		for i, c := range cols {
			if !use[i] {
				dest[i] = &sink
				continue
			}
			cd, _ := richCol(r, c)
			dest[i] = cd.dest
			if cd.post != nil {
				posts = append(posts, cd.post)
			}
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		for _, p := range posts {
			p()
		}
	}
	return out, rows.Err()
}

// queryRows runs q on tx's connection with database/sql directly (no GORM
// statement building: its callbacks and SQL rewriting cost as much as a
// short statement's compilation on the hot reads).
// On PostgreSQL GORM stays in the path: it rewrites the ? placeholders.
func queryRows(tx *gorm.DB, q string, args ...any) (*sql.Rows, error) {
	ctx, pool, ok := directConn(tx)
	if !ok {
		return tx.Raw(q, args...).Rows()
	}
	return pool.QueryContext(ctx, q, args...)
}

// directConn returns tx's context and connection (or transaction) for a
// statement sent with database/sql itself, as written: the SQLite hot
// paths (queryRows, appendOne). ok is false on PostgreSQL, whose
// statements need GORM's rewriting of the ? placeholders, and when tx has
// no connection yet.
func directConn(tx *gorm.DB) (ctx context.Context, pool gorm.ConnPool, ok bool) {
	if isPostgres(tx) || tx.Statement.ConnPool == nil {
		return nil, nil, false
	}
	ctx = tx.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	return ctx, tx.Statement.ConnPool, true
}

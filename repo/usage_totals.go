package repo

import (
	"context"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/models"
)

// Usage reads of Hermes' SessionUsageMixin: store-wide totals, auxiliary
// usage per task over a lineage, and the recent main-loop route.

// TotalsOptions filters Usage.Totals.
type TotalsOptions struct {
	// MinMessages is the least message_count a session needs: 0 means
	// Hermes' default of 1, a negative value no minimum.
	MinMessages int
	// IncludeArchived also counts archived sessions.
	IncludeArchived bool
}

// Totals is the store-wide usage of Usage.Totals.
type Totals struct {
	Tokens  int64   `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
}

// TokenCounts are the five token counters Hermes keeps per session and per
// usage row; embedded in the aggregates below (their JSON is flat).
type TokenCounts struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	ReasoningTokens  int64 `json:"reasoning_tokens"`
}

// AuxTotals is the auxiliary usage of one task.
type AuxTotals struct {
	APICalls int64 `json:"api_calls"`
	TokenCounts
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
}

// ModelRoute is one main-loop route of Usage.RecentModelRoute.
type ModelRoute struct {
	Model           string `json:"model"`
	BillingProvider string `json:"billing_provider"`
	BillingBaseURL  string `json:"billing_base_url"`
	BillingMode     string `json:"billing_mode"`
	APICallCount    int64  `json:"api_call_count"`
}

func (r *usageRepo) Totals(ctx context.Context, opt TotalsOptions) (Totals, error) {
	min := opt.MinMessages
	if min == 0 {
		min = 1
	}
	q := `SELECT COALESCE(SUM(COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0)), 0) AS tokens,
		COALESCE(SUM(COALESCE(actual_cost_usd, estimated_cost_usd, 0)), 0) AS cost_usd
		FROM sessions WHERE parent_session_id IS NULL`
	var args []any
	if min > 0 {
		q += " AND message_count >= ?"
		args = append(args, min)
	}
	if !opt.IncludeArchived {
		q += " AND COALESCE(archived, 0) = 0"
	}
	return Read(ctx, r.db, "usage.totals", func(tx *gorm.DB) (Totals, error) {
		var t Totals
		err := tx.Raw(q, args...).Scan(&t).Error
		return t, err
	})
}

// parentChain returns sid's parent chain, root first (every parent edge,
// at most 100 sessions, cycles cut); a missing session is its own chain.
func parentChain(tx *gorm.DB, sid string) ([]string, error) {
	chain := []string{}
	seen := map[string]bool{}
	for cur := sid; cur != "" && !seen[cur] && len(chain) < 100; {
		chain = append(chain, cur)
		seen[cur] = true
		p, ok, err := parentOf(tx, cur)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		cur = p
	}
	for i, j := 0, len(chain)-1; i < j; i, j = i+1, j-1 {
		chain[i], chain[j] = chain[j], chain[i]
	}
	return chain, nil
}

func (r *usageRepo) AuxiliaryByTask(ctx context.Context, sid string) (map[string]AuxTotals, error) {
	const op = "usage.auxiliary_by_task"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) (map[string]AuxTotals, error) {
		chain, err := parentChain(tx, sid)
		if err != nil {
			return nil, err
		}
		for i := len(chain) - 1; i >= 0; i-- {
			var mc []struct{ ModelConfig *string }
			if err := tx.Model(&models.Session{}).Select("model_config").Where("id = ?", chain[i]).Limit(1).Find(&mc).Error; err != nil {
				return nil, err
			}
			if len(mc) == 1 && mc[0].ModelConfig != nil {
				if v, ok := models.JSONGetString([]byte(*mc[0].ModelConfig), "_branched_from"); ok && v != "" {
					chain = chain[i:]
					break
				}
			}
		}
		var rows []struct {
			Task string
			AuxTotals
		}
		if err := tx.Raw(query("usage_aux_totals"), chain).Scan(&rows).Error; err != nil {
			return nil, err
		}
		out := make(map[string]AuxTotals, len(rows))
		for _, row := range rows {
			out[row.Task] = row.AuxTotals
		}
		return out, nil
	})
}

func (r *usageRepo) RecentModelRoute(ctx context.Context, sid string) (*ModelRoute, error) {
	const op = "usage.recent_model_route"
	if err := checkID(op, sid); err != nil {
		return nil, err
	}
	// rowid breaks same-timestamp ties toward the route that appeared
	// later; PostgreSQL has no rowid, first_seen stands in for it.
	tie := r.db.rowOrder("first_seen") + " DESC"
	return Read(ctx, r.db, op, func(tx *gorm.DB) (*ModelRoute, error) {
		var rows []ModelRoute
		if err := tx.Raw(`SELECT model, billing_provider, billing_base_url, billing_mode, api_call_count
			FROM session_model_usage WHERE session_id = ? AND task = '' AND model <> 'unknown' AND billing_provider <> ''
			ORDER BY last_seen DESC, `+tie+` LIMIT 1`, sid).Scan(&rows).Error; err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			return nil, nil
		}
		return &rows[0], nil
	})
}

package repo

import (
	"context"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// TokenUpdate is one usage report for Sessions.UpdateTokenCounts, with the
// arguments of Hermes' update_token_counts. Empty strings mean "not given".
type TokenUpdate struct {
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens, ReasoningTokens int64
	APICallCount                                                                  int64
	Model                                                                         string
	EstimatedCostUSD                                                              *float64
	ActualCostUSD                                                                 *float64
	CostStatus, CostSource, PricingVersion                                        string
	BillingProvider, BillingBaseURL, BillingMode                                  string
	// Absolute sets the session totals (and actual_cost_usd when given)
	// instead of adding to them, and writes no attribution row.
	Absolute bool
	// Source is used when the session row has to be created, and replaces
	// the placeholder source 'unknown' of an existing row.
	Source string
	// Task names auxiliary work ('' = the main agent loop).
	Task string
}

func (u TokenUpdate) hasUsage() bool {
	return u.InputTokens != 0 || u.OutputTokens != 0 || u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 ||
		u.ReasoningTokens != 0 || u.APICallCount != 0 || (u.EstimatedCostUSD != nil && *u.EstimatedCostUSD != 0)
}

func (u TokenUpdate) accounted() bool {
	return u.hasUsage() || (u.ActualCostUSD != nil && *u.ActualCostUSD != 0)
}

func orDefault(p *string, d string) string {
	if p == nil {
		return d
	}
	return *p
}

func ptrEq(p *string, v string) bool { return p != nil && *p == v }

func (r *sessionRepo) UpdateTokenCounts(ctx context.Context, id string, u TokenUpdate) error {
	const op = "sessions.update_token_counts"
	if err := checkID(op, id); err != nil {
		return err
	}
	for f, v := range map[string]string{"model": u.Model, "billing_provider": u.BillingProvider, "billing_base_url": u.BillingBaseURL,
		"billing_mode": u.BillingMode, "task": u.Task, "cost_status": u.CostStatus, "cost_source": u.CostSource, "pricing_version": u.PricingVersion} {
		if err := checkText(op, f, v); err != nil {
			return err
		}
	}
	// The value rules of a stored session (rowcheck.go): a report adds
	// (or sets) counters and costs, none of which may go below zero.
	for _, f := range []struct {
		name string
		v    int64
	}{{"input_tokens", u.InputTokens}, {"output_tokens", u.OutputTokens}, {"cache_read_tokens", u.CacheReadTokens},
		{"cache_write_tokens", u.CacheWriteTokens}, {"reasoning_tokens", u.ReasoningTokens}, {"api_call_count", u.APICallCount}} {
		if err := checkCount(op, f.name, f.v); err != nil {
			return err
		}
	}
	if err := checkCost(op, "estimated_cost_usd", u.EstimatedCostUSD); err != nil {
		return err
	}
	if err := checkCost(op, "actual_cost_usd", u.ActualCostUSD); err != nil {
		return err
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		return applyTokenUpdate(tx, id, u)
	})
}

func applyTokenUpdate(tx *gorm.DB, id string, u TokenUpdate) error {
	if err := lockSession(tx, id); err != nil {
		return err
	}
	source := u.Source
	if source == "" {
		source = "unknown"
	}
	// Row guard (Hermes' _insert_session_row(id, source or 'unknown',
	// model=model)): a missing row is created; an existing one gets its
	// placeholder source replaced and a NULL model filled, whether or not
	// the report accounts for anything.
	if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&models.Session{ID: id, Source: source,
		Model: models.TextOrNil(u.Model), StartedAt: models.Now()}).Error; err != nil {
		return err
	}
	s, err := getSession(tx, id)
	if err != nil {
		return err
	}
	up := map[string]any{}
	if s.Source == "unknown" && source != "unknown" {
		up["source"] = source
	}
	if s.Model == nil && u.Model != "" {
		up["model"] = u.Model
		m := u.Model
		s.Model = &m
	}
	// Route values count only for a report that accounts for something.
	model, provider, baseURL, mode := u.Model, u.BillingProvider, u.BillingBaseURL, u.BillingMode
	if !u.accounted() {
		model, provider, baseURL, mode = "", "", "", ""
	}
	if u.Task == "" && s.APICallCount == 0 && model != "" && provider != "" &&
		(!ptrEq(s.Model, model) || !ptrEq(s.BillingProvider, provider)) {
		// First accounted route of the main loop: the route is the session's.
		up["model"] = model
		up["billing_provider"] = provider
		up["billing_base_url"] = models.TextOrNil(baseURL)
		up["billing_mode"] = models.TextOrNil(mode)
		s.Model, s.BillingProvider, s.BillingBaseURL, s.BillingMode = &model, &provider, models.TextOrNil(baseURL), models.TextOrNil(mode)
	}
	est := 0.0
	if u.EstimatedCostUSD != nil {
		est = *u.EstimatedCostUSD
	}
	counters := map[string]int64{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens, "reasoning_tokens": u.ReasoningTokens}
	if u.Absolute {
		// Absolute (gateway cumulative totals): counters, api_call_count and
		// the estimate are set; actual_cost_usd is set when given.
		for col, v := range counters {
			up[col] = v
		}
		up["api_call_count"] = u.APICallCount
		up["estimated_cost_usd"] = est
		if u.ActualCostUSD != nil {
			up["actual_cost_usd"] = *u.ActualCostUSD
		}
	} else {
		// Delta: token counters add without COALESCE (a NULL counter of an
		// old row stays NULL, as in Hermes); the others treat NULL as 0.
		for col, v := range counters {
			up[col] = gorm.Expr(col+" + ?", v)
		}
		up["api_call_count"] = gorm.Expr("COALESCE(api_call_count, 0) + ?", u.APICallCount)
		up["estimated_cost_usd"] = gorm.Expr("COALESCE(estimated_cost_usd, 0) + ?", est)
		if u.ActualCostUSD != nil {
			up["actual_cost_usd"] = gorm.Expr("COALESCE(actual_cost_usd, 0) + ?", *u.ActualCostUSD)
		}
	}
	for col, v := range map[string]string{"cost_status": u.CostStatus, "cost_source": u.CostSource, "pricing_version": u.PricingVersion} {
		if v != "" {
			up[col] = v
		}
	}
	if _, set := up["billing_provider"]; !set {
		for col, pair := range map[string]struct {
			cur *string
			v   string
		}{"model": {s.Model, model}, "billing_provider": {s.BillingProvider, provider}, "billing_base_url": {s.BillingBaseURL, baseURL}, "billing_mode": {s.BillingMode, mode}} {
			if pair.cur == nil && pair.v != "" {
				up[col] = pair.v
			}
		}
	}
	if err := tx.Model(&models.Session{}).Where("id = ?", id).Updates(up).Error; err != nil {
		return err
	}
	if u.Absolute || !u.hasUsage() {
		return nil
	}
	return upsertUsage(tx, s, u, model, provider, baseURL, mode)
}

func upsertUsage(tx *gorm.DB, s *models.Session, u TokenUpdate, model, provider, baseURL, mode string) error {
	if u.Task == "" {
		if model == "" {
			model = orDefault(s.Model, "unknown")
		}
		if provider == "" {
			provider = orDefault(s.BillingProvider, "")
		}
		if baseURL == "" {
			baseURL = orDefault(s.BillingBaseURL, "")
		}
		if mode == "" {
			mode = orDefault(s.BillingMode, "")
		}
	} else if model == "" {
		model = "unknown"
	}
	now := models.Now()
	row := models.SessionModelUsage{
		SessionID: s.ID, Model: model, BillingProvider: provider, BillingBaseURL: baseURL, BillingMode: mode, Task: u.Task,
		APICallCount: u.APICallCount, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens,
		CostStatus: models.TextOrNil(u.CostStatus), CostSource: models.TextOrNil(u.CostSource),
		FirstSeen: &now, LastSeen: &now,
	}
	if u.EstimatedCostUSD != nil {
		row.EstimatedCostUSD = *u.EstimatedCostUSD
	}
	if u.ActualCostUSD != nil {
		row.ActualCostUSD = *u.ActualCostUSD
	}
	t := "session_model_usage."
	set := map[string]any{"last_seen": now}
	for _, c := range []string{"api_call_count", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd"} {
		set[c] = gorm.Expr(t + c + " + excluded." + c)
	}
	if u.CostStatus != "" {
		set["cost_status"] = u.CostStatus
	}
	if u.CostSource != "" {
		set["cost_source"] = u.CostSource
	}
	return tx.Clauses(clause.OnConflict{
		Columns:   []clause.Column{{Name: "session_id"}, {Name: "model"}, {Name: "billing_provider"}, {Name: "billing_base_url"}, {Name: "billing_mode"}, {Name: "task"}},
		DoUpdates: clause.Assignments(set),
	}).Create(&row).Error
}

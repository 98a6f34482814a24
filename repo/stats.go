package repo

import (
	"context"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// AuxUsage is one auxiliary API call (vision, compression, title
// generation, ...) for Usage.RecordAuxiliary. Empty route parts are
// stored as "" ("unknown" for the model).
type AuxUsage struct {
	Task                                                                          string
	Model, BillingProvider, BillingBaseURL, BillingMode                           string
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens, ReasoningTokens int64
	EstimatedCostUSD, ActualCostUSD                                               float64
	CostStatus, CostSource                                                        string
	// APICallCount defaults to 1.
	APICallCount int64
}

// StatsFilter restricts the statistics to sessions of one source (Source,
// else any of Sources) and/or started at or after Since (epoch seconds;
// 0 = all).
type StatsFilter struct {
	Source  string
	Sources []string
	Since   float64
}

// ModelStats aggregates session_model_usage per model (every task).
type ModelStats struct {
	Model    string `json:"model"`
	Sessions int64  `json:"sessions"`
	APICalls int64  `json:"api_calls"`
	TokenCounts
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ActualCostUSD    float64 `json:"actual_cost_usd"`
}

// SourceStats aggregates the session totals per source.
type SourceStats struct {
	Source           string  `json:"source"`
	Sessions         int64   `json:"sessions"`
	Messages         int64   `json:"messages"`
	ToolCalls        int64   `json:"tool_calls"`
	APICalls         int64   `json:"api_calls"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ActualCostUSD    float64 `json:"actual_cost_usd"`
}

// SessionTokens is one row of Usage.TopSessions.
type SessionTokens struct {
	ID               string  `json:"id"`
	Source           string  `json:"source"`
	Title            *string `json:"title"`
	Model            *string `json:"model"`
	Messages         int64   `json:"messages"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	TotalTokens      int64   `json:"total_tokens"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
}

// Usage records auxiliary usage and reads usage statistics.
type Usage interface {
	// RecordAuxiliary upserts the usage row of (session, route, task) for
	// an auxiliary call; the session totals are not touched. A missing
	// session row is created as a placeholder (source 'unknown', replaced
	// by the creator's real source later), as Hermes does. ErrInvalid
	// without a task.
	RecordAuxiliary(ctx context.Context, sessionID string, u AuxUsage) error
	// Rows returns a session's attribution rows (model, route, task).
	Rows(ctx context.Context, sessionID string) ([]models.SessionModelUsage, error)
	// ByModel aggregates attribution rows per model, most tokens first.
	ByModel(ctx context.Context, f StatsFilter) ([]ModelStats, error)
	// BySource aggregates session totals per source, most sessions first.
	BySource(ctx context.Context, f StatsFilter) ([]SourceStats, error)
	// TopSessions returns the n sessions (0 = 10) with most input+output
	// tokens.
	TopSessions(ctx context.Context, n int, f StatsFilter) ([]SessionTokens, error)
	// Totals sums tokens (input + output) and spend (actual cost, else the
	// estimate) over root sessions (usage_totals.go).
	Totals(ctx context.Context, opt TotalsOptions) (Totals, error)
	// AuxiliaryByTask sums the auxiliary usage rows (task <> '') of the
	// session's lineage per task: its parent chain from the root, cut at
	// the nearest explicit /branch copy (a branch owns its spend).
	AuxiliaryByTask(ctx context.Context, sessionID string) (map[string]AuxTotals, error)
	// RecentModelRoute returns the most recently used main-loop route
	// (model and billing route of one attribution row, task '', known
	// model and provider), nil when there is none.
	RecentModelRoute(ctx context.Context, sessionID string) (*ModelRoute, error)
}

type usageRepo struct{ db *DB }

// NewUsage returns the GORM implementation of Usage.
func NewUsage(db *DB) Usage { return &usageRepo{db} }

func (r *usageRepo) RecordAuxiliary(ctx context.Context, id string, u AuxUsage) error {
	const op = "usage.record_auxiliary"
	if err := checkID(op, id); err != nil {
		return err
	}
	if u.Task == "" {
		return errs.Errorf(errs.ErrInvalid, op, "task is required for auxiliary usage")
	}
	for f, v := range map[string]string{"task": u.Task, "model": u.Model, "billing_provider": u.BillingProvider,
		"billing_base_url": u.BillingBaseURL, "billing_mode": u.BillingMode, "cost_status": u.CostStatus, "cost_source": u.CostSource} {
		if err := checkText(op, f, v); err != nil {
			return err
		}
	}
	if u.APICallCount == 0 {
		u.APICallCount = 1
	}
	if u.Model == "" {
		u.Model = "unknown"
	}
	now := models.Now()
	row := models.SessionModelUsage{SessionID: id, Model: u.Model, BillingProvider: u.BillingProvider, BillingBaseURL: u.BillingBaseURL,
		BillingMode: u.BillingMode, Task: u.Task, APICallCount: u.APICallCount, InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens,
		EstimatedCostUSD: u.EstimatedCostUSD, ActualCostUSD: u.ActualCostUSD, CostStatus: models.TextOrNil(u.CostStatus),
		CostSource: models.TextOrNil(u.CostSource), FirstSeen: &now, LastSeen: &now}
	set := map[string]any{"last_seen": now}
	for _, c := range []string{"api_call_count", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens", "estimated_cost_usd", "actual_cost_usd"} {
		set[c] = gorm.Expr("session_model_usage." + c + " + excluded." + c)
	}
	if u.CostStatus != "" {
		set["cost_status"] = u.CostStatus
	}
	if u.CostSource != "" {
		set["cost_source"] = u.CostSource
	}
	return r.db.Write(ctx, sqlitex.Routine, op, func(tx *gorm.DB) error {
		if err := lockSession(tx, id); err != nil {
			return err
		}
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).Create(&models.Session{ID: id, Source: "unknown", StartedAt: now}).Error; err != nil {
			return err
		}
		return tx.Clauses(clause.OnConflict{
			Columns:   []clause.Column{{Name: "session_id"}, {Name: "model"}, {Name: "billing_provider"}, {Name: "billing_base_url"}, {Name: "billing_mode"}, {Name: "task"}},
			DoUpdates: clause.Assignments(set),
		}).Create(&row).Error
	})
}

func (r *usageRepo) Rows(ctx context.Context, id string) ([]models.SessionModelUsage, error) {
	const op = "usage.rows"
	if err := checkID(op, id); err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]models.SessionModelUsage, error) {
		out := []models.SessionModelUsage{}
		return out, tx.Where("session_id = ?", id).Order("first_seen, model, task").Find(&out).Error
	})
}

func statsFilter(op string, f StatsFilter, alias string) (*filter, error) {
	q := &filter{}
	if f.Source != "" {
		if err := checkText(op, "source", f.Source); err != nil {
			return nil, err
		}
		q.add(alias+".source = ?", f.Source)
	} else if len(f.Sources) > 0 {
		if err := checkSources(op, f.Sources); err != nil {
			return nil, err
		}
		q.add(alias+".source IN ("+placeholders(len(f.Sources))+")", anySlice(f.Sources)...)
	}
	if f.Since > 0 {
		q.add(alias+".started_at >= ?", f.Since)
	}
	return q, nil
}

func (r *usageRepo) ByModel(ctx context.Context, f StatsFilter) ([]ModelStats, error) {
	const op = "usage.by_model"
	q, err := statsFilter(op, f, "s")
	if err != nil {
		return nil, err
	}
	join := ""
	if len(q.where) > 0 {
		join = "JOIN sessions s ON s.id = u.session_id "
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]ModelStats, error) {
		out := []ModelStats{}
		err := tx.Raw(query("stats_by_model", "join", join, "where", q.sql()), q.args...).Scan(&out).Error
		return out, err
	})
}

func (r *usageRepo) BySource(ctx context.Context, f StatsFilter) ([]SourceStats, error) {
	const op = "usage.by_source"
	q, err := statsFilter(op, f, "s")
	if err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]SourceStats, error) {
		out := []SourceStats{}
		err := tx.Raw(`SELECT s.source, COUNT(*) AS sessions, SUM(s.message_count) AS messages, SUM(s.tool_call_count) AS tool_calls,
			SUM(s.api_call_count) AS api_calls, SUM(s.input_tokens) AS input_tokens, SUM(s.output_tokens) AS output_tokens,
			SUM(COALESCE(s.estimated_cost_usd, 0)) AS estimated_cost_usd, SUM(COALESCE(s.actual_cost_usd, 0)) AS actual_cost_usd
			FROM sessions s `+q.sql()+` GROUP BY s.source ORDER BY COUNT(*) DESC, s.source`, q.args...).Scan(&out).Error
		return out, err
	})
}

func (r *usageRepo) TopSessions(ctx context.Context, n int, f StatsFilter) ([]SessionTokens, error) {
	const op = "usage.top_sessions"
	if n < 0 {
		return nil, errs.Errorf(errs.ErrInvalid, op, "n must not be negative")
	}
	if n == 0 {
		n = 10
	}
	q, err := statsFilter(op, f, "s")
	if err != nil {
		return nil, err
	}
	return Read(ctx, r.db, op, func(tx *gorm.DB) ([]SessionTokens, error) {
		out := []SessionTokens{}
		err := tx.Raw(`SELECT s.id, s.source, s.title, s.model, s.message_count AS messages, s.input_tokens, s.output_tokens,
			s.input_tokens + s.output_tokens AS total_tokens, COALESCE(s.estimated_cost_usd, 0) AS estimated_cost_usd
			FROM sessions s `+q.sql()+` ORDER BY total_tokens DESC, s.started_at DESC LIMIT ?`, append(q.args, n)...).Scan(&out).Error
		return out, err
	})
}

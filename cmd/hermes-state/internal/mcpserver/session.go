package mcpserver

import (
	"context"
	"time"
	"unicode/utf8"

	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// maxDescendants caps the descendants get_session lists (a session can have
// thousands of delegate runs); DescendantsTotal says how many there are.
const maxDescendants = 100

// maxSystemPrompt caps the system prompt get_session returns, in bytes.
const maxSystemPrompt = 16 << 10

// SessionInput are the arguments of get_session.
type SessionInput struct {
	SessionID           string `json:"session_id" jsonschema:"Id of the session (or a unique prefix of it)."`
	IncludeSystemPrompt bool   `json:"include_system_prompt,omitempty" jsonschema:"Also return the session's system prompt (its first 16 KiB)."`
}

// SessionInfo is the metadata of a session.
type SessionInfo struct {
	ID                string   `json:"id"`
	Source            string   `json:"source" jsonschema:"Platform: cli, telegram, discord, cron, subagent, ..."`
	Title             string   `json:"title,omitempty"`
	Model             string   `json:"model,omitempty"`
	StartedAt         float64  `json:"started_at" jsonschema:"Epoch seconds."`
	StartedTime       string   `json:"started_time,omitempty" jsonschema:"started_at in RFC 3339, UTC."`
	EndedAt           *float64 `json:"ended_at,omitempty" jsonschema:"Epoch seconds; absent while the session is open."`
	EndReason         string   `json:"end_reason,omitempty" jsonschema:"Why it ended: user_exit, compression (continued in a child session), session_reset, cron_complete, ..."`
	LastActivityAt    *float64 `json:"last_activity_at,omitempty"`
	MessageCount      int64    `json:"message_count"`
	ToolCallCount     int64    `json:"tool_call_count"`
	ParentSessionID   string   `json:"parent_session_id,omitempty"`
	UserID            string   `json:"user_id,omitempty"`
	ChatType          string   `json:"chat_type,omitempty"`
	DisplayName       string   `json:"display_name,omitempty"`
	Cwd               string   `json:"cwd,omitempty" jsonschema:"Working directory of a CLI session."`
	GitBranch         string   `json:"git_branch,omitempty"`
	GitRepoRoot       string   `json:"git_repo_root,omitempty"`
	Archived          bool     `json:"archived"`
	Pinned            bool     `json:"pinned"`
	Hidden            bool     `json:"hidden"`
	SystemPromptChars int      `json:"system_prompt_chars" jsonschema:"Length of the system prompt in characters (0 when none)."`
	SystemPrompt      string   `json:"system_prompt,omitempty" jsonschema:"With include_system_prompt: the prompt, cut at 16 KiB."`
	// Handoff, TurnLease and CompressionLock are Hermes' coordination rows
	// of the session (read only).
	Handoff         *HandoffInfo `json:"handoff,omitempty" jsonschema:"The session's move to another platform, when one was requested."`
	TurnLease       *LeaseInfo   `json:"turn_lease,omitempty" jsonschema:"Which process answers in this conversation (keyed by its compression root)."`
	CompressionLock *LeaseInfo   `json:"compression_lock,omitempty" jsonschema:"Which process is summarising this session."`
}

// HandoffInfo is a session's handoff record.
type HandoffInfo struct {
	State    string `json:"state" jsonschema:"pending, running, completed or failed."`
	Platform string `json:"platform,omitempty"`
	Error    string `json:"error,omitempty"`
}

// LeaseInfo is a turn lease or compression lock row.
type LeaseInfo struct {
	Holder     string  `json:"holder"`
	AcquiredAt float64 `json:"acquired_at" jsonschema:"Epoch seconds."`
	ExpiresAt  float64 `json:"expires_at" jsonschema:"Epoch seconds."`
	Live       bool    `json:"live" jsonschema:"False when the row has expired (the next claimer takes it over)."`
	Key        string  `json:"key,omitempty" jsonschema:"For a turn lease: the conversation it is keyed by."`
}

func leaseInfo(l repo.Lease) *LeaseInfo {
	return &LeaseInfo{Holder: l.Holder, AcquiredAt: float64(l.AcquiredAt), ExpiresAt: float64(l.ExpiresAt), Live: l.Live, Key: l.Key}
}

// Lineage is where a session sits among its relatives.
type Lineage struct {
	Ancestors        []string `json:"ancestors" jsonschema:"Parent chain, nearest first."`
	Descendants      []string `json:"descendants" jsonschema:"Sessions below this one (children first), at most 100."`
	DescendantsTotal int      `json:"descendants_total"`
	CompressionChain []string `json:"compression_chain" jsonschema:"The compressed conversation this session belongs to, from its first session to its live tip."`
	CompressionTip   string   `json:"compression_tip" jsonschema:"The session that continues this conversation now (itself when not compressed)."`
}

// ModelUsage is the usage of one model (and billing route, task) in a session.
type ModelUsage struct {
	Model            string  `json:"model"`
	BillingProvider  string  `json:"billing_provider,omitempty"`
	Task             string  `json:"task,omitempty"`
	APICallCount     int64   `json:"api_call_count"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	ReasoningTokens  int64   `json:"reasoning_tokens"`
	EstimatedCostUSD float64 `json:"estimated_cost_usd"`
	ActualCostUSD    float64 `json:"actual_cost_usd"`
}

// Usage is the token usage and cost of a session.
type Usage struct {
	InputTokens      int64        `json:"input_tokens"`
	OutputTokens     int64        `json:"output_tokens"`
	CacheReadTokens  int64        `json:"cache_read_tokens"`
	CacheWriteTokens int64        `json:"cache_write_tokens"`
	ReasoningTokens  int64        `json:"reasoning_tokens"`
	APICallCount     int64        `json:"api_call_count"`
	EstimatedCostUSD *float64     `json:"estimated_cost_usd,omitempty"`
	ActualCostUSD    *float64     `json:"actual_cost_usd,omitempty"`
	CostStatus       string       `json:"cost_status,omitempty"`
	BillingProvider  string       `json:"billing_provider,omitempty"`
	ByModel          []ModelUsage `json:"by_model" jsonschema:"Usage per model, first used first."`
}

// SessionOutput is the result of get_session.
type SessionOutput struct {
	Session SessionInfo `json:"session"`
	Lineage Lineage     `json:"lineage"`
	Usage   Usage       `json:"usage"`
}

func epochPtr(e *models.Epoch) *float64 {
	if e == nil {
		return nil
	}
	f := float64(*e)
	return &f
}

func (s *server) session(ctx context.Context, in SessionInput) (SessionOutput, error) {
	id, err := s.resolve(ctx, in.SessionID)
	if err != nil {
		return SessionOutput{}, err
	}
	r, err := s.st.Sessions().Get(ctx, id)
	if err != nil {
		return SessionOutput{}, err
	}
	out := SessionOutput{Session: SessionInfo{ID: r.ID, Source: r.Source, Title: ptr.Deref(r.Title), Model: ptr.Deref(r.Model),
		StartedAt: float64(r.StartedAt), StartedTime: isoTime(float64(r.StartedAt)), EndedAt: epochPtr(r.EndedAt),
		EndReason: ptr.Deref(r.EndReason), LastActivityAt: epochPtr(r.LastActivityAt), MessageCount: r.MessageCount,
		ToolCallCount: r.ToolCallCount, ParentSessionID: ptr.Deref(r.ParentSessionID), UserID: ptr.Deref(r.UserID),
		ChatType: ptr.Deref(r.ChatType), DisplayName: ptr.Deref(r.DisplayName), Cwd: ptr.Deref(r.Cwd), GitBranch: ptr.Deref(r.GitBranch),
		GitRepoRoot: ptr.Deref(r.GitRepoRoot), Archived: r.Archived != 0, Pinned: r.Pinned != 0, Hidden: r.Hidden != 0}}
	if st := ptr.Deref(r.HandoffState); st != "" {
		out.Session.Handoff = &HandoffInfo{State: st, Platform: ptr.Deref(r.HandoffPlatform), Error: ptr.Deref(r.HandoffError)}
	}
	now := time.Now()
	if l, ok, err := s.st.TurnLeases().Get(ctx, id, now); err != nil {
		return SessionOutput{}, err
	} else if ok {
		out.Session.TurnLease = leaseInfo(l)
	}
	if l, ok, err := s.st.CompressionLocks().Get(ctx, id, now); err != nil {
		return SessionOutput{}, err
	} else if ok {
		out.Session.CompressionLock = leaseInfo(l)
	}
	if p := ptr.Deref(r.SystemPrompt); p != "" {
		out.Session.SystemPromptChars = utf8.RuneCountInString(p)
		if in.IncludeSystemPrompt {
			if len(p) > maxSystemPrompt {
				cut := maxSystemPrompt
				for cut > 0 && !utf8.RuneStart(p[cut]) {
					cut--
				}
				p = p[:cut] + " …"
			}
			out.Session.SystemPrompt = p
		}
	}

	lin := s.st.Lineage()
	l := &out.Lineage
	if l.Ancestors, err = lin.Ancestors(ctx, id); err != nil {
		return SessionOutput{}, err
	}
	if l.Descendants, err = lin.Descendants(ctx, id); err != nil {
		return SessionOutput{}, err
	}
	l.DescendantsTotal = len(l.Descendants)
	if len(l.Descendants) > maxDescendants {
		l.Descendants = l.Descendants[:maxDescendants]
	}
	if l.CompressionChain, err = lin.CompressionChain(ctx, id); err != nil {
		return SessionOutput{}, err
	}
	if l.CompressionTip, err = lin.CompressionTip(ctx, id); err != nil {
		return SessionOutput{}, err
	}
	for _, p := range []*[]string{&l.Ancestors, &l.Descendants, &l.CompressionChain} {
		if *p == nil {
			*p = []string{}
		}
	}

	u := &out.Usage
	u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.ReasoningTokens, u.APICallCount =
		r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, r.ReasoningTokens, r.APICallCount
	u.EstimatedCostUSD, u.ActualCostUSD = r.EstimatedCostUSD, r.ActualCostUSD
	u.CostStatus, u.BillingProvider = ptr.Deref(r.CostStatus), ptr.Deref(r.BillingProvider)
	rows, err := s.st.Usage().Rows(ctx, id)
	if err != nil {
		return SessionOutput{}, err
	}
	u.ByModel = make([]ModelUsage, 0, len(rows))
	for _, m := range rows {
		u.ByModel = append(u.ByModel, ModelUsage{Model: m.Model, BillingProvider: m.BillingProvider, Task: m.Task,
			APICallCount: m.APICallCount, InputTokens: m.InputTokens, OutputTokens: m.OutputTokens,
			CacheReadTokens: m.CacheReadTokens, CacheWriteTokens: m.CacheWriteTokens, ReasoningTokens: m.ReasoningTokens,
			EstimatedCostUSD: m.EstimatedCostUSD, ActualCostUSD: m.ActualCostUSD})
	}
	return out, nil
}

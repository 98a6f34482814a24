// Package models holds the GORM structs of the Hermes state.db tables, the
// JSON column types and their serializer, and the epoch-time type. It does
// no database access. (The error kinds are in internal/errs, re-exported by
// the root package.)
//
// Column names, SQLite types, defaults and NOT NULL follow Hermes schema v30
// (../shared/spec/schema.md). JSON tags are the column names, so marshalling
// a struct gives the dict Hermes' get_session / get_messages return.
package models

import "strings"

// Session is one row of the sessions table.
type Session struct {
	ID                              string   `gorm:"column:id;type:TEXT;primaryKey" json:"id"`
	Source                          string   `gorm:"column:source;type:TEXT;not null" json:"source"`
	CreatedSource                   *string  `gorm:"column:created_source;type:TEXT" json:"created_source"`
	UserID                          *string  `gorm:"column:user_id;type:TEXT" json:"user_id"`
	SessionKey                      *string  `gorm:"column:session_key;type:TEXT" json:"session_key"`
	ChatID                          *string  `gorm:"column:chat_id;type:TEXT" json:"chat_id"`
	ChatType                        *string  `gorm:"column:chat_type;type:TEXT" json:"chat_type"`
	ThreadID                        *string  `gorm:"column:thread_id;type:TEXT" json:"thread_id"`
	DisplayName                     *string  `gorm:"column:display_name;type:TEXT" json:"display_name"`
	OriginJSON                      JSONText `gorm:"column:origin_json;type:TEXT;serializer:pyjson" json:"origin_json"`
	ExpiryFinalized                 int64    `gorm:"column:expiry_finalized;type:INTEGER;default:0" json:"expiry_finalized"`
	Model                           *string  `gorm:"column:model;type:TEXT" json:"model"`
	ModelConfig                     JSONText `gorm:"column:model_config;type:TEXT;serializer:pyjson" json:"model_config"`
	SystemPrompt                    *string  `gorm:"column:system_prompt;type:TEXT" json:"system_prompt"`
	SystemPromptHash                *string  `gorm:"column:system_prompt_hash;type:TEXT" json:"system_prompt_hash"`
	ParentSessionID                 *string  `gorm:"column:parent_session_id;type:TEXT" json:"parent_session_id"`
	StartedAt                       Epoch    `gorm:"column:started_at;type:REAL;not null" json:"started_at"`
	EndedAt                         *Epoch   `gorm:"column:ended_at;type:REAL" json:"ended_at"`
	EndReason                       *string  `gorm:"column:end_reason;type:TEXT" json:"end_reason"`
	MessageCount                    int64    `gorm:"column:message_count;type:INTEGER;default:0" json:"message_count"`
	ToolCallCount                   int64    `gorm:"column:tool_call_count;type:INTEGER;default:0" json:"tool_call_count"`
	InputTokens                     int64    `gorm:"column:input_tokens;type:INTEGER;default:0" json:"input_tokens"`
	OutputTokens                    int64    `gorm:"column:output_tokens;type:INTEGER;default:0" json:"output_tokens"`
	CacheReadTokens                 int64    `gorm:"column:cache_read_tokens;type:INTEGER;default:0" json:"cache_read_tokens"`
	CacheWriteTokens                int64    `gorm:"column:cache_write_tokens;type:INTEGER;default:0" json:"cache_write_tokens"`
	ReasoningTokens                 int64    `gorm:"column:reasoning_tokens;type:INTEGER;default:0" json:"reasoning_tokens"`
	Cwd                             *string  `gorm:"column:cwd;type:TEXT" json:"cwd"`
	GitBranch                       *string  `gorm:"column:git_branch;type:TEXT" json:"git_branch"`
	GitRepoRoot                     *string  `gorm:"column:git_repo_root;type:TEXT" json:"git_repo_root"`
	GitMetadataGeneration           int64    `gorm:"column:git_metadata_generation;type:INTEGER;not null;default:0" json:"git_metadata_generation"`
	BillingProvider                 *string  `gorm:"column:billing_provider;type:TEXT" json:"billing_provider"`
	BillingBaseURL                  *string  `gorm:"column:billing_base_url;type:TEXT" json:"billing_base_url"`
	BillingMode                     *string  `gorm:"column:billing_mode;type:TEXT" json:"billing_mode"`
	EstimatedCostUSD                *float64 `gorm:"column:estimated_cost_usd;type:REAL" json:"estimated_cost_usd"`
	ActualCostUSD                   *float64 `gorm:"column:actual_cost_usd;type:REAL" json:"actual_cost_usd"`
	CostStatus                      *string  `gorm:"column:cost_status;type:TEXT" json:"cost_status"`
	CostSource                      *string  `gorm:"column:cost_source;type:TEXT" json:"cost_source"`
	PricingVersion                  *string  `gorm:"column:pricing_version;type:TEXT" json:"pricing_version"`
	Title                           *string  `gorm:"column:title;type:TEXT" json:"title"`
	TitleSource                     *string  `gorm:"column:title_source;type:TEXT" json:"title_source"`
	LastActivityAt                  *Epoch   `gorm:"column:last_activity_at;type:REAL" json:"last_activity_at"`
	LastActivityDescription         *string  `gorm:"column:last_activity_description;type:TEXT" json:"last_activity_description"`
	LastActivityProvenance          *string  `gorm:"column:last_activity_provenance;type:TEXT" json:"last_activity_provenance"`
	APICallCount                    int64    `gorm:"column:api_call_count;type:INTEGER;default:0" json:"api_call_count"`
	HandoffState                    *string  `gorm:"column:handoff_state;type:TEXT" json:"handoff_state"`
	HandoffPlatform                 *string  `gorm:"column:handoff_platform;type:TEXT" json:"handoff_platform"`
	HandoffError                    *string  `gorm:"column:handoff_error;type:TEXT" json:"handoff_error"`
	CompressionFailureCooldownUntil *Epoch   `gorm:"column:compression_failure_cooldown_until;type:REAL" json:"compression_failure_cooldown_until"`
	CompressionFailureError         *string  `gorm:"column:compression_failure_error;type:TEXT" json:"compression_failure_error"`
	CompressionFallbackStreak       int64    `gorm:"column:compression_fallback_streak;type:INTEGER;not null;default:0" json:"compression_fallback_streak"`
	CompressionIneffectiveCount     int64    `gorm:"column:compression_ineffective_count;type:INTEGER;not null;default:0" json:"compression_ineffective_count"`
	CompressionRecoveryDeadline     *Epoch   `gorm:"column:compression_recovery_deadline;type:REAL" json:"compression_recovery_deadline"`
	CompressionOverloadStreak       int64    `gorm:"column:compression_overload_streak;type:INTEGER;not null;default:0" json:"compression_overload_streak"`
	ProfileName                     *string  `gorm:"column:profile_name;type:TEXT" json:"profile_name"`
	TransportProfile                *string  `gorm:"column:transport_profile;type:TEXT" json:"transport_profile"`
	RewindCount                     int64    `gorm:"column:rewind_count;type:INTEGER;not null;default:0" json:"rewind_count"`
	Archived                        int64    `gorm:"column:archived;type:INTEGER;not null;default:0" json:"archived"`
	Pinned                          int64    `gorm:"column:pinned;type:INTEGER;not null;default:0" json:"pinned"`
	Hidden                          int64    `gorm:"column:hidden;type:INTEGER;not null;default:0" json:"hidden"`
	LastReadAt                      *Epoch   `gorm:"column:last_read_at;type:REAL" json:"last_read_at"`
	ToolNames                       JSONText `gorm:"column:tool_names;type:TEXT;serializer:pyjson" json:"tool_names"`

	// ResetFrom and BranchedFrom are not columns: they are the /new and
	// /branch markers of model_config ($._reset_from, $._branched_from)
	// lifted onto the session dict, as Hermes' _session_row_dict does, so a
	// reader that drops model_config can still tell a reset sibling from a
	// fork. Set by LiftMarkers; empty when absent.
	ResetFrom    string `gorm:"-" json:"_reset_from,omitempty"`
	BranchedFrom string `gorm:"-" json:"_branched_from,omitempty"`
}

// TableName implements GORM's Tabler.
func (Session) TableName() string { return "sessions" }

// LiftMarkers fills ResetFrom and BranchedFrom from model_config: each is
// set when model_config is a JSON object whose key holds a non-blank
// string (trimmed).
func (s *Session) LiftMarkers() {
	if v, ok := JSONGetString(s.ModelConfig, "_reset_from"); ok && strings.TrimSpace(v) != "" {
		s.ResetFrom = strings.TrimSpace(v)
	}
	if v, ok := JSONGetString(s.ModelConfig, "_branched_from"); ok && strings.TrimSpace(v) != "" {
		s.BranchedFrom = strings.TrimSpace(v)
	}
}

// SystemPromptRow is one row of system_prompts: a prompt deduplicated by the
// lowercase hex SHA-256 of its UTF-8 bytes.
type SystemPromptRow struct {
	Hash   string `gorm:"column:hash;type:TEXT;primaryKey" json:"hash"`
	Prompt string `gorm:"column:prompt;type:TEXT;not null" json:"prompt"`
}

// TableName implements GORM's Tabler.
func (SystemPromptRow) TableName() string { return "system_prompts" }

// SchemaVersion is the single row of schema_version: the Hermes schema
// version whose shape the file has.
type SchemaVersion struct {
	Version int64 `gorm:"column:version;type:INTEGER;not null" json:"version"`
}

// TableName implements GORM's Tabler.
func (SchemaVersion) TableName() string { return "schema_version" }

// StateMeta is one key of state_meta.
type StateMeta struct {
	Key   string  `gorm:"column:key;type:TEXT;primaryKey" json:"key"`
	Value *string `gorm:"column:value;type:TEXT" json:"value"`
}

// TableName implements GORM's Tabler.
func (StateMeta) TableName() string { return "state_meta" }

// GatewayRouting is one entry of gateway_routing, keyed by (scope, session_key).
type GatewayRouting struct {
	Scope      string `gorm:"column:scope;type:TEXT;primaryKey;not null;default:''" json:"scope"`
	SessionKey string `gorm:"column:session_key;type:TEXT;primaryKey;not null" json:"session_key"`
	EntryJSON  JSON   `gorm:"column:entry_json;type:TEXT;not null;serializer:pyjson" json:"entry_json"`
	UpdatedAt  Epoch  `gorm:"column:updated_at;type:REAL;not null" json:"updated_at"`
}

// TableName implements GORM's Tabler.
func (GatewayRouting) TableName() string { return "gateway_routing" }

// SessionModelUsage is one row of session_model_usage: usage attributed to
// one (session, model, billing route, task).
type SessionModelUsage struct {
	SessionID        string  `gorm:"column:session_id;type:TEXT;primaryKey;not null" json:"session_id"`
	Model            string  `gorm:"column:model;type:TEXT;primaryKey;not null" json:"model"`
	BillingProvider  string  `gorm:"column:billing_provider;type:TEXT;primaryKey;not null;default:''" json:"billing_provider"`
	BillingBaseURL   string  `gorm:"column:billing_base_url;type:TEXT;primaryKey;not null;default:''" json:"billing_base_url"`
	BillingMode      string  `gorm:"column:billing_mode;type:TEXT;primaryKey;not null;default:''" json:"billing_mode"`
	Task             string  `gorm:"column:task;type:TEXT;primaryKey;not null;default:''" json:"task"`
	APICallCount     int64   `gorm:"column:api_call_count;type:INTEGER;not null;default:0" json:"api_call_count"`
	InputTokens      int64   `gorm:"column:input_tokens;type:INTEGER;not null;default:0" json:"input_tokens"`
	OutputTokens     int64   `gorm:"column:output_tokens;type:INTEGER;not null;default:0" json:"output_tokens"`
	CacheReadTokens  int64   `gorm:"column:cache_read_tokens;type:INTEGER;not null;default:0" json:"cache_read_tokens"`
	CacheWriteTokens int64   `gorm:"column:cache_write_tokens;type:INTEGER;not null;default:0" json:"cache_write_tokens"`
	ReasoningTokens  int64   `gorm:"column:reasoning_tokens;type:INTEGER;not null;default:0" json:"reasoning_tokens"`
	EstimatedCostUSD float64 `gorm:"column:estimated_cost_usd;type:REAL;not null;default:0" json:"estimated_cost_usd"`
	ActualCostUSD    float64 `gorm:"column:actual_cost_usd;type:REAL;not null;default:0" json:"actual_cost_usd"`
	CostStatus       *string `gorm:"column:cost_status;type:TEXT" json:"cost_status"`
	CostSource       *string `gorm:"column:cost_source;type:TEXT" json:"cost_source"`
	FirstSeen        *Epoch  `gorm:"column:first_seen;type:REAL" json:"first_seen"`
	LastSeen         *Epoch  `gorm:"column:last_seen;type:REAL" json:"last_seen"`
}

// TableName implements GORM's Tabler.
func (SessionModelUsage) TableName() string { return "session_model_usage" }

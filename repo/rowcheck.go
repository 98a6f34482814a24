package repo

import (
	"encoding/json"
	"math"
	"slices"
	"strings"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/models"
)

// The rules a stored row obeys, whichever writer stores it: the API
// (Create, Append, AppendBatch, UpdateTokenCounts, ...) and Import apply
// these same functions, so an import stores only what the API would store
// (checkMessageRow, checkSessionRow, and the value rules below them).

// MessageRoles are the message roles Hermes writes (schema: system, user,
// assistant, tool; session_meta for its bookkeeping rows). Any other role
// is refused (ErrInvalid): Hermes' readers would not know what to do with it.
var MessageRoles = []string{"system", "user", "assistant", "tool", "session_meta"}

// checkRole refuses an empty, oversize or control-character role, and one
// that is not in MessageRoles.
func checkRole(op, role string) error {
	if err := checkName(op, "role", role); err != nil {
		return err
	}
	if !slices.Contains(MessageRoles, role) {
		return errs.Errorf(errs.ErrInvalid, op, "role %q is not a message role (%s)", role, strings.Join(MessageRoles, ", "))
	}
	return nil
}

// checkFlag refuses a flag column (archived, pinned, hidden, active, ...)
// that is not 0 or 1: the API writes only those, and Hermes reads them as
// booleans.
func checkFlag(op, field string, v int64) error {
	if v != 0 && v != 1 {
		return errs.Errorf(errs.ErrInvalid, op, "%s must be 0 or 1, not %d", field, v)
	}
	return nil
}

// checkCount refuses a negative counter (tokens, calls, streaks).
func checkCount(op, field string, v int64) error {
	if v < 0 {
		return errs.Errorf(errs.ErrInvalid, op, "%s must not be negative, not %d", field, v)
	}
	return nil
}

// checkCost refuses a cost that is not a finite, non-negative number (nil
// passes: not given).
func checkCost(op, field string, v *float64) error {
	if v == nil {
		return nil
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0 {
		return errs.Errorf(errs.ErrInvalid, op, "%s must be a finite amount of at least 0, not %g", field, *v)
	}
	return nil
}

// checkMessageRow applies the rules of a stored message to row: a Hermes
// role; content, the text columns and the JSON-or-text columns valid UTF-8
// within MaxContentBytes; tool_calls JSON (a value that is not JSON
// becomes NULL, as Hermes reads it: an empty list); display_metadata a
// JSON object; the flags 0 or 1; token_count not negative. It returns the
// values it changed, in words, and ErrInvalid naming the first value it
// refuses.
func checkMessageRow(op string, row *models.Message) (changed []string, err error) {
	if err := checkRole(op, row.Role); err != nil {
		return nil, err
	}
	if err := checkTextPtr(op, "content", row.Content); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"tool_name", row.ToolName}, {"tool_call_id", row.ToolCallID}, {"finish_reason", row.FinishReason},
		{"reasoning", row.Reasoning}, {"reasoning_content", row.ReasoningContent}, {"platform_message_id", row.PlatformMessageID},
		{"api_content", row.APIContent}, {"display_kind", row.DisplayKind}, {"effect_disposition", row.EffectDisposition}} {
		if err := checkTextPtr(op, f.name, f.v); err != nil {
			return nil, err
		}
	}
	// Hermes parses a tool_calls string first; anything that is not JSON
	// becomes an empty list (stored as NULL).
	if len(row.ToolCalls) > 0 && !json.Valid(row.ToolCalls) {
		row.ToolCalls = nil
		changed = append(changed, "tool_calls is not JSON: stored as NULL (no tool calls), as Hermes reads it")
	}
	if err := checkJSON(op, "tool_calls", row.ToolCalls); err != nil {
		return nil, err
	}
	if len(row.DisplayMetadata) > 0 {
		if err := checkJSON(op, "display_metadata", row.DisplayMetadata); err != nil {
			return nil, err
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(row.DisplayMetadata, &obj) != nil {
			return nil, errs.Errorf(errs.ErrInvalid, op, "display_metadata must be a JSON object")
		}
	}
	// The JSONText columns keep text that is not JSON as it is (Hermes
	// stores whatever string it was given); JSON text is re-encoded.
	for _, f := range []struct {
		name string
		v    []byte
	}{{"reasoning_details", row.ReasoningDetails}, {"codex_reasoning_items", row.CodexReasoningItems}, {"codex_message_items", row.CodexMessageItems}} {
		if json.Valid(f.v) {
			if err := checkJSON(op, f.name, f.v); err != nil {
				return nil, err
			}
		} else if err := checkText(op, f.name, string(f.v)); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"active", row.Active}, {"observed", row.Observed}, {"compacted", row.Compacted}, {"_compressed_summary", row.CompressedSummary}} {
		if err := checkFlag(op, f.name, f.v); err != nil {
			return nil, err
		}
	}
	if row.TokenCount != nil {
		if err := checkCount(op, "token_count", *row.TokenCount); err != nil {
			return nil, err
		}
	}
	return changed, nil
}

// maxEpoch is the end of year 9999, the last instant Python's datetime
// (and most readers of these files) can represent.
const maxEpoch = 253402300799

// checkSessionRow applies the rules of a stored session to s: a valid id
// and source; the text columns valid UTF-8 within MaxContentBytes;
// model_config, origin_json and tool_names JSON (Hermes' listing runs
// json_extract over model_config: one value that is not JSON fails it for
// the whole store); the flags (archived, pinned, hidden) 0 or 1; counters
// not negative; costs finite and not negative; started_at and ended_at
// outside the sane window become now (as Create and End stamp them); other
// timestamps a reader cannot represent (before 1970, after year 9999, not
// finite) become NULL; the title is sanitized (ErrInvalid when too long)
// and an empty one is NULL. It returns how many values it changed, and
// ErrInvalid naming the first value it refuses. The parent is a relation,
// not a value: each writer decides about it (Create refuses a session that
// is its own parent, Import detaches it).
func checkSessionRow(op string, s *models.Session, now models.Epoch) (int64, error) {
	if err := checkID(op, s.ID); err != nil {
		return 0, err
	}
	if err := checkName(op, "source", s.Source); err != nil {
		return 0, err
	}
	if s.ParentSessionID != nil {
		if err := checkID(op, *s.ParentSessionID); err != nil {
			var e *errs.Error
			if errorsAs(err, &e) {
				return 0, errs.Errorf(errs.ErrInvalid, op, "parent_session_id: %s", e.Msg)
			}
			return 0, err
		}
	}
	if s.EndReason != nil {
		if err := checkName(op, "end_reason", *s.EndReason); err != nil {
			return 0, err
		}
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"created_source", s.CreatedSource}, {"user_id", s.UserID}, {"session_key", s.SessionKey}, {"chat_id", s.ChatID},
		{"chat_type", s.ChatType}, {"thread_id", s.ThreadID}, {"display_name", s.DisplayName}, {"model", s.Model},
		{"system_prompt", s.SystemPrompt}, {"system_prompt_hash", s.SystemPromptHash}, {"cwd", s.Cwd}, {"git_branch", s.GitBranch},
		{"git_repo_root", s.GitRepoRoot}, {"billing_provider", s.BillingProvider}, {"billing_base_url", s.BillingBaseURL},
		{"billing_mode", s.BillingMode}, {"cost_status", s.CostStatus}, {"cost_source", s.CostSource}, {"pricing_version", s.PricingVersion},
		{"title_source", s.TitleSource}, {"last_activity_description", s.LastActivityDescription},
		{"last_activity_provenance", s.LastActivityProvenance}, {"handoff_state", s.HandoffState}, {"handoff_platform", s.HandoffPlatform},
		{"handoff_error", s.HandoffError}, {"compression_failure_error", s.CompressionFailureError}, {"profile_name", s.ProfileName},
		{"transport_profile", s.TransportProfile}} {
		if err := checkTextPtr(op, f.name, f.v); err != nil {
			return 0, err
		}
	}
	for _, f := range []struct {
		name string
		v    []byte
	}{{"model_config", s.ModelConfig}, {"origin_json", s.OriginJSON}, {"tool_names", s.ToolNames}} {
		if err := checkJSON(op, f.name, f.v); err != nil {
			return 0, err
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"archived", s.Archived}, {"pinned", s.Pinned}, {"hidden", s.Hidden}, {"expiry_finalized", s.ExpiryFinalized}} {
		if err := checkFlag(op, f.name, f.v); err != nil {
			return 0, err
		}
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"input_tokens", s.InputTokens}, {"output_tokens", s.OutputTokens}, {"cache_read_tokens", s.CacheReadTokens},
		{"cache_write_tokens", s.CacheWriteTokens}, {"reasoning_tokens", s.ReasoningTokens}, {"api_call_count", s.APICallCount},
		{"rewind_count", s.RewindCount}, {"git_metadata_generation", s.GitMetadataGeneration},
		{"compression_fallback_streak", s.CompressionFallbackStreak}, {"compression_ineffective_count", s.CompressionIneffectiveCount},
		{"compression_overload_streak", s.CompressionOverloadStreak}} {
		if err := checkCount(op, f.name, f.v); err != nil {
			return 0, err
		}
	}
	if err := checkCost(op, "estimated_cost_usd", s.EstimatedCostUSD); err != nil {
		return 0, err
	}
	if err := checkCost(op, "actual_cost_usd", s.ActualCostUSD); err != nil {
		return 0, err
	}
	var n int64
	if !s.StartedAt.Sane() {
		s.StartedAt, n = now, n+1
	}
	if s.EndedAt != nil && !s.EndedAt.Sane() {
		s.EndedAt, n = models.EpochPtr(now), n+1
	}
	for _, p := range []**models.Epoch{&s.LastActivityAt, &s.LastReadAt, &s.CompressionFailureCooldownUntil, &s.CompressionRecoveryDeadline} {
		if *p == nil {
			continue
		}
		if f := float64(**p); math.IsNaN(f) || f < 0 || f > maxEpoch {
			*p, n = nil, n+1
		}
	}
	if s.Title != nil {
		t, err := SanitizeTitle(*s.Title)
		if err != nil {
			return 0, err
		}
		switch {
		case t == "":
			s.Title, n = nil, n+1
		case t != *s.Title:
			s.Title, n = &t, n+1
		}
	}
	return n, nil
}

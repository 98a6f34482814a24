package repo

import (
	"context"
	"time"
)

// Reactions and tool-row retries: UI annotations Hermes keeps inside a
// message's display_metadata (hermes_state_messages.py,
// hermes_state_tool_retries.py), so the row the model replays stays
// byte-identical and the prompt cache survives; each is announced to the
// model once, on the next turn.

// Reaction is one reaction on a message (an element of
// display_metadata.reactions).
type Reaction struct {
	Emoji  string  `json:"emoji"`
	Author string  `json:"author"`
	At     float64 `json:"at"`
	Seen   bool    `json:"seen,omitempty"`
}

// UnseenReaction is a reaction not yet announced to the model, with the
// message it is on.
type UnseenReaction struct {
	RowID int64  `json:"row_id"`
	Role  string `json:"role"`
	Emoji string `json:"emoji"`
	// Text is the message's text ("" for non-text content).
	Text string `json:"text"`
}

// ToolRetry is a retry outcome recorded on a tool row.
type ToolRetry struct {
	RowID int64 `json:"row_id"`
	// Result is the recorded outcome (nil when the row has none).
	Result map[string]any `json:"result"`
}

// AnnouncedRetry is a retry outcome announced to the model.
type AnnouncedRetry struct {
	Result   map[string]any `json:"result"`
	ToolName string         `json:"tool_name"`
}

// ReactionOptions is Annotations.SetReaction's reaction: the zero value
// clears the user's reaction.
type ReactionOptions struct {
	// Emoji is the reaction; "" clears the author's reaction (Hermes'
	// emoji=None).
	Emoji string
	// Author is who reacts; "" is "user", Hermes' default.
	Author string
	// Now stamps the reaction's "at" (zero: time.Now()).
	Now time.Time
}

// Annotations is the repository of message annotations. Methods return
// ErrInvalid for an empty session id, author or bad text.
type Annotations interface {
	// SetReaction sets opt.Author's reaction on a message of the session
	// (Hermes' set_message_reaction and its tapback rule: one per author;
	// the same emoji again, or "", clears it; another emoji replaces it)
	// and returns the message's reactions after the write. ErrNotFound
	// when the row is not a message of the session.
	SetReaction(ctx context.Context, sessionID string, rowID int64, opt ReactionOptions) ([]Reaction, error)
	// Reactions returns the reactions on a message ([] when none or the
	// row is not the session's).
	Reactions(ctx context.Context, sessionID string, rowID int64) ([]Reaction, error)
	// TakeUnseenReactions returns author's ("" is "user") reactions on the
	// session's live rows not announced yet, oldest row first, and marks
	// them seen, in one transaction.
	TakeUnseenReactions(ctx context.Context, sessionID, author string) ([]UnseenReaction, error)
	// ToolRetry returns the newest visible tool row for toolCallID in the
	// session's resume lineage and its recorded outcome; false when there is
	// no such row.
	ToolRetry(ctx context.Context, sessionID, toolCallID string) (ToolRetry, bool, error)
	// SetToolRetry records outcome as the retry of tool row rowID, not yet
	// announced. ErrNotFound when there is no such row.
	SetToolRetry(ctx context.Context, rowID int64, outcome map[string]any) error
	// TakeUnannouncedToolRetries returns the retry outcomes of the
	// session's resume lineage the model has not heard about, marking them
	// announced, in one transaction.
	TakeUnannouncedToolRetries(ctx context.Context, sessionID string) ([]AnnouncedRetry, error)
}

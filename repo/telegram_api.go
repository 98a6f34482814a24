package repo

import (
	"context"
	"time"

	"github.com/hermesstate/hermesstate/models"
)

// Telegram DM topic mode (hermes_state_telegram.py): a private chat whose
// conversations live in forum topics, one session per topic. Its two tables
// are created only when a chat opts in (Enable, Bind or Migrate), never at
// open: reads of a store without them answer empty. A profile name is
// trimmed and "" is "default".

// TopicModeInput is the opt-in of one chat.
type TopicModeInput struct {
	ChatID, UserID, Profile string
	// HasTopicsEnabled and AllowsUsersToCreateTopics are the Bot API's
	// capability answers (nil: unknown, stored NULL).
	HasTopicsEnabled, AllowsUsersToCreateTopics *bool
	Now                                         time.Time
}

// TopicModeOffOptions are TelegramTopics.Disable's options.
type TopicModeOffOptions struct {
	Profile string
	// KeepBindings keeps the chat's topic bindings.
	KeepBindings bool
	// Now stamps updated_at (zero: time.Now()).
	Now time.Time
}

// UnbindOptions are TelegramTopics.Unbind's options.
type UnbindOptions struct {
	Profile string
	// Now stamps the mode row's updated_at when the last binding goes
	// (zero: time.Now()).
	Now time.Time
}

// TopicBinding is one telegram_dm_topic_bindings row.
type TopicBinding struct {
	ProfileName string       `json:"profile_name"`
	ChatID      string       `json:"chat_id"`
	ThreadID    string       `json:"thread_id"`
	UserID      string       `json:"user_id"`
	SessionKey  string       `json:"session_key"`
	SessionID   string       `json:"session_id"`
	ManagedMode string       `json:"managed_mode"`
	LinkedAt    models.Epoch `json:"linked_at"`
	UpdatedAt   models.Epoch `json:"updated_at"`
}

// TopicBindingInput binds a topic thread to a session.
type TopicBindingInput struct {
	ChatID, ThreadID, UserID, SessionKey, SessionID, Profile string
	// ManagedMode is "auto" when empty.
	ManagedMode string
	Now         time.Time
}

// TelegramTopics is the repository of Telegram DM topic mode. Methods
// return ErrInvalid for empty ids or bad text.
type TelegramTopics interface {
	// Migrate creates (or brings to Hermes' version 3: profile_name in
	// both keys) the topic tables and their indexes, and records
	// state_meta telegram_dm_topic_schema_version = 3.
	Migrate(ctx context.Context) error
	// Enable turns topic mode on for a chat (creating the tables first).
	Enable(ctx context.Context, in TopicModeInput) error
	// Disable turns it off and, unless opt.KeepBindings, drops the chat's
	// bindings; nothing happens when the tables do not exist.
	Disable(ctx context.Context, chatID string, opt TopicModeOffOptions) error
	// Enabled reports whether topic mode is on for the chat and user.
	Enabled(ctx context.Context, chatID, userID, profile string) (bool, error)
	// Binding returns the binding of a topic thread (nil when none).
	Binding(ctx context.Context, chatID, threadID, profile string) (*TopicBinding, error)
	// Bindings returns a chat's bindings, most recently updated first.
	Bindings(ctx context.Context, chatID, profile string) ([]TopicBinding, error)
	// BindingOfSession returns the binding of a session (nil when it is not
	// linked to a topic: Hermes' is_telegram_session_linked_to_topic).
	BindingOfSession(ctx context.Context, sessionID string) (*TopicBinding, error)
	// Bind links a topic thread to a session (creating the tables first);
	// rebinding the same pair updates it. ErrConflict when the session is
	// linked to another topic.
	Bind(ctx context.Context, in TopicBindingInput) error
	// Unbind deletes a topic's binding and, when it was the chat's last,
	// turns topic mode off in the same transaction; it returns the rows
	// deleted (0 when none or no tables).
	Unbind(ctx context.Context, chatID, threadID string, opt UnbindOptions) (int64, error)
	// UnlinkedSessions returns up to limit (0 = 10) of the user's telegram
	// sessions of the profile that no topic binds, most recently active
	// first (without the tables: the user's sessions of any profile).
	UnlinkedSessions(ctx context.Context, userID, profile string, limit int) ([]RichSession, error)
}

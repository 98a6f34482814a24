package repo

import (
	"context"

	"github.com/hermesstate/hermesstate/models"
)

// Crossed-profile repair (hermes_state_profile_repair.py; `hermes sessions
// repair-profiles`). Every Hermes store belongs to one profile and every
// gateway session key names the profile owning the conversation
// (agent:<ns>:..., "main" for default); these calls find the rows that
// disagree and settle them, each fix in one transaction that re-derives its
// target. Moving a session between stores is copy (ImportMoved on the
// target) then delete (DeleteMoved on the source): a crash between leaves a
// duplicate the next run settles, never a loss.

// CrossedProfiles is what ProfileRepair.Crossed finds.
type CrossedProfiles struct {
	// Mislabelled: profile_name names another profile than the key.
	Mislabelled []MislabelledSession `json:"mislabelled"`
	// Foreign: the key's profile is not the store's owner.
	Foreign []ForeignSession `json:"foreign"`
	// CrossedParents: child and parent are keyed under different profiles.
	CrossedParents []CrossedParent `json:"crossed_parents"`
}

// MislabelledSession is a keyed session whose profile_name disagrees with
// its key.
type MislabelledSession struct {
	ID          string `json:"id"`
	SessionKey  string `json:"session_key"`
	ProfileName string `json:"profile_name"`
	KeyProfile  string `json:"key_profile"`
}

// ForeignSession is a keyed session of another profile than the store's.
type ForeignSession struct {
	ID           string `json:"id"`
	SessionKey   string `json:"session_key"`
	KeyProfile   string `json:"key_profile"`
	MessageCount int64  `json:"message_count"`
}

// CrossedParent is a child keyed under another profile than its parent.
type CrossedParent struct {
	ID              string `json:"id"`
	KeyProfile      string `json:"key_profile"`
	ParentSessionID string `json:"parent_session_id"`
	ParentProfile   string `json:"parent_profile"`
}

// ProfileLessTopicRow is a Telegram topic binding labelled "default" whose
// key names another profile.
type ProfileLessTopicRow struct {
	ChatID     string `json:"chat_id"`
	ThreadID   string `json:"thread_id"`
	SessionKey string `json:"session_key"`
	KeyProfile string `json:"key_profile"`
}

// MovePayload is everything a target store needs to hold a moved session
// (Hermes' export_session_for_move): the row with every column, its
// resolved system prompt and tools pin, every message row (all
// generations) and its usage rows, as column → value.
type MovePayload struct {
	Session      map[string]any   `json:"session"`
	SystemPrompt *string          `json:"system_prompt"`
	ToolPin      *string          `json:"tool_pin"`
	Messages     []map[string]any `json:"messages"`
	Usage        []map[string]any `json:"usage"`
}

// TopicRelabelCounts is what ProfileRepair.RelabelTopicRows changed.
type TopicRelabelCounts struct {
	BindingsRelabelled       int64 `json:"bindings_relabelled"`
	BindingsDuplicatesRemove int64 `json:"bindings_duplicates_removed"`
	ModeRowsRelabelled       int64 `json:"mode_rows_relabelled"`
}

// ProfileRepair is the repository of crossed-profile repair. Methods return
// ErrInvalid for bad input.
type ProfileRepair interface {
	// Crossed reports the keyed sessions whose identity disagrees with
	// itself or with owner (the store's profile).
	Crossed(ctx context.Context, owner string) (CrossedProfiles, error)
	// RoutingRows returns every gateway_routing row, by scope and key.
	RoutingRows(ctx context.Context) ([]models.GatewayRouting, error)
	// ProfileLessTopicRows reports the topic bindings labelled "default"
	// whose key names a named profile (none without the topic tables).
	ProfileLessTopicRows(ctx context.Context) ([]ProfileLessTopicRow, error)
	// KeyProfiles returns the profiles whose keyed sessions hold the chat.
	KeyProfiles(ctx context.Context, platform, chatID string) ([]string, error)
	// Relabel sets each session's profile_name to its key's profile and
	// returns the rows changed.
	Relabel(ctx context.Context, ids []string) (int64, error)
	// SeverCrossedParents detaches children still keyed under another
	// profile than their parent and returns how many.
	SeverCrossedParents(ctx context.Context, ids []string) (int64, error)
	// RekeyLegacyMain moves agent:main: keys of the sessions to profile's
	// namespace (profile_name set) and returns how many changed.
	RekeyLegacyMain(ctx context.Context, ids []string, profile string) (int64, error)
	// DeleteRoutingRows deletes the (scope, key) rows and returns how many.
	DeleteRoutingRows(ctx context.Context, rows []models.GatewayRouting) (int64, error)
	// InsertRoutingRowsIfAbsent adopts rows another store held (an existing
	// key wins) and returns how many it inserted.
	InsertRoutingRowsIfAbsent(ctx context.Context, rows []models.GatewayRouting) (int64, error)
	// RelabelTopicRows stamps each row's key profile on its "default"
	// binding (a duplicate of one the profile already holds is removed) and
	// on the chat's mode row when the profile has none.
	RelabelTopicRows(ctx context.Context, rows []ProfileLessTopicRow) (TopicRelabelCounts, error)
	// ExportForMove returns the session's move payload; ErrNotFound when it
	// does not exist.
	ExportForMove(ctx context.Context, sessionID string) (*MovePayload, error)
	// ImportMoved inserts a moved session as profile's and returns
	// "imported", or "present" when the id exists already. The parent link
	// is kept only when the parent is here; a title this store holds gets
	// " (<last 12 characters of the id>)"; columns this store lacks are
	// dropped; messages get new ids and display order.
	ImportMoved(ctx context.Context, p *MovePayload, profile string) (string, error)
	// DeleteMoved deletes a session the target confirmed (children
	// detached, messages and usage rows deleted) and reports whether it
	// existed.
	DeleteMoved(ctx context.Context, sessionID string) (bool, error)
}

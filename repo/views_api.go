package repo

import (
	"context"
)

// Read views of Hermes' SessionDB that the other repositories do not cover
// (hermes_state_search.py get_anchored_view, hermes_state_messages.py
// get_ancestor_display_prefix and find_pr_url_messages,
// hermes_state_portability.py list_skill_scaffolded_sessions,
// hermes_state_message_clock.py).

// AnchoredOptions tunes Views.Anchored.
type AnchoredOptions struct {
	// Window is the rows each side of the anchor (0 = 5, negative = none).
	Window int
	// Bookend is the rows at each end of the session (0 = 3, negative =
	// none).
	Bookend int
	// KeepRoles filters the window (except the anchor) and the bookends
	// (nil = user and assistant); AllRoles keeps every role.
	KeepRoles []string
	AllRoles  bool
}

// AnchoredView is an anchored window plus the session's bookends.
type AnchoredView struct {
	Window         []WindowMessage `json:"window"`
	MessagesBefore int             `json:"messages_before"`
	MessagesAfter  int             `json:"messages_after"`
	// BookendStart and BookendEnd are the first and last rows with
	// non-empty content outside the window (empty when it reaches the
	// session's head or tail).
	BookendStart []WindowMessage `json:"bookend_start"`
	BookendEnd   []WindowMessage `json:"bookend_end"`
}

// PRURLMessage is a tool result that mentions a pull request.
type PRURLMessage struct {
	SessionID string `json:"session_id"`
	Content   string `json:"content"`
}

// ScaffoldedSession is a titled session whose first user message was a
// /skill invocation (its title describes the skill, not the request).
type ScaffoldedSession struct {
	ID      string `json:"id"`
	Title   string `json:"title"`
	Content string `json:"content"`
}

// ProjectClock is one logical conversation's placement row (Hermes'
// all_project_message_clock_rows).
type ProjectClock struct {
	// ID is the lineage's tip; LineageIDs the segments root to tip.
	ID         string   `json:"id"`
	LineageIDs []string `json:"_lineage_ids"`
	// Cwd, GitBranch and GitRepoRoot are the tip's.
	Cwd         *string `json:"cwd"`
	GitBranch   *string `json:"git_branch"`
	GitRepoRoot *string `json:"git_repo_root"`
	// LastMessageAt is the newest user or assistant message of the lineage
	// (epoch seconds; 0 when none).
	LastMessageAt float64 `json:"last_message_at"`
}

// Views is the repository of these read views. Methods return ErrInvalid
// for an empty session id or a bad option; they only read.
type Views interface {
	// Anchored returns the rows around anchorID (Transcript.Around, every
	// row) filtered to the kept roles except the anchor, and the session's
	// bookends; all empty when the anchor is not a row of the session.
	Anchored(ctx context.Context, sessionID string, anchorID int64, opt AnchoredOptions) (AnchoredView, error)
	// AncestorDisplayPrefix returns the display messages of the session's
	// lineage that belong to an ancestor (what a resume prepends to the
	// tip's own), without _row_id; empty for a session without a lineage.
	AncestorDisplayPrefix(ctx context.Context, sessionID string) ([]ConversationItem, error)
	// PRURLMessages returns the tool results of the sessions that contain
	// "/pull/", oldest first.
	PRURLMessages(ctx context.Context, sessionIDs []string) ([]PRURLMessage, error)
	// SkillScaffolded returns up to limit (0 = 200) titled sessions whose
	// first user message is a /skill scaffold, newest first.
	SkillScaffolded(ctx context.Context, limit int) ([]ScaffoldedSession, error)
	// ProjectClocks returns one row per listed conversation (roots and
	// branch/reset children with messages, not archived or hidden, sources
	// not excluded) with its lineage and the time of its last user or
	// assistant message.
	ProjectClocks(ctx context.Context, excludeSources []string) ([]ProjectClock, error)
	// LastMessageTimes returns, per row, the newest timestamp (within the
	// sane epoch window) of a user or assistant message, live or
	// compaction-archived, of its lineage segments (LineageIDs, else ID
	// alone); 0 when none.
	LastMessageTimes(ctx context.Context, rows []ProjectClock) (map[string]float64, error)
}

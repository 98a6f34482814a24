package mcpserver

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// NoteDisplayKind is the display_kind of a message append_note writes: a
// user-role row, like the markers Hermes itself writes (model switches),
// that pickers never take for the session's preview when it is not first.
const NoteDisplayKind = "note"

// MaxNoteLength caps the text of a note, in characters.
const MaxNoteLength = 20000

// SetTitleInput are the arguments of set_title.
type SetTitleInput struct {
	SessionID string `json:"session_id" jsonschema:"Id of the session (or a unique prefix of it)."`
	Title     string `json:"title" jsonschema:"The new title (at most 100 characters); an empty title clears it. Titles are unique across sessions."`
}

// SetTitleOutput is the result of set_title.
type SetTitleOutput struct {
	SessionID string `json:"session_id"`
	Title     string `json:"title" jsonschema:"The title as stored (whitespace and invisible characters cleaned); empty when cleared."`
}

// AppendNoteInput are the arguments of append_note.
type AppendNoteInput struct {
	SessionID string `json:"session_id" jsonschema:"Id of the session (or a unique prefix of it)."`
	Text      string `json:"text" jsonschema:"The note: plain text, stored as a message of the session."`
}

// AppendNoteOutput is the result of append_note.
type AppendNoteOutput struct {
	SessionID string `json:"session_id"`
	MessageID int64  `json:"message_id" jsonschema:"Id of the stored note message."`
}

func (s *server) addWriteTools(srv *mcp.Server) {
	addTool(srv, &mcp.Tool{
		Name:        ToolSetTitle,
		Title:       "Set a session's title",
		Description: "Give a session a title (as the user would with /title), or clear it with an empty title. Fails when another session already holds the title.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), IdempotentHint: true, OpenWorldHint: boolPtr(false)},
	}, map[string]prop{
		"session_id": str(1, 256),
		"title":      str(0, 400),
	}, s.setTitle)

	addTool(srv, &mcp.Tool{
		Name:  ToolAppendNote,
		Title: "Append a note to a session",
		Description: "Add a note at the end of a session's transcript: a user-role message marked display_kind \"note\". " +
			"It is searchable and part of the conversation Hermes replays when the session is resumed. " +
			"A session that was compressed continues in its compression tip (see get_session); append there.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(false), OpenWorldHint: boolPtr(false)},
	}, map[string]prop{
		"session_id": str(1, 256),
		"text":       str(1, MaxNoteLength),
	}, s.appendNote)
}

func (s *server) setTitle(ctx context.Context, in SetTitleInput) (SetTitleOutput, error) {
	id, err := s.resolve(ctx, in.SessionID)
	if err != nil {
		return SetTitleOutput{}, err
	}
	if _, err := s.st.Titles().Set(ctx, id, in.Title); err != nil {
		return SetTitleOutput{}, err
	}
	t, err := s.st.Titles().Get(ctx, id)
	if err != nil {
		return SetTitleOutput{}, err
	}
	return SetTitleOutput{SessionID: id, Title: t}, nil
}

func (s *server) appendNote(ctx context.Context, in AppendNoteInput) (AppendNoteOutput, error) {
	text := strings.TrimSpace(in.Text)
	switch {
	case text == "":
		return AppendNoteOutput{}, invalid("text is empty")
	case utf8.RuneCountInString(text) > MaxNoteLength:
		return AppendNoteOutput{}, invalid("text is longer than %d characters", MaxNoteLength)
	}
	id, err := s.resolve(ctx, in.SessionID)
	if err != nil {
		return AppendNoteOutput{}, err
	}
	mid, err := s.st.Messages().Append(ctx, id, repo.MessageInput{Role: "user", Content: &text, DisplayKind: NoteDisplayKind,
		DisplayMetadata: models.MustJSON(map[string]any{"via": "mcp"})})
	if err != nil {
		return AppendNoteOutput{}, err
	}
	return AppendNoteOutput{SessionID: id, MessageID: mid}, nil
}

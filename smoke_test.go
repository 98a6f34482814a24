package hermesstate_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	st, err := hs.Open(ctx, hs.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	require.NoError(t, err)
	defer st.Close()
	s, err := st.Sessions().Create(ctx, repo.NewSession{Source: "cli", Model: "m", SystemPrompt: "You are X", ModelConfig: models.MustJSON(map[string]any{"a": "é"})})
	require.NoError(t, err)
	id, err := st.Messages().Append(ctx, s.ID, repo.NewMessage{Role: "user", Content: models.Text("hi")})
	require.NoError(t, err)
	t.Log(id)
	_, err = st.Messages().Append(ctx, s.ID, repo.NewMessage{Role: "assistant", ToolCalls: models.MustJSON([]models.ToolCall{{ID: "c1", Type: "function", Function: models.ToolCallFunction{Name: "x", Arguments: "{}"}}})})
	require.NoError(t, err)
	got, err := st.Sessions().Get(ctx, s.ID)
	require.NoError(t, err)
	b, _ := json.Marshal(got)
	t.Log(string(b))
	ms, err := st.Messages().List(ctx, s.ID)
	require.NoError(t, err)
	b, _ = json.Marshal(ms)
	t.Log(string(b))
	c, err := st.Messages().Conversation(ctx, s.ID, repo.ConversationOptions{})
	require.NoError(t, err)
	b, _ = json.Marshal(c)
	t.Log(string(b))
}

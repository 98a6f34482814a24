package hermesstate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// An agent loop: open the store, create a session, append a turn, replay it.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "hermesstate-example")
	defer os.RemoveAll(dir)

	st, err := hs.Open(ctx, hs.Config{Path: filepath.Join(dir, "state.db")})
	if err != nil {
		fmt.Println("open:", err)
		return
	}
	defer st.Close()

	s, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "20260105_091500_a1b2c3", Source: "cli", Model: "anthropic/claude-sonnet-4"})
	if err != nil {
		fmt.Println("create:", err)
		return
	}
	calls := models.MustJSON([]models.ToolCall{{ID: "call_1", Type: "function",
		Function: models.ToolCallFunction{Name: "terminal", Arguments: `{"command": "kubectl get pods"}`}}})
	_, err = st.Messages().AppendBatch(ctx, s.ID, []repo.MessageInput{
		{Role: "user", Content: models.Text("Why is the deployment failing?")},
		{Role: "assistant", ToolCalls: calls},
		{Role: "tool", ToolCallID: "call_1", ToolName: "terminal", Content: models.Text("CrashLoopBackOff")},
		{Role: "assistant", Content: models.Text("The pod is crash-looping.")},
	})
	if err != nil {
		fmt.Println("append:", err)
		return
	}
	got, _ := st.Sessions().Get(ctx, s.ID)
	fmt.Println("messages:", got.MessageCount, "tool calls:", got.ToolCallCount)

	conv, _ := st.Messages().Conversation(ctx, s.ID, repo.ConversationOptions{})
	for _, it := range conv {
		fmt.Printf("%s: %v\n", it.Role, it.Content)
	}

	_, err = st.Messages().Append(ctx, "no-such-session", repo.MessageInput{Role: "user", Content: models.Text("hi")})
	fmt.Println("missing session is ErrNotFound:", errors.Is(err, hs.ErrNotFound))
	// Output:
	// messages: 4 tool calls: 1
	// user: Why is the deployment failing?
	// assistant: <nil>
	// tool: CrashLoopBackOff
	// assistant: The pod is crash-looping.
	// missing session is ErrNotFound: true
}

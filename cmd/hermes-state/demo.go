package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// The demo command: a small, realistic store to try the other commands on.

// demoSession is one session of the demo store; its id is fixed, so that a
// second run finds it and adds nothing.
type demoSession struct {
	id    string
	write func(ctx context.Context, st *hs.Store, id string) error
}

var demoSessions = []demoSession{
	{"demo-cli-kubernetes", writeDemoCLI},
	{"demo-telegram-guilin", writeDemoTelegram},
	{"demo-cron-report", writeDemoCron},
}

func demoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Add three demo sessions to --db (a CLI session with tool calls, a Telegram chat in Chinese, a cron run) and list them; a second run adds nothing",
		Args:  cobra.NoArgs,
		RunE: a.withStore(creates, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			ctx := cmd.Context()
			added := 0
			var rows []*models.Session
			for _, d := range demoSessions {
				_, err := st.Sessions().Get(ctx, d.id)
				switch {
				case errors.Is(err, hs.ErrNotFound):
					if err := d.write(ctx, st, d.id); err != nil {
						return err
					}
					added++
				case err != nil:
					return err
				}
				s, err := st.Sessions().Get(ctx, d.id)
				if err != nil {
					return err
				}
				rows = append(rows, s)
			}
			return a.emit(rows, func(w io.Writer) error {
				if added == 0 {
					fmt.Fprintf(w, "the demo sessions are already in %s (%s); nothing added\n", st.Location(), st.Engine())
				} else {
					fmt.Fprintf(w, "added %s to %s (%s)\n", plural(int64(added), "demo session", ""), st.Location(), st.Engine())
				}
				for _, s := range rows {
					fmt.Fprintf(w, "  %-22s %-9s %-12s %s\n", s.ID, s.Source, plural(s.MessageCount, "message", ""), plural(s.ToolCallCount, "tool call", ""))
				}
				return nil
			})
		}),
	}
}

// writeDemoCLI writes a CLI session with a tool call, usage and an end.
func writeDemoCLI(ctx context.Context, st *hs.Store, id string) error {
	ss := st.Sessions()
	if _, err := ss.Create(ctx, repo.SessionInput{ID: id, Source: "cli", Model: "anthropic/claude-sonnet-4",
		SystemPrompt: "You are Hermes, a helpful agent.", Cwd: "/srv/shop",
		ModelConfig: models.MustJSON(map[string]any{"temperature": 0.2})}); err != nil {
		return err
	}
	calls := models.MustJSON([]models.ToolCall{{ID: "call_1", Type: "function",
		Function: models.ToolCallFunction{Name: "terminal", Arguments: `{"command": "kubectl get pods"}`}}})
	tokens := int64(42)
	turn := []repo.MessageInput{
		{Role: "user", Content: models.Text("Why does the deployment on kubernetes keep failing?")},
		{Role: "assistant", ToolCalls: calls, FinishReason: models.Text("tool_calls"), TokenCount: &tokens},
		{Role: "tool", ToolCallID: "call_1", ToolName: "terminal", Content: models.Text("api-7d9f8b6c5-x2k4p   0/1   CrashLoopBackOff")},
		{Role: "assistant", Content: models.Text("The api pod is crash-looping; check its logs with kubectl logs."), FinishReason: models.Text("stop")},
	}
	if _, err := st.Messages().AppendBatch(ctx, id, turn); err != nil {
		return err
	}
	cost := 0.0123
	if err := ss.UpdateTokenCounts(ctx, id, repo.TokenUpdate{InputTokens: 1200, OutputTokens: 310, APICallCount: 2,
		Model: "anthropic/claude-sonnet-4", BillingProvider: "openrouter", EstimatedCostUSD: &cost}); err != nil {
		return err
	}
	_, err := ss.End(ctx, id, "user_exit")
	return err
}

// writeDemoTelegram writes an open Telegram chat in Chinese.
func writeDemoTelegram(ctx context.Context, st *hs.Store, id string) error {
	if _, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "telegram", UserID: "10001", Model: "openai/gpt-4.1"}); err != nil {
		return err
	}
	for _, m := range []repo.MessageInput{
		{Role: "user", Content: models.Text("广西桂林的天气怎么样？")},
		{Role: "assistant", Content: models.Text("桂林今天多云，气温 18–24°C。")},
	} {
		if _, err := st.Messages().Append(ctx, id, m); err != nil {
			return err
		}
	}
	return nil
}

// writeDemoCron writes an ended cron run with one report.
func writeDemoCron(ctx context.Context, st *hs.Store, id string) error {
	if _, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cron", Model: "openai/gpt-4.1-mini"}); err != nil {
		return err
	}
	if _, err := st.Messages().Append(ctx, id, repo.MessageInput{Role: "assistant", Content: models.Text("Daily report: 3 deployments, 0 incidents.")}); err != nil {
		return err
	}
	_, err := st.Sessions().End(ctx, id, "cron_complete")
	return err
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func init() { commands = append(commands, demoCmd) }

// demoCmd writes a small, realistic store: a CLI session with tool calls,
// a Telegram chat in Chinese, and a cron run.
func demoCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "demo",
		Short: "Create a small demo store (three sessions) in --db and list it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := a.open(ctx)
			if err != nil {
				return err
			}
			ss, ms := st.Sessions(), st.Messages()
			cli, err := ss.Create(ctx, repo.NewSession{Source: "cli", Model: "anthropic/claude-sonnet-4",
				SystemPrompt: "You are Hermes, a helpful agent.", Cwd: "/srv/shop",
				ModelConfig: models.MustJSON(map[string]any{"temperature": 0.2})})
			if err != nil {
				return err
			}
			calls := models.MustJSON([]models.ToolCall{{ID: "call_1", Type: "function",
				Function: models.ToolCallFunction{Name: "terminal", Arguments: `{"command": "kubectl get pods"}`}}})
			tokens := int64(42)
			turn := []repo.NewMessage{
				{Role: "user", Content: models.Text("Why does the deployment on kubernetes keep failing?")},
				{Role: "assistant", ToolCalls: calls, FinishReason: models.Text("tool_calls"), TokenCount: &tokens},
				{Role: "tool", ToolCallID: "call_1", ToolName: "terminal", Content: models.Text("api-7d9f8b6c5-x2k4p   0/1   CrashLoopBackOff")},
				{Role: "assistant", Content: models.Text("The api pod is crash-looping; check its logs with kubectl logs."), FinishReason: models.Text("stop")},
			}
			if _, err := ms.AppendBatch(ctx, cli.ID, turn); err != nil {
				return err
			}
			cost := 0.0123
			if err := ss.UpdateTokenCounts(ctx, cli.ID, repo.TokenUpdate{InputTokens: 1200, OutputTokens: 310, APICallCount: 2,
				Model: "anthropic/claude-sonnet-4", BillingProvider: "openrouter", EstimatedCostUSD: &cost}); err != nil {
				return err
			}
			if _, err := ss.End(ctx, cli.ID, "user_exit"); err != nil {
				return err
			}
			tg, err := ss.Create(ctx, repo.NewSession{Source: "telegram", UserID: "10001", Model: "openai/gpt-4.1"})
			if err != nil {
				return err
			}
			for _, m := range []repo.NewMessage{
				{Role: "user", Content: models.Text("广西桂林的天气怎么样？")},
				{Role: "assistant", Content: models.Text("桂林今天多云，气温 18–24°C。")},
			} {
				if _, err := ms.Append(ctx, tg.ID, m); err != nil {
					return err
				}
			}
			cr, err := ss.Create(ctx, repo.NewSession{Source: "cron", Model: "openai/gpt-4.1-mini"})
			if err != nil {
				return err
			}
			if _, err := ms.Append(ctx, cr.ID, repo.NewMessage{Role: "assistant", Content: models.Text("Daily report: 3 deployments, 0 incidents.")}); err != nil {
				return err
			}
			if _, err := ss.End(ctx, cr.ID, "cron_complete"); err != nil {
				return err
			}
			rows, err := ss.List(ctx, repo.ListOptions{Limit: 10})
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(rows)
			}
			fmt.Fprintf(a.out, "demo store written to %s (%s)\n", st.Location(), st.Engine())
			for _, s := range rows {
				fmt.Fprintf(a.out, "  %s  %-9s %2d messages  %d tool calls\n", s.ID, s.Source, s.MessageCount, s.ToolCallCount)
			}
			return nil
		},
	}
}

package main

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func init() {
	commands = append(commands, sessionsCmd, migrateCmd)
}

// sessionSubcommands are added to "sessions" by other files of this
// package (init functions).
var sessionSubcommands []func(a *app) *cobra.Command

func sessionsCmd(a *app) *cobra.Command {
	c := &cobra.Command{Use: "sessions", Short: "List and show sessions"}
	list := sessionsListCmd(a)

	var conversation bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one session (with --conversation, its replay format)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			s, err := st.Sessions().Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if conversation {
				conv, err := st.Messages().Conversation(cmd.Context(), s.ID, repo.ConversationOptions{})
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(conv)
				}
				for _, it := range conv {
					fmt.Fprintf(a.out, "[%s] %s\n", it.Role, contentLine(it.Content))
				}
				return nil
			}
			if a.jsonOut {
				return a.printJSON(s)
			}
			tw := tabwriter.NewWriter(a.out, 0, 2, 2, ' ', 0)
			for _, kv := range [][2]string{
				{"id", s.ID}, {"source", s.Source}, {"title", deref(s.Title)}, {"model", deref(s.Model)},
				{"started", s.StartedAt.Time().Local().Format(time.DateTime)}, {"ended", endedText(s)},
				{"parent", deref(s.ParentSessionID)}, {"messages", fmt.Sprint(s.MessageCount)},
				{"tool calls", fmt.Sprint(s.ToolCallCount)},
				{"tokens in/out", fmt.Sprintf("%d / %d", s.InputTokens, s.OutputTokens)},
			} {
				fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
			}
			return tw.Flush()
		},
	}
	show.Flags().BoolVar(&conversation, "conversation", false, "print the OpenAI conversation format Hermes replays")
	c.AddCommand(list, show)
	c.AddCommand(sessionsExtraCmds(a)...)
	for _, sub := range sessionSubcommands {
		c.AddCommand(sub(a))
	}
	return c
}

func migrateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Bring the store to the current schema (Open does this too) and report the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			v, err := st.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			pending, err := st.MigrationsPending(cmd.Context())
			if err != nil {
				return err
			}
			if a.jsonOut {
				if err := a.printJSON(map[string]any{"path": st.Path(), "location": st.Location(), "driver": st.Driver(), "schema_version": v, "pending": pending, "sqlite_version": st.SQLiteVersion(), "journal_mode": st.JournalMode(), "server_version": st.ServerVersion(), "newer_schema": st.NewerSchema() > 0}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.out, "%s: Hermes schema version %d, %d migrations pending, %s\n", st.Location(), v, len(pending), st.Engine())
			}
			if n := st.NewerSchema(); n > 0 {
				return fmt.Errorf("%s has Hermes schema version %d, newer than %d: it was not migrated (nothing was changed); upgrade hermes-state to write to it (%w)", st.Location(), n, hs.HermesSchemaVersion, hs.ErrUnsupported)
			}
			return nil
		},
	}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func endedText(s *models.Session) string {
	if s.EndedAt == nil {
		return "open"
	}
	return s.EndedAt.Time().Local().Format(time.DateTime) + " (" + deref(s.EndReason) + ")"
}

func contentLine(v any) string {
	switch c := v.(type) {
	case nil:
		return "<no content>"
	case string:
		s := strings.ReplaceAll(c, "\n", " ")
		if r := []rune(s); len(r) > 120 {
			s = string(r[:117]) + "..."
		}
		return s
	default:
		return "[multimodal content]"
	}
}

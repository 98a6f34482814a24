package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func init() {
	commands = append(commands, messagesCmd)
}

// printMessages writes one line per message (or the JSON list).
func (a *app) printMessages(ms []models.Message) error {
	if a.jsonOut {
		return a.printJSON(ms)
	}
	for _, m := range ms {
		line := contentLine(m.DecodedContent())
		if m.ToolName != nil {
			line = "(" + *m.ToolName + ") " + line
		}
		if n := models.ToolCallCount(m.ToolCalls); n > 0 {
			line += fmt.Sprintf(" [%d tool call(s)]", n)
		}
		mark := ""
		if m.Active == 0 {
			mark = " (inactive)"
		}
		fmt.Fprintf(a.out, "#%d %s %s%s: %s\n", m.ID, m.Timestamp.Time().Local().Format(time.DateTime), m.Role, mark, line)
	}
	return nil
}

func messagesCmd(a *app) *cobra.Command {
	var around, after int64
	var window, limit int
	var latest, all bool
	c := &cobra.Command{
		Use:   "messages ID",
		Short: "Print a session's messages in order (all active ones, a page, or the window around one)",
		Long: `Print a session's messages in id order. By default every active message;
--after ID pages forward from a message (with --limit), --latest shows the newest
--limit ones, --around ID shows the window of --window messages on each side of one
(rewound ones included, as Hermes' get_messages_around), --all adds rewound and
archived messages. ID may be a unique prefix of the session id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.openRead(ctx)
			if err != nil {
				return err
			}
			id, err := st.Lineage().ResolveID(ctx, args[0])
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("around") {
				if cmd.Flags().Changed("after") || latest {
					return fmt.Errorf("--around cannot be combined with --after or --latest (%w)", hs.ErrInvalid)
				}
				res, err := st.Transcript().Around(ctx, id, around, window)
				if err != nil {
					return err
				}
				if len(res.Window) == 0 {
					return fmt.Errorf("message %d is not in session %s (%w)", around, id, hs.ErrNotFound)
				}
				if a.jsonOut {
					return a.printJSON(res)
				}
				ms := make([]models.Message, len(res.Window))
				for i := range res.Window {
					ms[i] = res.Window[i].Message
				}
				return a.printMessages(ms)
			}
			ms, err := st.Transcript().Get(ctx, id, repo.GetOptions{AfterID: after, Limit: limit, Latest: latest, IncludeInactive: all})
			if err != nil {
				return err
			}
			return a.printMessages(ms)
		},
	}
	fl := c.Flags()
	fl.Int64Var(&around, "around", 0, "show the messages around this message id")
	fl.IntVar(&window, "window", 5, "messages on each side with --around")
	fl.Int64Var(&after, "after", 0, "show the messages after this message id")
	fl.IntVar(&limit, "limit", 0, "at most this many messages (0 = all)")
	fl.BoolVar(&latest, "latest", false, "the newest --limit messages (still printed oldest first)")
	fl.BoolVar(&all, "all", false, "include rewound and archived messages")
	return c
}

package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// The messages command: a session's messages, all, a page or a window.

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
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("around") && (cmd.Flags().Changed("after") || latest) {
				return usagef(cmd, "--around cannot be combined with --after or --latest")
			}
			if err := atLeast(cmd, "limit", limit, 0); err != nil {
				return err
			}
			return atLeast(cmd, "window", window, 0)
		},
		RunE: a.withSession(reads, func(cmd *cobra.Command, st *hs.Store, id string, args []string) error {
			ctx := cmd.Context()
			if cmd.Flags().Changed("around") {
				res, err := st.Transcript().Around(ctx, id, around, window)
				if err != nil {
					return err
				}
				if len(res.Window) == 0 {
					return failf(hs.ErrNotFound, "message %d is not in session %s", around, id)
				}
				ms := make([]models.Message, len(res.Window))
				for i := range res.Window {
					ms[i] = res.Window[i].Message
				}
				return a.emit(res, func(w io.Writer) error { return printMessages(w, id, ms) })
			}
			ms, err := st.Transcript().Get(ctx, id, repo.GetOptions{AfterID: after, Limit: limit, Latest: latest, IncludeInactive: all})
			if err != nil {
				return err
			}
			return a.emit(ms, func(w io.Writer) error { return printMessages(w, id, ms) })
		}),
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

// printMessages writes one line per message: id, time, role, text, tool
// calls, tool name.
func printMessages(w io.Writer, sessionID string, ms []models.Message) error {
	if len(ms) == 0 {
		_, err := fmt.Fprintf(w, "no messages in session %s\n", sessionID)
		return err
	}
	for _, m := range ms {
		mark := ""
		if m.Active == 0 {
			mark = " (inactive)"
		}
		line := messageLine(m.DecodedContent(), m.ToolCalls, ptr.Deref(m.ToolName))
		if _, err := fmt.Fprintf(w, "#%d %s %s%s: %s\n", m.ID, localTime(m.Timestamp), m.Role, mark, line); err != nil {
			return err
		}
	}
	return nil
}

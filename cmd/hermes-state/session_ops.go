package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// Everyday session operations: archive, read/unread, rewind, resume.

func init() {
	sessionSubcommands = append(sessionSubcommands, sessionsArchiveCmd, sessionsReadCmd, sessionsRewindCmd, sessionsResumeCmd)
}

func sessionsArchiveCmd(a *app) *cobra.Command {
	var undo bool
	var olderThan time.Duration
	var source string
	c := &cobra.Command{
		Use:   "archive [ID]",
		Short: "Archive a session and its compression lineage (--undo to unarchive), or every ended session idle --older-than",
		Long: `With ID, archive (or with --undo unarchive) the session and its whole compression
lineage; archived sessions leave the default listing but keep every message.
Without ID, archive every ended, unpinned session whose last activity is older than
--older-than (optionally of one --source), lineage by lineage; compression
ancestors go with their tip. ID may be a unique prefix of the session id.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.open(ctx)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				if olderThan <= 0 || undo {
					return fmt.Errorf("give a session ID, or --older-than DURATION to archive in bulk (%w)", hs.ErrInvalid)
				}
				n, err := st.SessionState().ArchiveSessions(ctx, repo.ArchiveOptions{OlderThan: olderThan, Source: source})
				if err != nil {
					return err
				}
				if a.jsonOut {
					return a.printJSON(map[string]any{"archived": n})
				}
				fmt.Fprintf(a.out, "archived %d session(s)\n", n)
				return nil
			}
			if cmd.Flags().Changed("older-than") || source != "" {
				return fmt.Errorf("--older-than and --source select sessions in bulk; they do not apply with an ID (%w)", hs.ErrInvalid)
			}
			id, err := st.Lineage().ResolveID(ctx, args[0])
			if err != nil {
				return err
			}
			changed, err := st.Lineage().SetArchived(ctx, id, !undo)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"id": id, "archived": !undo, "changed": changed})
			}
			verb := "archived"
			if undo {
				verb = "unarchived"
			}
			fmt.Fprintf(a.out, "%s %s\n", verb, id)
			return nil
		},
	}
	c.Flags().BoolVar(&undo, "undo", false, "unarchive instead")
	c.Flags().DurationVar(&olderThan, "older-than", 0, "bulk: archive ended sessions idle longer than this (e.g. 720h)")
	c.Flags().StringVar(&source, "source", "", "bulk: only sessions of this source")
	return c
}

func sessionsReadCmd(a *app) *cobra.Command {
	var unread bool
	c := &cobra.Command{
		Use:   "read ID",
		Short: "Mark a session (its compression lineage) read, or with --unread unread",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.open(ctx)
			if err != nil {
				return err
			}
			id, err := st.Lineage().ResolveID(ctx, args[0])
			if err != nil {
				return err
			}
			if _, err := st.SessionState().SetRead(ctx, id, !unread); err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"id": id, "read": !unread})
			}
			state := "read"
			if unread {
				state = "unread"
			}
			fmt.Fprintf(a.out, "%s marked %s\n", id, state)
			return nil
		},
	}
	c.Flags().BoolVar(&unread, "unread", false, "mark unread instead")
	return c
}

func sessionsRewindCmd(a *app) *cobra.Command {
	var to int64
	var turn int
	c := &cobra.Command{
		Use:   "rewind ID (--to MESSAGE | --turn N)",
		Short: "Rewind a session: the user message --to (or user turn --turn, -1 the last) and everything after it become inactive",
		Long: `Rewind a session's live transcript, as Hermes' /rewind and /undo do: the target user
message and every live message after it become inactive (kept on disk, readable with
"messages --all"). --to names the user message by id; --turn counts user turns
(0 the first, -1 the last). Refused while another writer compresses the session or
holds its turn. ID may be a unique prefix of the session id.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			toSet, turnSet := cmd.Flags().Changed("to"), cmd.Flags().Changed("turn")
			if toSet == turnSet {
				return fmt.Errorf("give exactly one of --to MESSAGE and --turn N (%w)", hs.ErrInvalid)
			}
			st, err := a.open(ctx)
			if err != nil {
				return err
			}
			id, err := st.Lineage().ResolveID(ctx, args[0])
			if err != nil {
				return err
			}
			var res *repo.RewindResult
			if toSet {
				res, err = st.Rewind().ToMessage(ctx, id, to, repo.RewindOptions{})
			} else {
				res, err = st.Rewind().UserTurn(ctx, id, turn)
			}
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.out, "rewound %d message(s) of %s; the prompt was: %s\n", res.RewoundCount, id, contentLine(res.TargetMessage.DecodedContent()))
			return nil
		},
	}
	c.Flags().Int64Var(&to, "to", 0, "the user message id to rewind to (it is rewound too)")
	c.Flags().IntVar(&turn, "turn", 0, "the user turn to rewind to (0 the first, -1 the last)")
	return c
}

func sessionsResumeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "resume ID",
		Short: "Show what resuming a session loads: the session it continues and its conversation",
		Long: `Resolve ID as a resume does (a unique prefix; the live tip of its compression chain,
then the deepest descendant holding messages) and print the conversation a resume
shows: the whole lineage, compacted turns included, each message once. With --json,
both the model history (what the model is sent) and the display history.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			st, err := a.openRead(ctx)
			if err != nil {
				return err
			}
			id, err := st.Lineage().ResolveResume(ctx, args[0])
			if err != nil {
				return err
			}
			model, display, err := st.Compaction().ResumeConversations(ctx, id)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"id": id, "model": model, "display": display})
			}
			fmt.Fprintf(a.out, "resume %s: %d message(s) shown, %d sent to the model\n", id, len(display), len(model))
			for _, it := range display {
				fmt.Fprintf(a.out, "[%s] %s\n", it.Role, contentLine(it.Content))
			}
			return nil
		},
	}
}

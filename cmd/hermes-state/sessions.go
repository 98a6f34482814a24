package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// The sessions group: list, show, title, lineage, archive, read, rewind,
// resume.

func sessionsCmd(a *app) *cobra.Command {
	c := &cobra.Command{Use: "sessions", Short: "List, show and manage sessions"}
	c.AddCommand(
		sessionsListCmd(a),
		sessionsShowCmd(a),
		sessionsTitleCmd(a),
		sessionsLineageCmd(a),
		sessionsArchiveCmd(a),
		sessionsReadCmd(a),
		sessionsRewindCmd(a),
		sessionsResumeCmd(a),
		sessionsLeasesCmd(a),
	)
	return c
}

func sessionsListCmd(a *app) *cobra.Command {
	var opt repo.RichOptions
	var sources, exclude []string
	var noProject bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List sessions with a preview, newest first (delegate runs and compression continuations hidden)",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := atLeast(cmd, "limit", opt.Limit, 1); err != nil {
				return err
			}
			return atLeast(cmd, "offset", opt.Offset, 0)
		},
		RunE: a.withStore(reads, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			opt.Sources, opt.ExcludeSources = splitList(sources), splitList(exclude)
			opt.NoProjectCompressionTips = noProject
			rows, err := st.Listing().Rich(cmd.Context(), opt)
			if err != nil {
				return err
			}
			return a.emit(rows, func(w io.Writer) error {
				if len(rows) == 0 {
					_, err := fmt.Fprintln(w, noneText("sessions", a.location(), cmd))
					return err
				}
				tw := table(w)
				fmt.Fprintln(tw, "ID\tSOURCE\tLAST ACTIVE\tMSGS\tTITLE / PREVIEW")
				for _, s := range rows {
					label := ptr.Deref(s.Title)
					if label == "" {
						label = s.Preview
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.ID, s.Source, localTime(models.Epoch(s.LastActive)), s.MessageCount, label)
				}
				return tw.Flush()
			})
		}),
	}
	sourceFlags(c, &sources, &exclude)
	fl := c.Flags()
	fl.IntVar(&opt.Limit, "limit", 20, "number of sessions (1 or more)")
	fl.IntVar(&opt.Offset, "offset", 0, "sessions to skip")
	fl.BoolVar(&opt.IncludeChildren, "children", false, "also list delegate runs and compression continuations")
	fl.BoolVar(&opt.OrderByLastActive, "by-activity", false, "order by last activity of the whole conversation")
	fl.BoolVar(&opt.IncludeArchived, "archived", false, "include archived sessions")
	fl.BoolVar(&opt.IncludeHidden, "hidden", false, "include hidden sessions")
	fl.BoolVar(&noProject, "no-tips", false, "show compression roots as themselves, not projected onto their live tip")
	return c
}

// noneText says that a listing found nothing: "no sessions in PATH", or
// "no sessions match" when a flag narrowed it.
func noneText(what, location string, cmd *cobra.Command) string {
	narrowed := false
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch f.Name {
		case "source", "exclude-source", "offset", "role", "session":
			narrowed = true
		}
	})
	if narrowed {
		return "no " + what + " match"
	}
	return "no " + what + " in " + location
}

func sessionsShowCmd(a *app) *cobra.Command {
	var conversation bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one session (with --conversation, its replay format); a unique id prefix is enough",
		Args:  cobra.ExactArgs(1),
		RunE: a.withSession(reads, func(cmd *cobra.Command, st *hs.Store, id string, _ []string) error {
			s, err := st.Sessions().Get(cmd.Context(), id)
			if err != nil {
				return err
			}
			if conversation {
				conv, err := st.Messages().Conversation(cmd.Context(), s.ID, repo.ConversationOptions{})
				if err != nil {
					return err
				}
				return a.emit(conv, func(w io.Writer) error {
					if len(conv) == 0 {
						_, err := fmt.Fprintf(w, "session %s has no messages\n", s.ID)
						return err
					}
					return printConversation(w, conv)
				})
			}
			v, err := coordinationOf(cmd.Context(), st, s)
			if err != nil {
				return err
			}
			return a.emit(v, func(w io.Writer) error {
				return printSession(w, s, field{"turn lease", coordinationLease(v)}, field{"compression", leaseLine(v.CompressionLock)},
					field{"handoff", handoffLine(s)})
			})
		}),
	}
	c.Flags().BoolVar(&conversation, "conversation", false, "print the OpenAI conversation format Hermes replays (tool calls included)")
	return c
}

// printSession writes a session's fields that have a value (extra ones
// last).
func printSession(w io.Writer, s *models.Session, extra ...field) error {
	ended := "open"
	if s.EndedAt != nil {
		ended = localTime(*s.EndedAt)
		if r := ptr.Deref(s.EndReason); r != "" {
			ended += " (" + r + ")"
		}
	}
	return printFields(w, append([]field{
		{"id", s.ID}, {"source", s.Source}, {"title", ptr.Deref(s.Title)}, {"model", ptr.Deref(s.Model)},
		{"started", localTime(s.StartedAt)}, {"ended", ended},
		{"parent", ptr.Deref(s.ParentSessionID)}, {"messages", fmt.Sprint(s.MessageCount)},
		{"tool calls", fmt.Sprint(s.ToolCallCount)},
		{"tokens in/out", fmt.Sprintf("%d / %d", s.InputTokens, s.OutputTokens)},
	}, extra...))
}

// printConversation writes a replay, a line per item, tool calls and tool
// results included.
func printConversation(w io.Writer, conv []repo.ConversationItem) error {
	for _, it := range conv {
		if _, err := fmt.Fprintf(w, "[%s] %s\n", it.Role, messageLine(it.Content, it.ToolCalls, it.ToolName)); err != nil {
			return err
		}
	}
	return nil
}

func sessionsTitleCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "title ID [TITLE]",
		Short: "Set (or with an empty TITLE clear) a session's title; without TITLE print it",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			mode := reads
			if len(args) == 2 {
				mode = writes
			}
			return a.withSession(mode, func(cmd *cobra.Command, st *hs.Store, id string, args []string) error {
				ctx := cmd.Context()
				if len(args) == 2 {
					if _, err := st.Titles().Set(ctx, id, args[1]); err != nil {
						return err
					}
				}
				t, err := st.Titles().Get(ctx, id)
				if err != nil {
					return err
				}
				return a.emit(map[string]any{"id": id, "title": nilIfEmpty(t)}, func(w io.Writer) error {
					switch {
					case t != "":
						fmt.Fprintln(w, t)
					case len(args) == 2:
						fmt.Fprintf(a.errOut, "title of %s cleared\n", id)
					default:
						fmt.Fprintf(a.errOut, "session %s has no title\n", id)
					}
					return nil
				})
			})(cmd, args)
		},
	}
}

func sessionsLineageCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "lineage ID",
		Short: "Show a session's ancestors, descendants and compression chain",
		Args:  cobra.ExactArgs(1),
		RunE: a.withSession(reads, func(cmd *cobra.Command, st *hs.Store, id string, args []string) error {
			ctx, lin := cmd.Context(), st.Lineage()
			anc, err := lin.Ancestors(ctx, id)
			if err != nil {
				return err
			}
			des, err := lin.Descendants(ctx, id)
			if err != nil {
				return err
			}
			chain, err := lin.CompressionChain(ctx, id)
			if err != nil {
				return err
			}
			tip, err := lin.CompressionTip(ctx, id)
			if err != nil {
				return err
			}
			out := map[string]any{"id": id, "ancestors": anc, "descendants": des, "compression_chain": chain, "compression_tip": tip}
			return a.emit(out, func(w io.Writer) error {
				if len(chain) < 2 {
					chain = nil // a chain of the session alone says nothing
				}
				return printFields(w, []field{
					{"session", id}, {"ancestors", strings.Join(anc, " <- ")}, {"descendants", strings.Join(des, ", ")},
					{"compression", strings.Join(chain, " -> ")}, {"live tip", tip},
				})
			})
		}),
	}
}

func sessionsArchiveCmd(a *app) *cobra.Command {
	var undo bool
	var olderThan time.Duration
	var sources []string
	c := &cobra.Command{
		Use:   "archive [ID]",
		Short: "Archive a session and its compression lineage (--undo to unarchive), or every ended session idle --older-than",
		Long: `With ID, archive (or with --undo unarchive) the session and its whole compression
lineage; archived sessions leave the default listing but keep every message.
Without ID, archive every ended, unpinned session whose last activity is older than
--older-than (optionally of some --source), lineage by lineage; compression
ancestors go with their tip. ID may be a unique prefix of the session id.`,
		Args: cobra.MaximumNArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0 && (olderThan <= 0 || undo):
				return usagef(cmd, "give a session ID, or --older-than DURATION (more than 0) to archive in bulk")
			case len(args) == 1 && (cmd.Flags().Changed("older-than") || cmd.Flags().Changed("source")):
				return usagef(cmd, "--older-than and --source select sessions in bulk; they do not apply with an ID")
			}
			return nil
		},
		RunE: a.withStore(writes, func(cmd *cobra.Command, st *hs.Store, args []string) error {
			ctx := cmd.Context()
			if len(args) == 0 {
				var n int64
				for _, src := range orAll(splitList(sources)) {
					k, err := st.SessionState().ArchiveSessions(ctx, repo.ArchiveOptions{OlderThan: olderThan, Source: src})
					if err != nil {
						return err
					}
					n += int64(k)
				}
				return a.emit(map[string]any{"archived": n}, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "archived %s\n", plural(n, "session", ""))
					return err
				})
			}
			id, err := st.Lineage().ResolveID(ctx, args[0])
			if err != nil {
				return err
			}
			changed, err := st.Lineage().SetArchived(ctx, id, !undo)
			if err != nil {
				return err
			}
			return a.emit(map[string]any{"id": id, "archived": !undo, "changed": changed}, func(w io.Writer) error {
				verb := "archived"
				if undo {
					verb = "unarchived"
				}
				if !changed {
					_, err := fmt.Fprintf(w, "%s was already %s\n", id, verb)
					return err
				}
				_, err := fmt.Fprintf(w, "%s %s\n", verb, id)
				return err
			})
		}),
	}
	c.Flags().BoolVar(&undo, "undo", false, "unarchive instead")
	c.Flags().DurationVar(&olderThan, "older-than", 0, "bulk: archive ended sessions idle longer than this (e.g. 720h)")
	sourceFlags(c, &sources, nil)
	return c
}

// orAll is the sources to act on one by one: the given ones, or "" (every
// source).
func orAll(sources []string) []string {
	if len(sources) == 0 {
		return []string{""}
	}
	return sources
}

func sessionsReadCmd(a *app) *cobra.Command {
	var unread bool
	c := &cobra.Command{
		Use:   "read ID",
		Short: "Mark a session (its compression lineage) read, or with --unread unread",
		Args:  cobra.ExactArgs(1),
		RunE: a.withSession(writes, func(cmd *cobra.Command, st *hs.Store, id string, args []string) error {
			ctx := cmd.Context()
			if _, err := st.SessionState().SetRead(ctx, id, !unread); err != nil {
				return err
			}
			return a.emit(map[string]any{"id": id, "read": !unread}, func(w io.Writer) error {
				state := "read"
				if unread {
					state = "unread"
				}
				_, err := fmt.Fprintf(w, "%s marked %s\n", id, state)
				return err
			})
		}),
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
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("to") == cmd.Flags().Changed("turn") {
				return usagef(cmd, "give exactly one of --to MESSAGE and --turn N")
			}
			return nil
		},
		RunE: a.withSession(writes, func(cmd *cobra.Command, st *hs.Store, id string, args []string) error {
			ctx := cmd.Context()
			var res *repo.RewindResult
			var err error
			if cmd.Flags().Changed("to") {
				res, err = st.Rewind().ToMessage(ctx, id, to, repo.RewindOptions{})
			} else {
				res, err = st.Rewind().UserTurn(ctx, id, turn)
			}
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "rewound %s of %s; the prompt was: %s\n", plural(int64(res.RewoundCount), "message", ""), id, contentLine(res.TargetMessage.DecodedContent()))
				return err
			})
		}),
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
		RunE: a.withStore(reads, func(cmd *cobra.Command, st *hs.Store, args []string) error {
			ctx := cmd.Context()
			id, err := st.Lineage().ResolveResume(ctx, args[0])
			if err != nil {
				return err
			}
			model, display, err := st.Compaction().ResumeConversations(ctx, id)
			if err != nil {
				return err
			}
			return a.emit(map[string]any{"id": id, "model": model, "display": display}, func(w io.Writer) error {
				fmt.Fprintf(w, "resume %s: %s shown, %d sent to the model\n", id, plural(int64(len(display)), "message", ""), len(model))
				return printConversation(w, display)
			})
		}),
	}
}

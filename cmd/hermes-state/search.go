package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// The search command: Hermes' search_messages over every message.

func searchCmd(a *app) *cobra.Command {
	var opt repo.SearchOptions
	var sources, exclude, roles []string
	var sortBy string
	var explain bool
	c := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over messages (Hermes' search_messages: snippet, session, context)",
		Long: `Search every message (content, tool names and tool-call arguments) as Hermes'
search_messages does: words (all must occur), "a phrase", prefix*, OR, NOT, and
substrings of CJK text. Hits come most relevant first (--sort newest or oldest
by time). -v or --explain also print, on stderr, the route the search took
(fts5, trigram, cjk_index, ...) and, with --explain, SQLite's query plan.`,
		Args: cobra.MinimumNArgs(1),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(strings.Join(args, " ")) == "" {
				return usagef(cmd, "the query is empty: give the words to search for")
			}
			if err := oneOf(cmd, "sort", sortBy, "relevance", "newest", "oldest"); err != nil {
				return err
			}
			for _, r := range splitList(roles) {
				if err := oneOf(cmd, "role", r, "user", "assistant", "tool", "system"); err != nil {
					return err
				}
			}
			if err := atLeast(cmd, "limit", opt.Limit, 1); err != nil {
				return err
			}
			return atLeast(cmd, "offset", opt.Offset, 0)
		},
		RunE: a.withStore(reads, func(cmd *cobra.Command, st *hs.Store, args []string) error {
			opt.Sources, opt.ExcludeSources, opt.Roles = splitList(sources), splitList(exclude), splitList(roles)
			if sortBy != "relevance" {
				opt.Sort = sortBy
			}
			q := strings.Join(args, " ")
			run := st.Search().Run
			if explain {
				run = st.Search().Explain
			}
			res, err := run(cmd.Context(), q, opt)
			if err != nil {
				return err
			}
			if a.verbose || explain {
				fmt.Fprintf(a.errOut, "query %q, sanitized %q, route %s: %s\n", q, res.Sanitized, res.Route, plural(int64(len(res.Hits)), "hit", ""))
				for _, p := range res.Plan {
					fmt.Fprintf(a.errOut, "  plan: %s\n", p)
				}
			}
			return a.emit(res.Hits, func(w io.Writer) error { return printHits(w, q, res.Hits) })
		}),
	}
	f := c.Flags()
	sourceFlags(c, &sources, &exclude)
	f.StringSliceVar(&roles, "role", nil, "only these roles: user, assistant, tool, system (a tool role searches full tool output with LIKE)")
	f.IntVar(&opt.Limit, "limit", 20, "maximum hits (1 or more)")
	f.IntVar(&opt.Offset, "offset", 0, "hits to skip")
	f.StringVar(&sortBy, "sort", "relevance", "relevance, newest or oldest")
	f.BoolVar(&opt.IncludeInactive, "include-inactive", false, "also search rewound messages")
	f.BoolVar(&explain, "explain", false, "print the route and SQLite query plan on stderr")
	return c
}

// printHits writes the hits as a table, snippets readable (tool-call JSON
// shown as "-> name {arguments}").
func printHits(w io.Writer, q string, hits []repo.SearchHit) error {
	if len(hits) == 0 {
		_, err := fmt.Fprintf(w, "no messages match %q\n", q)
		return err
	}
	tw := table(w)
	fmt.Fprintln(tw, "SESSION\tMSG\tTIME\tSOURCE\tROLE\tSNIPPET")
	for _, h := range hits {
		role := h.Role
		if t := ptr.Deref(h.ToolName); t != "" && h.Role == "tool" {
			role += " (" + t + ")"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\n", h.SessionID, h.ID, localTime(models.Epoch(h.Timestamp)), ptr.Deref(h.Source), role, readableSnippet(ptr.Deref(h.Snippet)))
	}
	return tw.Flush()
}

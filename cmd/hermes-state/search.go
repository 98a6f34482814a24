package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hermesstate/hermesstate/repo"
)

func init() {
	commands = append(commands, searchCmd)
}

func searchCmd(a *app) *cobra.Command {
	var opt repo.SearchOptions
	var sources, exclude, roles []string
	var explain bool
	c := &cobra.Command{
		Use:   "search QUERY",
		Short: "Full-text search over messages (Hermes' search_messages: snippet, session, context)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			if cmd.Flags().Changed("source") {
				opt.Sources = splitList(sources)
			}
			if cmd.Flags().Changed("exclude-source") {
				opt.ExcludeSources = splitList(exclude)
			}
			opt.Roles = splitList(roles)
			q := strings.Join(args, " ")
			run := st.Search().Run
			if explain {
				run = st.Search().Explain
			}
			res, err := run(cmd.Context(), q, opt)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(res.Hits)
			}
			fmt.Fprintf(a.errOut, "query %q, sanitized %q, route %s: %d hits\n", q, res.Sanitized, res.Route, len(res.Hits))
			for _, p := range res.Plan {
				fmt.Fprintf(a.errOut, "  plan: %s\n", p)
			}
			tw := tabwriter.NewWriter(a.out, 0, 2, 2, ' ', 0)
			for _, h := range res.Hits {
				snip := ""
				if h.Snippet != nil {
					snip = strings.Join(strings.Fields(*h.Snippet), " ")
				}
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", h.ID, h.SessionID, deref(h.Source), h.Role, snip)
			}
			return tw.Flush()
		},
	}
	f := c.Flags()
	f.StringSliceVar(&sources, "source", nil, "only sessions of these sources (repeat or comma-separate)")
	f.StringSliceVar(&exclude, "exclude-source", nil, "leave out sessions of these sources")
	f.StringSliceVar(&roles, "role", nil, "only these roles (a tool role searches full tool output with LIKE)")
	f.IntVar(&opt.Limit, "limit", 20, "maximum hits")
	f.IntVar(&opt.Offset, "offset", 0, "hits to skip")
	f.StringVar(&opt.Sort, "sort", "", "newest or oldest (default: relevance)")
	f.BoolVar(&opt.IncludeInactive, "include-inactive", false, "also search rewound messages")
	f.BoolVar(&explain, "explain", false, "print the route and SQLite query plan on stderr")
	return c
}

func splitList(in []string) []string {
	out := []string{}
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

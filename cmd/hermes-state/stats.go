package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/ptr"
	"github.com/hermesstate/hermesstate/repo"
)

// The stats command: usage by source, by model, top sessions.

func statsCmd(a *app) *cobra.Command {
	var f repo.StatsFilter
	var sources []string
	var top int
	c := &cobra.Command{
		Use:     "stats",
		Short:   "Usage statistics: by source, by model, top sessions by tokens",
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error { return atLeast(cmd, "top", top, 1) },
		RunE: a.withStore(reads, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			ctx, us := cmd.Context(), st.Usage()
			f.Sources = splitList(sources)
			bs, err := us.BySource(ctx, f)
			if err != nil {
				return err
			}
			bm, err := us.ByModel(ctx, f)
			if err != nil {
				return err
			}
			ts, err := us.TopSessions(ctx, top, f)
			if err != nil {
				return err
			}
			return a.emit(map[string]any{"by_source": bs, "by_model": bm, "top_sessions": ts}, func(w io.Writer) error {
				if len(bs) == 0 {
					_, err := fmt.Fprintln(w, noneText("sessions", a.location(), cmd))
					return err
				}
				return printStats(w, bs, bm, ts)
			})
		}),
	}
	sourceFlags(c, &sources, nil)
	c.Flags().IntVar(&top, "top", 10, "number of top sessions")
	return c
}

// printStats writes the three tables; one without rows is said in a line.
func printStats(w io.Writer, bs []repo.SourceStats, bm []repo.ModelStats, ts []repo.SessionTokens) error {
	tw := table(w)
	fmt.Fprintln(tw, "SOURCE\tSESSIONS\tMESSAGES\tTOKENS IN\tTOKENS OUT\tCOST USD")
	for _, x := range bs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.4f\n", x.Source, x.Sessions, x.Messages, x.InputTokens, x.OutputTokens, x.EstimatedCostUSD)
	}
	if len(bm) == 0 {
		fmt.Fprintln(tw, "\nno usage by model recorded")
	} else {
		fmt.Fprintln(tw, "\nMODEL\tSESSIONS\tCALLS\tTOKENS IN\tTOKENS OUT\tCOST USD")
		for _, x := range bm {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.4f\n", x.Model, x.Sessions, x.APICalls, x.InputTokens, x.OutputTokens, x.EstimatedCostUSD)
		}
	}
	if len(ts) > 0 {
		fmt.Fprintln(tw, "\nTOP SESSION\tSOURCE\tMESSAGES\tTOKENS\tTITLE")
		for _, x := range ts {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", x.ID, x.Source, x.Messages, x.TotalTokens, ptr.Deref(x.Title))
		}
	}
	return tw.Flush()
}

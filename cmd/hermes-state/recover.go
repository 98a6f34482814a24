package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
)

func init() {
	commands = append(commands, recoverCmd)
}

func recoverCmd(a *app) *cobra.Command {
	var opt hs.RecoverOptions
	c := &cobra.Command{
		Use:   "recover --from BROKEN --to NEW",
		Short: "Salvage a damaged state.db into a new file, never writing to the damaged one",
		Long: `recover reads BROKEN read-only (a private copy when it has a -wal or a damaged
header), copies every table in rowid ranges stepping around unreadable pages, then
builds indexes, FTS tables and triggers on NEW and adopts it to v30. It reports per
table what was saved and lost. Without --allow-partial it refuses to finish (exit 6,
NEW removed) when anything was lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opt.From == "" || opt.To == "" {
				return fmt.Errorf("%w: --from and --to are required", hs.ErrInvalid)
			}
			if err := a.checkFlags(); err != nil {
				return err
			}
			opt.JournalMode = a.config().JournalMode
			p, done := a.stepProgress()
			opt.Progress = p
			rep, err := hs.Recover(cmd.Context(), opt)
			done()
			if rep != nil && (err == nil || len(rep.Tables) > 0) {
				if a.jsonOut {
					if jerr := a.printJSON(rep); jerr != nil {
						return jerr
					}
				} else {
					printRecover(a, rep, err == nil)
				}
			}
			return err
		},
	}
	c.Flags().StringVar(&opt.From, "from", "", "the damaged file (never written to)")
	c.Flags().StringVar(&opt.To, "to", "", "the new file (must not exist)")
	c.Flags().BoolVar(&opt.AllowPartial, "allow-partial", false, "keep NEW even when rows could not be read")
	return c
}

func printRecover(a *app, rep *hs.RecoverReport, kept bool) {
	w := a.out
	if rep.HeaderRebuilt {
		fmt.Fprintln(w, "the damaged header was rebuilt on a private copy")
	}
	if rep.UsedWAL {
		fmt.Fprintln(w, "the -wal was read from a private copy")
	}
	fmt.Fprintf(w, "%-26s %8s %8s  %s\n", "TABLE", "SAVED", "LOST", "UNREADABLE ROWIDS")
	for _, t := range rep.Tables {
		lost := fmt.Sprint(t.Lost)
		if t.Unknown {
			lost += "+"
		}
		note := strings.Join(t.Unreadable, ",")
		if t.Error != "" {
			note = strings.TrimSpace(note + " " + t.Error)
		}
		fmt.Fprintf(w, "%-26s %8d %8s  %s\n", t.Table, t.Saved, lost, note)
	}
	for _, p := range rep.Problems {
		fmt.Fprintf(w, "note: %s\n", p)
	}
	switch {
	case kept && rep.Complete:
		fmt.Fprintf(w, "every row saved to %s (%d rows, %s)\n", rep.To, rep.Saved, rep.Elapsed)
	case kept:
		fmt.Fprintf(w, "%d rows saved to %s, %d lost (--allow-partial)\n", rep.Saved, rep.To, rep.Lost)
	default:
		fmt.Fprintf(w, "nothing kept: %d rows could not be read\n", rep.Lost)
	}
}

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
)

func init() {
	commands = append(commands, repairCmd)
}

// stepProgress turns the library's (step, done, total) callback into one
// progress bar per step on stderr (only when stderr is a terminal).
func (a *app) stepProgress() (func(step string, done, total int64), func()) {
	cur := ""
	var fn func(done, total int64)
	finish := func() {}
	return func(step string, done, total int64) {
			if step != cur {
				finish()
				cur = step
				fn, finish = a.progress(step)
			}
			if fn != nil {
				fn(done, total)
			}
		}, func() {
			finish()
		}
}

func repairCmd(a *app) *cobra.Command {
	var opt hs.RepairOptions
	c := &cobra.Command{
		Use:   "repair",
		Short: "Fix in place what doctor found and is safe to fix, never deleting a row",
		Long: `repair recreates missing tables, columns, indexes, views and triggers, rebuilds
damaged FTS tables, REINDEXes indexes that disagree with their table, restores
broken references (a placeholder session, or a cleared dangling parent), recomputes
counters and optimises the FTS indexes, in bounded steps that each commit: an
interrupted repair is finished by the next one, and a second run changes nothing.
It refuses (exit 6) a file with page-level damage: use recover.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkFlags(); err != nil {
				return err
			}
			p, done := a.stepProgress()
			opt.Progress = p
			rep, err := hs.Repair(cmd.Context(), a.config(), opt)
			done()
			if rep != nil {
				if a.jsonOut {
					if jerr := a.printJSON(rep); jerr != nil {
						return jerr
					}
				} else {
					printRepair(a, rep)
				}
			}
			if err != nil {
				return err
			}
			if rep.After != nil && !rep.After.OK() {
				return errProblems{len(rep.After.Problems())}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&opt.DryRun, "dry-run", false, "list the steps without changing the file")
	return c
}

func printRepair(a *app, rep *hs.RepairReport) {
	verb := "done"
	if rep.DryRun {
		verb = "planned"
	}
	if len(rep.Actions) == 0 {
		fmt.Fprintln(a.out, "nothing to repair")
	}
	for _, act := range rep.Actions {
		rows := ""
		if act.Rows > 0 {
			rows = fmt.Sprintf(" (%d rows)", act.Rows)
		}
		fmt.Fprintf(a.out, "%-8s %-13s %s%s\n", verb, act.Step, act.Detail, rows)
	}
	for _, f := range rep.Unfixable {
		fmt.Fprintf(a.out, "not fixed %s: %s\n          fix: %s\n", f.Check, f.Message, f.Fix)
	}
	if rep.After != nil {
		if p := rep.After.Problems(); len(p) > 0 {
			var s []string
			for _, f := range p {
				s = append(s, f.Message)
			}
			fmt.Fprintf(a.out, "still wrong: %s\n", strings.Join(s, "; "))
		} else {
			fmt.Fprintln(a.out, "doctor: nothing wrong")
		}
	}
}

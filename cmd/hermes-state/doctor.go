package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
)

func init() {
	commands = append(commands, doctorCmd)
}

// errProblems makes the command exit non-zero after printing a report that
// found something wrong.
type errProblems struct{ n int }

func (e errProblems) Error() string {
	return fmt.Sprintf("doctor found %d problem(s); run the commands shown to fix them", e.n)
}

func doctorCmd(a *app) *cobra.Command {
	var full bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the state database and say what is wrong and how to fix it",
		Long: `doctor examines the state database without changing it (no migration runs):
SQLite version (WAL-reset bug), journal mode configured and in effect, quick_check
(integrity_check with --full), FTS5 integrity-check of every FTS table, foreign keys,
the schema against the v30 one (columns, indexes, triggers, FTS layout), counters
against rows, free pages, WAL size, schema version and pending migrations.
Each finding has a severity and the command that fixes it. The exit status is
non-zero when anything is wrong.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkFlags(); err != nil {
				return err
			}
			r, err := hs.Doctor(cmd.Context(), a.config(), hs.DoctorOptions{Full: full})
			if err != nil {
				return err
			}
			if a.jsonOut {
				if err := a.printJSON(r); err != nil {
					return err
				}
			} else {
				printDoctor(a, r)
			}
			if n := len(r.Problems()); n > 0 {
				return errProblems{n}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&full, "full", false, "run integrity_check (every page) instead of quick_check, and compare FTS indexes with their content")
	return c
}

func printDoctor(a *app, r *hs.DoctorReport) {
	w := a.out
	fmt.Fprintf(w, "file            %s (%s, WAL %s)\n", r.Path, human(r.FileBytes), human(r.WALBytes))
	bug := "no WAL-reset bug"
	if r.WALResetBug {
		bug = "HAS the WAL-reset bug"
	}
	fmt.Fprintf(w, "sqlite          %s (%s)\n", r.SQLiteVersion, bug)
	fmt.Fprintf(w, "journal mode    %s (configured %s)\n", r.JournalMode, r.JournalConfigured)
	fmt.Fprintf(w, "schema version  %d, pending migrations: %s\n", r.SchemaVersion, orNone(r.PendingMigrations))
	fmt.Fprintf(w, "fts layout      %s %s\n", r.FTSLayout, strings.Join(r.FTSTables, ", "))
	fmt.Fprintf(w, "pages           %d of %d bytes, %d free (%.1f%%)\n", r.PageCount, r.PageSize, r.FreelistCount, 100*r.FreelistRatio)
	fmt.Fprintf(w, "rows            %d sessions, %d messages\n", r.Sessions, r.Messages)
	fmt.Fprintln(w)
	probs := r.Problems()
	for _, f := range probs {
		obj := ""
		if f.Object != "" {
			obj = " [" + f.Object + "]"
		}
		fmt.Fprintf(w, "%-7s %s%s: %s\n", strings.ToUpper(string(f.Severity)), f.Check, obj, f.Message)
		if f.Fix != "" {
			fmt.Fprintf(w, "        fix: %s\n", f.Fix)
		}
	}
	if len(probs) == 0 {
		fmt.Fprintf(w, "nothing wrong (checked in %s)\n", r.Elapsed)
	} else {
		fmt.Fprintf(w, "%d problem(s) (checked in %s)\n", len(probs), r.Elapsed)
	}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func human(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

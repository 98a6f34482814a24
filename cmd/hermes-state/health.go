package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/doctor"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/migrations"
)

// Health of the store: doctor, repair, recover, maintain.

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
non-zero when anything is wrong. A file that cannot be opened or read where it
lies (a full disk, a read-only mount, no permission) is reported as such
("place"), with what to do, never as damage.`,
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

// fixFor is a finding's fix as the command to run on the file at path:
// "hermes-state repair" becomes "hermes-state --db PATH repair", and the
// recover advice names the file ("--from PATH").
func fixFor(fix, path string) string {
	if path == "" {
		return fix
	}
	q := sqlitex.ShellQuote(path)
	fix = strings.ReplaceAll(fix, "<this file>", q)
	if rest, ok := strings.CutPrefix(fix, "hermes-state "); ok && !strings.HasPrefix(rest, "recover ") && !strings.HasPrefix(rest, "--db ") {
		fix = "hermes-state --db " + q + " " + rest
	}
	return fix
}

func printDoctor(a *app, r *hs.DoctorReport) {
	w := a.text()
	defer w.Flush()
	fmt.Fprintf(w, "file            %s (%s, WAL %s)\n", r.Path, humanBytes(r.FileBytes), humanBytes(r.WALBytes))
	bug := "no WAL-reset bug"
	if r.WALResetBug {
		bug = "HAS the WAL-reset bug"
	}
	fmt.Fprintf(w, "sqlite          %s (%s)\n", r.SQLiteVersion, bug)
	if r.JournalExplicit {
		fmt.Fprintf(w, "journal mode    %s (configured %s)\n", r.JournalMode, r.JournalConfigured)
	} else {
		fmt.Fprintf(w, "journal mode    %s (the file's own: none configured, writes keep it)\n", r.JournalMode)
	}
	if len(r.PendingMigrations) == 0 {
		fmt.Fprintf(w, "schema version  %d, pending migrations: none\n", r.SchemaVersion)
	} else {
		fmt.Fprintf(w, "schema version  %d, pending migrations (migrate would run them):\n", r.SchemaVersion)
	}
	for _, id := range r.PendingMigrations {
		fmt.Fprintf(w, "                  %s: %s\n", id, orUnknownStep(migrations.Describe(id)))
	}
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
			fmt.Fprintf(w, "        fix: %s\n", fixFor(f.Fix, r.Path))
		}
	}
	for _, f := range r.Findings {
		if f.Severity == hs.SeverityInfo && (f.Check == "place" || f.Check == doctor.CheckCoordination) {
			fmt.Fprintf(w, "NOTE    %s: %s\n", f.Check, f.Message)
			if f.Check == doctor.CheckCoordination && f.Fix != "" {
				fmt.Fprintf(w, "        clear: %s\n", fixFor(f.Fix, r.Path))
			}
		}
	}
	for _, what := range r.Unchecked {
		fmt.Fprintf(w, "NOTE    %s could not run: another process kept the file locked (busy, not damage)\n", what)
	}
	switch {
	case len(probs) > 0:
		fmt.Fprintf(w, "%d problem(s) (checked in %s)\n", len(probs), r.Elapsed)
	case !r.Complete():
		// "nothing wrong" only when every check ran.
		fmt.Fprintf(w, "no problem found, but %d check(s) could not run: run `hermes-state --db %s doctor` again when the file is idle (checked in %s)\n",
			len(r.Unchecked), r.Path, r.Elapsed)
	default:
		fmt.Fprintf(w, "nothing wrong (checked in %s)\n", r.Elapsed)
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
It refuses (exit 6) a file with page-level damage: use recover. A healthy file that
cannot be opened or written where it lies (a read-only mount, a full disk, no
permission) is not damage: repair says why and what to do, changes nothing and
exits 1 (with nothing to fix there, "nothing to repair").`,
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
	w := a.text()
	defer w.Flush()
	verb := "done"
	if rep.DryRun {
		verb = "planned"
	}
	busy := rep.Before != nil && !rep.Before.Complete()
	if busy {
		for _, what := range rep.Before.Unchecked {
			fmt.Fprintf(w, "NOTE     %s could not run: another process kept the file locked (busy, not damage)\n", what)
		}
	}
	if len(rep.Actions) == 0 && len(rep.Unfixable) == 0 {
		if busy {
			fmt.Fprintf(w, "nothing to repair in what could be checked; run `hermes-state --db %s repair` again when the file is idle\n", rep.Before.Path)
		} else {
			fmt.Fprintln(w, "nothing to repair")
		}
	}
	for _, act := range rep.Actions {
		rows := ""
		if act.Rows > 0 {
			rows = fmt.Sprintf(" (%d rows)", act.Rows)
		}
		fmt.Fprintf(w, "%-8s %-13s %s%s\n", verb, act.Step, act.Detail, rows)
	}
	for _, f := range rep.Unfixable {
		fmt.Fprintf(w, "not fixed %s: %s\n          fix: %s\n", f.Check, f.Message, fixFor(f.Fix, rep.Before.Path))
	}
	if rep.After != nil {
		if p := rep.After.Problems(); len(p) > 0 {
			var s []string
			for _, f := range p {
				s = append(s, f.Message)
			}
			fmt.Fprintf(w, "still wrong: %s\n", strings.Join(s, "; "))
		} else if !rep.After.Complete() {
			fmt.Fprintf(w, "doctor: no problem found, but %d check(s) could not run (the file was busy); run again when it is idle\n", len(rep.After.Unchecked))
		} else {
			fmt.Fprintln(w, "doctor: nothing wrong")
		}
	}
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
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if opt.From == "" || opt.To == "" {
				return usagef(cmd, "recover needs --from BROKEN and --to NEW")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.elsewhere = true // errors name --from or --to, never --db
			if err := a.checkFlags(); err != nil {
				return err
			}
			opt.JournalMode, opt.Engine = a.config().JournalMode, a.engine
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
	w := a.text()
	defer w.Flush()
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

func maintainCmd(a *app) *cobra.Command {
	var opt hs.MaintenanceOptions
	var hk housekeepFlags
	c := &cobra.Command{
		Use:   "maintain",
		Short: "Back up (VACUUM INTO, rotated), prune old ended sessions, VACUUM when over 25% free, checkpoint; and Hermes' housekeeping steps when asked",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if opt.RetentionDays < 0 || opt.RetentionDays > maxDays {
				return usagef(cmd, "--prune-days must be at least 0 (no prune) and at most %d (got %d)", maxDays, opt.RetentionDays)
			}
			if err := hk.check(cmd); err != nil {
				return err
			}
			return atLeast(cmd, "keep", opt.BackupKeep, 0)
		},
		RunE: a.withStore(writes, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			out := maintainView{}
			hopt := hk.options()
			if hopt != nil {
				rep, err := st.Housekeep(cmd.Context(), *hopt)
				out.Housekeeping = rep
				if err != nil {
					_ = a.emit(out, func(w io.Writer) error { printHousekeep(w, hopt, rep); return nil })
					return err
				}
				// PostgreSQL has no file maintenance: the housekeeping is all.
				if st.Driver() == hs.DriverPostgres && opt.RetentionDays == 0 && !opt.Vacuum && opt.BackupDir == "" {
					return a.emit(out, func(w io.Writer) error { printHousekeep(w, hopt, rep); return nil })
				}
			}
			p, done := a.stepProgress()
			opt.Progress = p
			rep, err := st.Maintain(cmd.Context(), opt)
			done()
			if rep == nil {
				return err
			}
			out.MaintenanceReport = rep
			if perr := a.emit(out, func(w io.Writer) error {
				if hopt != nil {
					printHousekeep(w, hopt, out.Housekeeping)
				}
				return printMaintain(w, opt, rep)
			}); perr != nil {
				return perr
			}
			return err
		}),
	}
	c.Flags().IntVar(&opt.RetentionDays, "prune-days", 0, "prune ended, unpinned sessions inactive for more than N days (0: no prune)")
	c.Flags().BoolVar(&opt.Vacuum, "vacuum", false, "VACUUM when more than 25% of the pages are free")
	c.Flags().StringVar(&opt.BackupDir, "backup-dir", "", "write a VACUUM INTO snapshot into this directory first")
	c.Flags().IntVar(&opt.BackupKeep, "keep", 7, "snapshots to keep in --backup-dir")
	hk.declare(c)
	return c
}

// maintainView is what `maintain --json` prints: the maintenance report,
// with the housekeeping report when steps were asked.
type maintainView struct {
	*hs.MaintenanceReport
	Housekeeping *hs.HousekeepReport `json:"housekeeping,omitempty"`
}

// printMaintain writes a line per step maintain took.
func printMaintain(w io.Writer, opt hs.MaintenanceOptions, rep *hs.MaintenanceReport) error {
	if rep.Backup != "" {
		fmt.Fprintf(w, "backup     %s\n", rep.Backup)
	}
	for _, r := range rep.BackupsRemoved {
		fmt.Fprintf(w, "removed    %s\n", r)
	}
	if opt.RetentionDays > 0 {
		fmt.Fprintf(w, "pruned     %s older than %d days\n", plural(int64(rep.Pruned), "session", ""), opt.RetentionDays)
	}
	if rep.Vacuum != nil {
		if rep.Vacuum.Ran {
			fmt.Fprintf(w, "vacuumed   %.0f%% of the pages were free\n", 100*rep.Vacuum.FreeRatio)
		} else {
			fmt.Fprintf(w, "no vacuum  %.0f%% of the pages are free (needs more than 25%%)\n", 100*rep.Vacuum.FreeRatio)
		}
	}
	if rep.Checkpointed {
		fmt.Fprintln(w, "checkpoint WAL truncated")
	}
	return nil
}

// orUnknownStep is a step's description, or a note that this build does not
// know the step (it was recorded by a newer hermesstate).
func orUnknownStep(d string) string {
	if d == "" {
		return "(a step this build does not know)"
	}
	return d
}

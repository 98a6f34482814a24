package main

import (
	"fmt"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
)

func init() {
	commands = append(commands, maintainCmd)
}

func maintainCmd(a *app) *cobra.Command {
	var opt hs.MaintenanceOptions
	c := &cobra.Command{
		Use:   "maintain",
		Short: "Back up (VACUUM INTO, rotated), prune old ended sessions, VACUUM when over 25% free, checkpoint",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			p, done := a.stepProgress()
			opt.Progress = p
			rep, err := st.Maintain(cmd.Context(), opt)
			done()
			if a.jsonOut {
				if jerr := a.printJSON(rep); jerr != nil {
					return jerr
				}
				return err
			}
			if rep.Backup != "" {
				fmt.Fprintf(a.out, "backup     %s\n", rep.Backup)
			}
			for _, r := range rep.BackupsRemoved {
				fmt.Fprintf(a.out, "removed    %s\n", r)
			}
			if opt.RetentionDays > 0 {
				fmt.Fprintf(a.out, "pruned     %d sessions older than %d days\n", rep.Pruned, opt.RetentionDays)
			}
			if rep.Vacuum != nil {
				if rep.Vacuum.Ran {
					fmt.Fprintf(a.out, "vacuumed   %.0f%% of the pages were free\n", 100*rep.Vacuum.FreeRatio)
				} else {
					fmt.Fprintf(a.out, "no vacuum  %.0f%% of the pages are free (needs more than 25%%)\n", 100*rep.Vacuum.FreeRatio)
				}
			}
			if rep.Checkpointed {
				fmt.Fprintln(a.out, "checkpoint WAL truncated")
			}
			return err
		},
	}
	c.Flags().IntVar(&opt.RetentionDays, "prune-days", 0, "prune ended, unpinned sessions inactive for more than N days (0: no prune)")
	c.Flags().BoolVar(&opt.Vacuum, "vacuum", false, "VACUUM when more than 25% of the pages are free")
	c.Flags().StringVar(&opt.BackupDir, "backup-dir", "", "write a VACUUM INTO snapshot into this directory first")
	c.Flags().IntVar(&opt.BackupKeep, "keep", 7, "snapshots to keep in --backup-dir")
	return c
}

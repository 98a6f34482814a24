package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/repo"
)

// Removing sessions: prune and delete.

// maxDays is the largest --older-than-days and --prune-days (a
// time.Duration holds about 292 years).
const maxDays = hs.MaxRetentionDays

func pruneCmd(a *app) *cobra.Command {
	var days float64
	var sources []string
	var opt repo.PruneOptions
	var vacuum bool
	c := &cobra.Command{
		Use:   "prune",
		Short: "Delete ended sessions inactive for N days (pinned chats and live compression chains kept)",
		Args:  cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if !(days > 0 && days <= maxDays) {
				return usagef(cmd, "--older-than-days must be more than 0 and at most %d (got %s)", maxDays, strconv.FormatFloat(days, 'f', -1, 64))
			}
			return nil
		},
		RunE: a.withStore(writes, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			ctx := cmd.Context()
			opt.OlderThan = time.Duration(days * float64(24*time.Hour))
			p, done := a.progress("prune")
			opt.Progress = p
			res := repo.PruneResult{IDs: []string{}, DryRun: opt.DryRun}
			for _, src := range orAll(splitList(sources)) {
				opt.Source = src
				r, err := st.Cleanup().Prune(ctx, opt)
				if err != nil {
					done()
					return err
				}
				res.IDs = append(res.IDs, r.IDs...)
				res.Deleted += r.Deleted
			}
			done()
			var vr *repo.VacuumResult
			if vacuum && !opt.DryRun && res.Deleted > 0 {
				v, err := st.Cleanup().Vacuum(ctx, false)
				if err != nil {
					return err
				}
				vr = &v
			}
			return a.emit(map[string]any{"prune": res, "vacuum": vr}, func(w io.Writer) error {
				verb := "deleted"
				if opt.DryRun {
					verb = "would delete"
				}
				fmt.Fprintf(w, "%s %s\n", verb, plural(int64(len(res.IDs)), "session", ""))
				if opt.DryRun && len(res.IDs) > 0 {
					fmt.Fprintf(w, "  %s\n", strings.Join(res.IDs, "\n  "))
				}
				if vr != nil && vr.Ran {
					fmt.Fprintf(w, "vacuumed (%.0f%% of the file was free)\n", vr.FreeRatio*100)
				}
				return nil
			})
		}),
	}
	c.Flags().Float64Var(&days, "older-than-days", 90, "inactivity threshold in days")
	sourceFlags(c, &sources, nil)
	c.Flags().BoolVar(&opt.DryRun, "dry-run", false, "list what would be deleted")
	c.Flags().BoolVar(&vacuum, "vacuum", true, "VACUUM afterwards when more than a quarter of the file is free")
	return c
}

func deleteCmd(a *app) *cobra.Command {
	var clear bool
	c := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a session with its messages and delegate runs (other children are kept, detached)",
		Args:  cobra.ExactArgs(1),
		RunE: a.withSession(writes, func(cmd *cobra.Command, st *hs.Store, id string, args []string) error {
			ctx := cmd.Context()
			if clear {
				n, err := st.Cleanup().ClearMessages(ctx, id)
				if err != nil {
					return err
				}
				return a.emit(map[string]any{"id": id, "messages_deleted": n}, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "cleared %s of %s\n", plural(n, "message", ""), id)
					return err
				})
			}
			ids, err := st.Cleanup().Delete(ctx, id)
			if err != nil {
				return err
			}
			return a.emit(map[string]any{"deleted": ids}, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "deleted %s\n", strings.Join(ids, ", "))
				return err
			})
		}),
	}
	c.Flags().BoolVar(&clear, "messages-only", false, "keep the session, delete its messages and usage")
	return c
}

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/hermesstate/hermesstate/repo"
)

func init() {
	commands = append(commands, ftsCmd)
}

func ftsCmd(a *app) *cobra.Command {
	c := &cobra.Command{Use: "fts", Short: "Maintain the full-text indexes (rebuild, integrity check)"}
	var chunk int
	var polite bool
	rebuild := &cobra.Command{
		Use:   "rebuild",
		Short: "Rebuild the FTS indexes in chunks (resumable; an old layout is converted to Hermes' current one)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			prog, finish := a.progress("fts rebuild")
			opt := repo.RebuildOptions{Chunk: chunk, Progress: prog}
			if polite {
				opt.Pause = func(ctx context.Context, cost float64) {
					d := max(200*time.Millisecond, time.Duration(4*cost*float64(time.Second)))
					select {
					case <-ctx.Done():
					case <-time.After(d):
					}
				}
			}
			err = st.Search().Rebuild(cmd.Context(), opt)
			finish()
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"ok": true})
			}
			fmt.Fprintln(a.out, "fts rebuild complete")
			return nil
		},
	}
	rebuild.Flags().IntVar(&chunk, "chunk", 500, "message ids per transaction")
	rebuild.Flags().BoolVar(&polite, "polite", false, "pause between chunks as Hermes does (max(0.2 s, 4 x chunk time)) so live writers get the lock")
	check := &cobra.Command{
		Use:   "check",
		Short: "Run FTS5 integrity-check on every index and verify the CJK index",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			res, err := st.Search().Check(cmd.Context())
			if err != nil {
				return err
			}
			bad := 0
			for _, r := range res {
				if !r.OK {
					bad++
				}
			}
			if a.jsonOut {
				if err := a.printJSON(res); err != nil {
					return err
				}
			} else {
				for _, r := range res {
					state := "ok"
					if !r.OK {
						state = "FAILED: " + r.Detail
					}
					fmt.Fprintf(a.out, "%-28s %s\n", r.Table, state)
				}
			}
			if bad > 0 {
				return errors.New(fmt.Sprint(bad, " index(es) failed the integrity check; run `hermes-state fts rebuild`"))
			}
			return nil
		},
	}
	c.AddCommand(rebuild, check)
	return c
}

package main

import (
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
)

// copyCmd copies a store (a SQLite file, Hermes-made ones included, or a
// PostgreSQL schema) into an empty PostgreSQL schema.
func copyCmd(a *app) *cobra.Command {
	var from, fromSchema, to, toSchema string
	var batch int
	c := &cobra.Command{
		Use:   "copy --from PATH_OR_DSN --to DSN",
		Short: "Copy a store (SQLite file or PostgreSQL schema) into an empty PostgreSQL schema, in one transaction",
		Long: `Copy every row of a store into an empty PostgreSQL schema: in batches, in one
transaction, message ids kept, row counts per table verified before the commit.
A SQLite source is read from a snapshot (VACUUM INTO a temporary file) and left
untouched; an old Hermes file is brought to schema v30 in the snapshot first.
A target with rows is refused.`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" {
				return usagef(cmd, "copy needs --from PATH_OR_DSN and --to DSN")
			}
			if !hs.IsPostgresDSN(to) {
				return usagef(cmd, "--to must be a postgres:// URL")
			}
			return atLeast(cmd, "batch", batch, 1)
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			a.elsewhere = true // errors name --from or --to, never --db
			if toSchema == "" {
				toSchema = a.schema
			}
			base := a.config()
			var src *hs.Store
			if hs.IsPostgresDSN(from) {
				cfg := base
				cfg.Path, cfg.DSN, cfg.Schema, cfg.ReadOnly = "", from, fromSchema, true
				st, err := hs.Open(ctx, cfg)
				if err != nil {
					return err
				}
				defer st.Close()
				src = st
			} else {
				st, cleanup, err := hs.OpenSnapshot(ctx, from, base)
				if err != nil {
					return err
				}
				defer cleanup()
				src = st
			}
			cfg := base
			cfg.Path, cfg.DSN, cfg.Schema, cfg.ReadOnly = "", to, toSchema, false
			dst, err := hs.Open(ctx, cfg)
			if err != nil {
				return err
			}
			defer dst.Close()

			opt := hs.CopyOptions{BatchRows: batch}
			progress, finish := a.stepProgress() // a bar per table
			opt.Progress = progress
			stats, err := hs.Copy(ctx, src, dst, opt)
			finish()
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.printJSON(map[string]any{"from": src.Location(), "to": dst.Location(), "rows": stats.Rows,
					"total": stats.Total, "seconds": stats.Elapsed.Seconds()})
			}
			w := a.text()
			defer w.Flush()
			fmt.Fprintf(w, "copied %d rows from %s to %s in %s\n", stats.Total, src.Location(), dst.Location(), stats.Elapsed.Round(time.Millisecond))
			tables := make([]string, 0, len(stats.Rows))
			for t := range stats.Rows {
				tables = append(tables, t)
			}
			sort.Strings(tables)
			for _, t := range tables {
				fmt.Fprintf(w, "  %-26s %d\n", t, stats.Rows[t])
			}
			return nil
		},
	}
	c.Flags().StringVar(&from, "from", "", "source: a SQLite file path or a postgres:// URL")
	c.Flags().StringVar(&fromSchema, "from-schema", "", "schema of a PostgreSQL source (default public)")
	c.Flags().StringVar(&to, "to", "", "target: a postgres:// URL (the schema must be empty or absent)")
	c.Flags().StringVar(&toSchema, "to-schema", "", "target schema (default --schema, else public)")
	c.Flags().IntVar(&batch, "batch", 500, "rows per INSERT")
	return c
}

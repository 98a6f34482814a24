package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/repo"
)

// The fts group: rebuild and check the full-text indexes.

func ftsCmd(a *app) *cobra.Command {
	c := &cobra.Command{Use: "fts", Short: "Maintain the full-text indexes (rebuild, integrity check)"}
	c.AddCommand(ftsRebuildCmd(a), ftsCheckCmd(a))
	return c
}

func ftsRebuildCmd(a *app) *cobra.Command {
	var chunk int
	var polite bool
	c := &cobra.Command{
		Use:     "rebuild",
		Short:   "Rebuild the FTS indexes in chunks (resumable; an old layout is converted to Hermes' current one)",
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error { return atLeast(cmd, "chunk", chunk, 1) },
		RunE: a.withStore(writes, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			prog, finish := a.progress("fts rebuild")
			opt := repo.RebuildOptions{Chunk: chunk, Progress: prog}
			if polite {
				opt.Pause = politePause
			}
			err := st.Search().Rebuild(cmd.Context(), opt)
			finish()
			if err != nil {
				return err
			}
			return a.emit(map[string]any{"ok": true}, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, "fts rebuild complete")
				return err
			})
		}),
	}
	c.Flags().IntVar(&chunk, "chunk", 500, "message ids per transaction")
	c.Flags().BoolVar(&polite, "polite", false, "pause between chunks as Hermes does (max(0.2 s, 4 x chunk time)) so live writers get the lock")
	return c
}

// politePause sleeps between rebuild chunks as Hermes does:
// max(0.2 s, 4 x the chunk's time).
func politePause(ctx context.Context, cost float64) {
	d := max(200*time.Millisecond, time.Duration(4*cost*float64(time.Second)))
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

func ftsCheckCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "check",
		Short: "Run FTS5 integrity-check on every index and verify the CJK index, without changing the file",
		Long: `check runs FTS5 integrity-check on every full-text index (an external-content one
against its content) and verifies hermesstate's CJK index. It changes nothing: no
adoption, no journal-mode switch; SQLite runs integrity-check as a write, so it runs
in a transaction that is rolled back. A trigram index that SQLite before 3.45 wrote
(Hermes writes with 3.40.1; that tokenizer stopped at U+0000) is reported ok when it
is exactly what that SQLite produced.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.checkFlags(); err != nil {
				return err
			}
			res, err := hs.CheckFTS(cmd.Context(), a.config())
			if err != nil {
				return err
			}
			bad := 0
			for _, r := range res {
				if !r.OK {
					bad++
				}
			}
			if err := a.emit(res, func(w io.Writer) error {
				for _, r := range res {
					state := "ok"
					if !r.OK {
						state = "FAILED: " + r.Detail
					}
					fmt.Fprintf(w, "%-28s %s\n", r.Table, state)
				}
				return nil
			}); err != nil {
				return err
			}
			if bad > 0 {
				return errors.New(plural(int64(bad), "index", "indexes") + " failed the integrity check; run " + sqlitex.Command(a.dbPath, "fts", "rebuild"))
			}
			return nil
		},
	}
}

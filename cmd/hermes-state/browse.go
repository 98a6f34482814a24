package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/browse"
)

// processStart is taken when this package initialises (after the Go
// runtime and the libraries), for --startup-time.
var processStart = time.Now()

func browseCmd(a *app) *cobra.Command {
	var (
		source, exportDir, format string
		startup                   bool
	)
	c := &cobra.Command{
		Use:   "browse",
		Short: "Browse sessions in the terminal: list, search as you type, read conversations",
		Long: `Browse sessions in the terminal.

The store is opened read-only: browsing, searching and exporting never change
it. Setting a title (ctrl+t / t) opens it writable for that one write, and is
refused with a message when the file has not been upgraded by hermes-state yet
(run 'hermes-state migrate' first).

Session list (typing goes to the search box; results appear as you type):
  ↑/↓ pgup/pgdn   move            tab / shift+tab   next / previous source
  enter           open session    ctrl+y            copy the session id (OSC 52)
  ctrl+e          export session  ctrl+t            set the title
  esc             clear the search, or quit        ctrl+c   quit

Conversation:
  ↑/↓ j/k  scroll a line    pgup/pgdn space/b  scroll a page    g/G  top/end
  n/p      next/previous message                f    fold/unfold tool calls
  y copy id   e export   t title   q/esc back to the list`,
		Args: cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := oneOf(cmd, "format", format, "md", "jsonl"); err != nil {
				return err
			}
			if !term.IsTerminal(int(os.Stdout.Fd())) || !term.IsTerminal(int(os.Stdin.Fd())) {
				return invalidf("browse needs a terminal; for scripts use 'sessions list', 'search' or 'export'")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			st, err := a.openRead(ctx)
			if err != nil {
				return err
			}
			var (
				painted time.Time
				cpu     time.Duration
			)
			opt := browse.Options{
				Store: st, Location: st.Location(), Source: source, ExportDir: exportDir, ExportFormat: format,
				SetTitle: func(ctx context.Context, id, title string) error {
					cfg := a.config()
					cfg.ReadOnly, cfg.MustExist = false, true
					w, err := hs.Open(ctx, cfg)
					if err != nil {
						return err
					}
					_, err = w.Titles().Set(ctx, id, title)
					if cerr := w.Close(); err == nil {
						err = cerr
					}
					return err
				},
				TitleCheck: func(ctx context.Context) error {
					pending, err := st.MigrationsPending(ctx)
					if err != nil {
						return err
					}
					if len(pending) > 0 {
						return errors.New("not upgraded by hermes-state yet: it is read as it is, and a title cannot be set before 'hermes-state migrate' upgrades it")
					}
					return nil
				},
				FirstPaint: func(t time.Time) { painted, cpu = t, cpuTime() },
			}
			if err := browse.Run(ctx, opt); err != nil {
				return err
			}
			if startup && !painted.IsZero() {
				fmt.Fprintf(a.errOut, "first paint of the session list: %.1f ms after main package init, CPU time since exec %.1f ms, at unix %.6f\n",
					float64(painted.Sub(processStart).Microseconds())/1000, float64(cpu.Microseconds())/1000,
					float64(painted.UnixMicro())/1e6)
			}
			return nil
		},
	}
	c.Flags().StringVar(&source, "source", "", "start with this source selected (cli, telegram, ...)")
	c.Flags().StringVar(&exportDir, "export-dir", ".", "directory that exported sessions are written to")
	c.Flags().StringVar(&format, "format", "md", "export format: md or jsonl")
	c.Flags().BoolVar(&startup, "startup-time", false, "on exit, print when the list was first painted (for measurements)")
	return c
}

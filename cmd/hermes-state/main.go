// Command hermes-state inspects, searches, exports and repairs a Hermes
// state.db (or a PostgreSQL store) through the hermesstate library.
//
// Each subcommand lives in its own file; they use only the root package's
// public API, like any other user of the library.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
)

// app holds the global flags and the lazily opened store.
type app struct {
	dbPath      string
	schema      string
	journalMode string
	jsonOut     bool
	verbose     bool
	readOnly    bool
	out         io.Writer
	errOut      io.Writer
	store       *hs.Store
}

func (a *app) config() hs.Config {
	lvl := slog.LevelWarn
	if a.verbose {
		lvl = slog.LevelDebug
	}
	cfg := hs.Config{
		Path:        a.dbPath,
		ReadOnly:    a.readOnly,
		JournalMode: hs.JournalMode(strings.ToLower(strings.TrimSpace(a.journalMode))),
		Logger:      slog.New(slog.NewTextHandler(a.errOut, &slog.HandlerOptions{Level: lvl})),
	}
	if hs.IsPostgresDSN(a.dbPath) {
		cfg.Path, cfg.DSN, cfg.Schema = "", a.dbPath, a.schema
	}
	return cfg
}

// checkFlags validates the global flags.
func (a *app) checkFlags() error {
	if a.schema != "" && !hs.IsPostgresDSN(a.dbPath) {
		return fmt.Errorf("--schema applies to a PostgreSQL store: give --db a postgres:// URL (%w)", hs.ErrInvalid)
	}
	switch strings.ToLower(strings.TrimSpace(a.journalMode)) {
	case "", "wal", "delete":
	default:
		return fmt.Errorf("--journal-mode must be wal or delete, not %q (%w)", a.journalMode, hs.ErrInvalid)
	}
	return nil
}

// openRead opens the store for a command that only reads: read-only (the
// file is opened with SQLite's mode=ro: no migration, no journal-mode
// switch, no chmod, no write of any kind; a missing file is refused).
func (a *app) openRead(ctx context.Context) (*hs.Store, error) {
	if a.store == nil {
		a.readOnly = true
	}
	return a.open(ctx)
}

// open opens the store once per process (writable unless a read command
// asked for read-only with openRead).
func (a *app) open(ctx context.Context) (*hs.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	if err := a.checkFlags(); err != nil {
		return nil, err
	}
	st, err := hs.Open(ctx, a.config())
	if err != nil {
		return nil, err
	}
	a.store = st
	return st, nil
}

func (a *app) close() {
	if a.store != nil {
		_ = a.store.Close()
		a.store = nil
	}
}

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// commands registered by the files of this package (init functions).
var commands []func(a *app) *cobra.Command

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "hermes-state",
		Short:         "Inspect, search, export and repair a Hermes state.db",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&a.dbPath, "db", "", "state database: a SQLite file path (default $HERMES_HOME/state.db, else ~/.hermes/state.db) or a postgres:// URL")
	root.PersistentFlags().StringVar(&a.schema, "schema", "", "PostgreSQL schema holding the store (with a postgres:// --db; default public)")
	root.PersistentFlags().StringVar(&a.journalMode, "journal-mode", "", "SQLite journal mode commands that write keep or set: wal or delete (for network filesystems); default: wal for new files and writes, and doctor/repair leave a file's own mode alone")
	root.PersistentFlags().BoolVar(&a.jsonOut, "json", false, "print data as JSON")
	root.PersistentFlags().BoolVarP(&a.verbose, "verbose", "v", false, "log debug details to stderr")
	for _, c := range commands {
		root.AddCommand(c(a))
	}
	return root
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	a := &app{out: os.Stdout, errOut: os.Stderr}
	err := newRoot(a).ExecuteContext(ctx)
	a.close()
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hermes-state: "+oneLine(err))
		os.Exit(exitCode(err))
	}
}

// exitCode maps errors to exit statuses: 1 generic, 2 usage/invalid, 3 not
// found, 4 conflict, 5 busy, 6 corrupt.
func exitCode(err error) int {
	switch {
	case errors.Is(err, hs.ErrInvalid):
		return 2
	case errors.Is(err, hs.ErrNotFound):
		return 3
	case errors.Is(err, hs.ErrConflict):
		return 4
	case errors.Is(err, hs.ErrBusy):
		return 5
	case errors.Is(err, hs.ErrCorrupt):
		return 6
	}
	return 1
}

func oneLine(err error) string {
	s := err.Error()
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

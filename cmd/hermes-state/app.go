package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/termtext"
	"github.com/hermesstate/hermesstate/repo"
)

// app holds the global flags, the output streams and the store a command
// opened (at most one per process; main closes it).
type app struct {
	dbPath      string
	schema      string
	readDBs     []string
	journalMode string
	engine      string
	jsonOut     bool
	verbose     bool
	readOnly    bool
	out         io.Writer
	errOut      io.Writer
	store       *hs.Store
	// serving is set by a command that serves until it is stopped (mcp):
	// a signal ends it normally, and main keeps its exit status.
	serving bool
	// elsewhere is set by a command whose files are not --db's (copy,
	// recover): its errors name their own file, and the CLI does not put
	// --db's (or the default store's) path in front of them.
	elsewhere bool
}

// config is the store configuration the global flags describe.
func (a *app) config() hs.Config {
	lvl := slog.LevelWarn
	if a.verbose {
		lvl = slog.LevelDebug
	}
	cfg := hs.Config{
		Path:        a.dbPath,
		Engine:      a.engine,
		ReadOnly:    a.readOnly,
		JournalMode: hs.JournalMode(strings.ToLower(strings.TrimSpace(a.journalMode))),
		Logger:      slog.New(slog.NewTextHandler(a.errOut, &slog.HandlerOptions{Level: lvl})),
	}
	if hs.IsPostgresDSN(a.dbPath) {
		cfg.Path, cfg.DSN, cfg.Schema = "", a.dbPath, a.schema
		cfg.ReadDSNs = a.readDBs
	}
	return cfg
}

// location names the store for messages: where it was opened, else what
// --db (or the default path) says.
func (a *app) location() string {
	switch {
	case a.store != nil:
		return a.store.Location()
	case hs.IsPostgresDSN(a.dbPath):
		return "the PostgreSQL store"
	case a.dbPath != "":
		return a.dbPath
	}
	return hs.DefaultPath()
}

// checkFlags validates the global flags.
func (a *app) checkFlags() error {
	if a.schema != "" && !hs.IsPostgresDSN(a.dbPath) {
		return invalidf("--schema applies to a PostgreSQL store: give --db a postgres:// URL")
	}
	if len(a.readDBs) > 0 && !hs.IsPostgresDSN(a.dbPath) {
		return invalidf("--read-db applies to a PostgreSQL store: give --db the primary's postgres:// URL")
	}
	switch strings.ToLower(strings.TrimSpace(a.journalMode)) {
	case "", "wal", "delete":
	default:
		return invalidf("--journal-mode must be wal or delete, not %q", a.journalMode)
	}
	return a.config().Validate() // --schema: a plain name, not a system schema
}

// access says how a command opens the store.
type access int

const (
	// reads: read-only (SQLite mode=ro: no migration, no journal-mode
	// switch, no chmod, no write of any kind; a missing store is refused).
	reads access = iota
	// writes: writable; an older Hermes file is adopted, but a missing or
	// empty (0-byte) store is refused ("no store at PATH", exit 3) like a
	// read: a mistyped --db never becomes a new empty store.
	writes
	// creates: writable, and a missing store is created (demo, migrate,
	// import).
	creates
)

// openRead opens the store for a command that only reads (see reads).
func (a *app) openRead(ctx context.Context) (*hs.Store, error) {
	return a.openAs(ctx, reads)
}

// open opens an existing store writable (see writes).
func (a *app) open(ctx context.Context) (*hs.Store, error) {
	return a.openAs(ctx, writes)
}

// openAs opens the store once per process; the first open decides the
// access.
func (a *app) openAs(ctx context.Context, mode access) (*hs.Store, error) {
	if a.store != nil {
		return a.store, nil
	}
	if mode == reads {
		a.readOnly = true
	}
	if err := a.checkFlags(); err != nil {
		return nil, err
	}
	cfg := a.config()
	cfg.MustExist = mode != creates
	st, err := hs.Open(ctx, cfg)
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

// storeRun is the body of a command that works on the store.
type storeRun func(cmd *cobra.Command, st *hs.Store, args []string) error

// withStore is the RunE of a command that opens the store (read-only for
// reads, writable for writes and creates), runs fn on it and leaves
// closing to main.
// Flag checks that need no store belong in the command's PreRunE, so that
// they answer before anything is opened.
func (a *app) withStore(mode access, fn storeRun) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		st, err := a.openAs(cmd.Context(), mode)
		if err != nil {
			return err
		}
		return fn(cmd, st, args)
	}
}

// sessionRun is the body of a command about one session.
type sessionRun func(cmd *cobra.Command, st *hs.Store, id string, args []string) error

// withSession is withStore for a command whose first argument names a
// session by its id or a unique prefix of it: fn gets the full id (a
// prefix that matches nothing is ErrNotFound, several ErrConflict).
func (a *app) withSession(mode access, fn sessionRun) func(*cobra.Command, []string) error {
	return a.withStore(mode, func(cmd *cobra.Command, st *hs.Store, args []string) error {
		id, err := st.Lineage().ResolveID(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		return fn(cmd, st, id, args)
	})
}

// emit prints a command's result: v as JSON with --json (the stored
// bytes kept, JSON-escaped), else what text writes, through a.text.
func (a *app) emit(v any, text func(w io.Writer) error) error {
	if a.jsonOut {
		return a.printJSON(v)
	}
	w := a.text()
	if err := text(w); err != nil {
		return err
	}
	return w.Flush()
}

// text is the writer of every human-readable output (tables, reports,
// Markdown): a.out through termtext, which neutralises terminal control
// characters and bidi controls of stored text (stored content is hostile:
// an escape sequence in a message must not recolour the terminal or set
// its title). Flush it when done. JSON and JSONL go to a.out as they are.
func (a *app) text() *termtext.Writer { return termtext.NewWriter(a.out) }

// printJSON writes v as indented JSON.
func (a *app) printJSON(v any) error {
	enc := json.NewEncoder(a.out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// terminal returns stderr when it is a terminal (progress bars go there).
func (a *app) terminal() (*os.File, bool) {
	f, ok := a.errOut.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil, false
	}
	return f, true
}

// progress returns a progress callback drawing a bar on stderr, or nil
// when stderr is not a terminal.
func (a *app) progress(what string) (repo.Progress, func()) {
	f, ok := a.terminal()
	if !ok {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
			if bar == nil {
				if total <= 0 {
					total = -1
				}
				bar = newBar(f, total, what)
			}
			_ = bar.Set64(done)
		}, func() {
			if bar != nil {
				_ = bar.Finish()
			}
		}
}

// newBar is the progress bar every command draws.
func newBar(f *os.File, total int64, what string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
}

// stepProgress turns the library's (step, done, total) callback into one
// progress bar per step on stderr (only when stderr is a terminal).
func (a *app) stepProgress() (func(step string, done, total int64), func()) {
	if _, ok := a.terminal(); !ok {
		return nil, func() {} // nil: the library need not count totals
	}
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

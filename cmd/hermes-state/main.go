// Command hermes-state inspects, searches, exports and repairs a Hermes
// state.db (or a PostgreSQL store) through the hermesstate library.
//
// Each command group lives in its own file (sessions.go, search.go,
// health.go, ...) and uses only the root package's public API, like any
// other user of the library. newRoot lists every command; app.go holds the
// store handling shared by all (withStore), errors.go the exit statuses and
// how errors are said.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/termtext"
)

// newRoot builds the command tree: every command, in the order of the
// README's CLI guide.
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "hermes-state",
		Short:         "Inspect, search, export and repair a Hermes state.db",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --db given but empty would otherwise mean the default store:
		// a script whose variable is unset must not read or write
		// ~/.hermes/state.db by accident.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("db") && strings.TrimSpace(a.dbPath) == "" {
				return usagef(cmd, "--db is empty: give a SQLite file path or a postgres:// URL, or leave --db out for the default store")
			}
			return nil
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.dbPath, "db", "", "state database: a SQLite file path (default $HERMES_HOME/state.db, else ~/.hermes/state.db) or a postgres:// URL")
	pf.StringVar(&a.schema, "schema", "", "PostgreSQL schema holding the store (with a postgres:// --db; default public)")
	pf.StringSliceVar(&a.readDBs, "read-db", nil, "PostgreSQL read replica (a hot standby's postgres:// URL; repeat or comma-separate for several): listings, search, export, browse and MCP read there while it has replayed this process's writes, else from --db")
	pf.StringVar(&a.journalMode, "journal-mode", "", "SQLite journal mode commands that write keep or set: wal or delete (for network filesystems); default: wal for new files and writes, and doctor/repair leave a file's own mode alone")
	pf.StringVar(&a.engine, "engine", "", "SQLite engine: go (pure Go, every build) or c (C SQLite, a build with cgo and -tags sqlite_fts5); default $"+hs.EngineEnv+", else "+hs.DefaultEngine()+" in this build")
	pf.BoolVar(&a.jsonOut, "json", false, "print data as JSON")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "log debug details to stderr (search: also its route)")
	root.AddCommand(
		demoCmd(a),
		migrateCmd(a),
		sessionsCmd(a),
		messagesCmd(a),
		searchCmd(a),
		ftsCmd(a),
		statsCmd(a),
		exportCmd(a),
		importCmd(a),
		backupCmd(a),
		pruneCmd(a),
		deleteCmd(a),
		doctorCmd(a),
		repairCmd(a),
		recoverCmd(a),
		maintainCmd(a),
		copyCmd(a),
		stressCmd(a),
		stressWorkerCmd(a),
		benchCmd(a),
		benchWorkerCmd(a),
		mcpCmd(a),
		browseCmd(a),
		serveCmd(a),
		versionCmd(a),
	)
	usageErrors(root)
	return root
}

// execute runs the command line args, prints a failure on a.errOut and
// returns the exit status.
func execute(ctx context.Context, a *app, args []string) int {
	root := newRoot(a)
	root.SetArgs(args)
	root.SetOut(a.out)
	root.SetErr(a.errOut)
	err := root.ExecuteContext(ctx)
	if err != nil {
		msg := a.errorText(err)
		if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			msg = "interrupted; nothing more was done"
		}
		fmt.Fprintln(a.errOut, "hermes-state: "+termtext.Clean(msg))
	}
	a.close()
	return exitCode(err)
}

// main runs the command line. SIGINT or SIGTERM cancels the command's
// context (every read and write stops at once; a write in flight is rolled
// back) and the process exits 128 + the signal's number (130 for SIGINT,
// 143 for SIGTERM), whatever the command returned, so a script never takes
// an interrupted command's partial output for its answer; only a server
// (mcp), which a signal is the normal way to stop, exits as it returns. A
// second signal kills the process the default way.
func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	var got atomic.Int32
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		if n, isSys := s.(syscall.Signal); isSys {
			got.Store(int32(n))
		}
		signal.Reset(os.Interrupt, syscall.SIGTERM)
		cancel()
	}()
	a := &app{out: os.Stdout, errOut: os.Stderr}
	code := execute(ctx, a, os.Args[1:])
	signal.Stop(sigs)
	cancel()
	if n := got.Load(); n != 0 && !a.serving {
		code = 128 + int(n)
	}
	os.Exit(code)
}

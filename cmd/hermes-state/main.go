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
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
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
	pf.StringVar(&a.journalMode, "journal-mode", "", "SQLite journal mode commands that write keep or set: wal or delete (for network filesystems); default: wal for new files and writes, and doctor/repair leave a file's own mode alone")
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
		fmt.Fprintln(a.errOut, "hermes-state: "+a.errorText(err))
	}
	a.close()
	return exitCode(err)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, &app{out: os.Stdout, errOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/migrations"
)

// The migrate command: adopt or upgrade the store and say its version.

func migrateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Bring the store to the current schema (Open does this too) and report the version",
		Args:  cobra.NoArgs,
		RunE: a.withStore(creates, func(cmd *cobra.Command, st *hs.Store, _ []string) error {
			v, err := st.SchemaVersion(cmd.Context())
			if err != nil {
				return err
			}
			pending, err := st.MigrationsPending(cmd.Context())
			if err != nil {
				return err
			}
			if err := a.emit(map[string]any{"path": st.Path(), "location": st.Location(), "driver": st.Driver(), "schema_version": v,
				"pending": pending, "sqlite_version": st.SQLiteVersion(), "journal_mode": st.JournalMode(),
				"server_version": st.ServerVersion(), "newer_schema": st.NewerSchema() > 0}, func(w io.Writer) error {
				if _, err := fmt.Fprintf(w, "%s: Hermes schema version %d, %s pending, %s\n", st.Location(), v, plural(int64(len(pending)), "migration", ""), st.Engine()); err != nil {
					return err
				}
				if a.verbose {
					return printSteps(w, pending)
				}
				return nil
			}); err != nil {
				return err
			}
			if n := st.NewerSchema(); n > 0 {
				return failf(hs.ErrUnsupported, "%s has Hermes schema version %d, newer than %d: it was not migrated (nothing was changed); upgrade hermes-state to write to it", st.Location(), n, hs.HermesSchemaVersion)
			}
			return nil
		}),
	}
}

// printSteps lists every migration step of this build with its state in the
// store (applied or pending) and its one-line description (migrate -v).
func printSteps(w io.Writer, pending []string) error {
	for _, m := range migrations.List() {
		state := "applied"
		if slices.Contains(pending, m.ID) {
			state = "pending"
		}
		if _, err := fmt.Fprintf(w, "  %-42s %-7s %s\n", m.ID, state, m.Description); err != nil {
			return err
		}
	}
	return nil
}

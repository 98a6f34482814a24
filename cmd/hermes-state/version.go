package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	hs "github.com/hermesstate/hermesstate"
)

// versionCmd prints what this build is; it opens no store.
func versionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print hermes-state's version, the Hermes schema version it writes, its SQLite and Go versions",
		Long: "version prints hermes-state's version, the Hermes schema version it writes, the SQLite of the engine\n" +
			"the other commands would use (--engine, else " + hs.EngineEnv + ", else the build's default), the engines\n" +
			"compiled in and the Go version. --engine c in a build without the C engine fails as every command does.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := hs.BuildInfoFor(cmd.Context(), a.engine)
			if err != nil {
				return err
			}
			return a.emit(b, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "hermes-state  %s\nHermes schema %d (written; newer files are opened read-only)\nSQLite        %s, engine %s: %s\nEngines       %s (default %s; --engine or %s picks one)\nGo            %s %s\n",
					b.Version, b.SchemaVersion, b.SQLiteVersion, b.Engine, b.SQLiteEngine, strings.Join(b.Engines, ", "), b.DefaultEngine, hs.EngineEnv, b.GoVersion, b.Platform)
				return err
			})
		},
	}
}

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
)

// `hermes-state version` says the build's version, the schema version it
// writes, the linked SQLite and the Go toolchain, and opens no store.
func TestCLIVersion(t *testing.T) {
	nowhere := filepath.Join(t.TempDir(), "missing", "state.db")
	out, err := run(t, "--db", nowhere, "version")
	require.NoError(t, err)
	st, err := hs.Open(context.Background(), hs.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	require.NoError(t, err)
	sqliteVersion, engine := st.SQLiteVersion(), st.SQLiteEngine()
	require.NoError(t, st.Close())
	require.Regexp(t, `(?m)^hermes-state  \S+`, out)
	require.Contains(t, out, "Hermes schema 30 ")
	libs := map[string]string{hs.EngineGo: "modernc.org/sqlite", hs.EngineC: "github.com/mattn/go-sqlite3"}
	// The SQLite of the engine the other commands use (a store opened
	// with the same environment: HERMES_STATE_ENGINE, else the default).
	require.Contains(t, out, "SQLite        "+sqliteVersion+", engine "+engine+": "+libs[engine])
	require.Contains(t, out, "Engines       "+strings.Join(hs.Engines(), ", ")+" (default "+hs.DefaultEngine()+";")
	require.Contains(t, out, "Go            "+runtime.Version())
	require.NoFileExists(t, nowhere)

	out, err = run(t, "--json", "version")
	require.NoError(t, err)
	var b map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &b))
	require.EqualValues(t, 30, b["schema_version"])
	require.Equal(t, sqliteVersion, b["sqlite_version"])
	require.Equal(t, runtime.Version(), b["go_version"])
	require.Equal(t, engine, b["engine"])
	require.NotEmpty(t, b["version"])

	// --engine picks the engine version describes, as for every command;
	// one this build lacks fails the same way (exit 1, the build command),
	// an unknown one is a usage error.
	for _, name := range []string{hs.EngineGo, hs.EngineC} {
		out, errOut, code := runCLI(t, "--engine", name, "--json", "version")
		if !slices.Contains(hs.Engines(), name) {
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, hs.EngineBuildCommand)
			continue
		}
		require.Equal(t, 0, code, errOut)
		var b map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &b))
		require.Equal(t, name, b["engine"])
		require.Contains(t, b["sqlite_engine"], libs[name])
	}
	_, errOut, code := runCLI(t, "--engine", "sqlite", "version")
	require.Equal(t, 2, code, errOut)
}

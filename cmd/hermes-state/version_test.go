package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
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
	sqliteVersion := st.SQLiteVersion()
	require.NoError(t, st.Close())
	require.Regexp(t, `(?m)^hermes-state  \S+`, out)
	require.Contains(t, out, "Hermes schema 30 ")
	lib := map[string]string{hs.EngineGo: "modernc.org/sqlite", hs.EngineC: "github.com/mattn/go-sqlite3"}[hs.DefaultEngine()]
	require.Contains(t, out, "SQLite        "+sqliteVersion+", "+lib)
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
	require.NotEmpty(t, b["version"])
}

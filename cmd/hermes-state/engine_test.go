package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
)

// TestCLIEngineFlag: --engine picks the engine of the store; c in a build
// without it fails (exit 1) with the build command and creates nothing; an
// unknown engine is a usage error (exit 2).
func TestCLIEngineFlag(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{hs.EngineGo, hs.EngineC} {
		db := filepath.Join(dir, name+".db")
		out, errOut, code := runCLI(t, "--db", db, "--engine", name, "demo")
		if !slices.Contains(hs.Engines(), name) {
			require.Equal(t, 1, code, errOut)
			require.Contains(t, errOut, hs.EngineBuildCommand)
			require.NoFileExists(t, db)
			continue
		}
		require.Equal(t, 0, code, errOut)
		require.Contains(t, out, "("+name+" engine)")
		out, errOut, code = runCLI(t, "--db", db, "--engine", name, "search", "kubectl")
		require.Equal(t, 0, code, errOut)
		require.NotEmpty(t, out)
	}
	db := filepath.Join(dir, "x.db")
	_, errOut, code := runCLI(t, "--db", db, "--engine", "sqlite", "demo")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, `"sqlite" (go or c)`)
	require.NoFileExists(t, db)
}

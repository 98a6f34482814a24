package hermesstate

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// BuildInfo names the SQLite a store opened by this build links (the
// version Open reports), the schema version it writes and the Go version.
func TestBuildInfo(t *testing.T) {
	ctx := context.Background()
	b, err := BuildInfo(ctx)
	require.NoError(t, err)
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "state.db")})
	require.NoError(t, err)
	defer st.Close()
	require.Equal(t, st.SQLiteVersion(), b.SQLiteVersion)
	require.Regexp(t, `^3\.\d+\.\d+$`, b.SQLiteVersion)
	require.Contains(t, b.SQLiteEngine, map[string]string{EngineGo: "modernc.org/sqlite", EngineC: "github.com/mattn/go-sqlite3"}[DefaultEngine()])
	require.Equal(t, Engines(), b.Engines)
	require.Equal(t, DefaultEngine(), b.DefaultEngine)
	require.Equal(t, HermesSchemaVersion, b.SchemaVersion)
	require.Equal(t, runtime.Version(), b.GoVersion)
	require.Equal(t, runtime.GOOS+"/"+runtime.GOARCH, b.Platform)
	require.NotEmpty(t, b.Version)
}

// BuildInfoFor describes the engine asked for, refuses one this build
// lacks with ErrUnsupported and the build command, and an unknown name
// with ErrInvalid.
func TestBuildInfoFor(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{EngineGo, EngineC} {
		b, err := BuildInfoFor(ctx, name)
		if !slices.Contains(Engines(), name) {
			require.ErrorIs(t, err, ErrUnsupported)
			require.Contains(t, err.Error(), EngineBuildCommand)
			require.Empty(t, b.SQLiteVersion)
			require.Equal(t, HermesSchemaVersion, b.SchemaVersion)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, name, b.Engine)
		require.Contains(t, b.SQLiteEngine, map[string]string{EngineGo: "modernc.org/sqlite", EngineC: "github.com/mattn/go-sqlite3"}[name])
		require.Regexp(t, `^3\.\d+\.\d+$`, b.SQLiteVersion)
	}
	_, err := BuildInfoFor(ctx, "sqlite")
	require.ErrorIs(t, err, ErrInvalid)
	b, err := BuildInfo(ctx)
	require.NoError(t, err)
	require.Equal(t, DefaultEngine(), b.Engine)
}

// The version comes from the build info: a release's module version, else
// "devel" with the VCS revision when the build recorded one.
func TestVersionFromBuildInfo(t *testing.T) {
	for _, c := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, "devel+0123456789ab.dirty"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261204120000-0123456789ab+dirty"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}}}, "v0.0.0-20261204120000-0123456789ab+dirty"},
	} {
		require.Equal(t, c.want, versionOf(c.bi).Version)
	}
}

// The engine line names the module versions the binary was built with.
func TestSQLiteEngineVersions(t *testing.T) {
	bi := &debug.BuildInfo{Deps: []*debug.Module{{Path: "modernc.org/sqlite", Version: "v1.62.0"},
		{Path: "github.com/glebarez/go-sqlite", Version: "v1.23.0", Replace: &debug.Module{Version: "v1.23.1"}}}}
	e := sqliteEngine(bi, sqlitex.GoEngine)
	require.Contains(t, e, "modernc.org/sqlite v1.62.0")
	require.Contains(t, e, "github.com/glebarez/go-sqlite v1.23.1")
}

package hermesstate

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/hermesstate/hermesstate/internal/errtext"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// Build describes this build of hermesstate: what `hermes-state version`
// prints and what the MCP server reports as its version.
type Build struct {
	// Version is the module version of the running binary (a release tag
	// or Go's pseudo-version), else "devel", with "+REVISION" (and
	// ".dirty" for uncommitted changes) when the build recorded its VCS
	// revision.
	Version string `json:"version"`
	// Revision and Modified are the VCS state the build recorded, if any.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// SchemaVersion is the Hermes schema version written (and the newest
	// read read-write): HermesSchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Engine is the engine the SQLite fields describe: the build's default
	// (BuildInfo) or the one asked for (BuildInfoFor). SQLiteVersion is
	// sqlite_version() of its SQLite library, SQLiteEngine the library
	// that provides it and how.
	Engine        string `json:"engine"`
	SQLiteVersion string `json:"sqlite_version"`
	SQLiteEngine  string `json:"sqlite_engine"`
	// Engines are the SQLite engines compiled in (Config.Engine: "go",
	// and "c" in a build with cgo and the tag sqlite_fts5), DefaultEngine
	// the one a configuration that names none gets (HERMES_STATE_ENGINE
	// aside).
	Engines       []string `json:"engines"`
	DefaultEngine string   `json:"default_engine"`
	// GoVersion and Platform are the toolchain and GOOS/GOARCH built for.
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

// BuildInfo returns what this build is: its version, the Hermes schema
// version it writes, the SQLite it links and the Go toolchain. It asks an
// in-memory SQLite database for its version; when that fails the Build
// returned has everything else and the error wraps ErrStorage.
func BuildInfo(ctx context.Context) (Build, error) {
	return buildInfo(ctx, sqlitex.Default())
}

// BuildInfoFor is BuildInfo with the SQLite fields of the engine named
// engine, chosen as Config.Engine chooses ("" is HERMES_STATE_ENGINE, else
// the build's default). An engine this build lacks is an error wrapping
// ErrUnsupported that names the build command, an unknown name one
// wrapping ErrInvalid; the Build returned then has no SQLite fields.
func BuildInfoFor(ctx context.Context, engine string) (Build, error) {
	e, err := Config{Engine: engine}.engine()
	if err != nil {
		b, _ := buildInfo(ctx, nil)
		return b, err
	}
	return buildInfo(ctx, e)
}

// buildInfo fills a Build; with e nil it leaves the SQLite fields empty.
func buildInfo(ctx context.Context, e *sqlitex.Engine) (Build, error) {
	bi, _ := debug.ReadBuildInfo()
	b := versionOf(bi)
	b.SchemaVersion = HermesSchemaVersion
	b.GoVersion = runtime.Version()
	b.Platform = runtime.GOOS + "/" + runtime.GOARCH
	b.Engines, b.DefaultEngine = Engines(), sqlitex.Default().Name()
	if e == nil {
		return b, nil
	}
	b.Engine = e.Name()
	b.SQLiteEngine = sqliteEngine(bi, e)
	v, err := linkedSQLiteVersion(ctx, e)
	if err != nil {
		return b, errtext.Storage("version", err, "cannot ask SQLite for its version", "")
	}
	b.SQLiteVersion = v
	return b, nil
}

// versionOf reads the version and VCS state from the build info (nil when
// the binary carries none).
func versionOf(bi *debug.BuildInfo) Build {
	b := Build{Version: "devel"}
	if bi == nil {
		return b
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
		return b
	}
	if b.Revision != "" {
		b.Version += "+" + b.Revision[:min(12, len(b.Revision))]
		if b.Modified {
			b.Version += ".dirty"
		}
	}
	return b
}

// sqliteEngine names the SQLite library linked in and its module versions.
func sqliteEngine(bi *debug.BuildInfo, e *sqlitex.Engine) string {
	ver := func(path string) string {
		if bi != nil {
			for _, d := range bi.Deps {
				if d.Path == path {
					if d.Replace != nil {
						return d.Replace.Version
					}
					return d.Version
				}
			}
		}
		return "(version unknown)"
	}
	if e.Name() == sqlitex.EngineC {
		return fmt.Sprintf("github.com/mattn/go-sqlite3 %s (SQLite's C library through cgo, FTS5 by the tag sqlite_fts5) under gorm.io/driver/sqlite %s",
			ver("github.com/mattn/go-sqlite3"), ver("gorm.io/driver/sqlite"))
	}
	return fmt.Sprintf("modernc.org/sqlite %s through github.com/glebarez/go-sqlite %s (SQLite's C translated to Go, no cgo)",
		ver("modernc.org/sqlite"), ver("github.com/glebarez/go-sqlite"))
}

// linkedSQLiteVersion asks an in-memory database of engine e.
func linkedSQLiteVersion(ctx context.Context, e *sqlitex.Engine) (string, error) {
	db, err := e.OpenDB(":memory:")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&v); err != nil {
		return "", err
	}
	return strings.TrimSpace(v), nil
}

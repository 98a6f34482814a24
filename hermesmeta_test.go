package hermesstate_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/migrations"
)

// fileStamps reads db_file_generation, fts_storage_version and
// PRAGMA application_id of path.
func fileStamps(t *testing.T, path string) (token, ftsVersion string, app int64) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	defer db.Close()
	_ = db.QueryRow("SELECT value FROM state_meta WHERE key = 'db_file_generation'").Scan(&token)
	_ = db.QueryRow("SELECT value FROM state_meta WHERE key = 'fts_storage_version'").Scan(&ftsVersion)
	require.NoError(t, db.QueryRow("PRAGMA application_id").Scan(&app))
	return token, ftsVersion, app
}

// TestStoreWritesHermesFileStamps (issue 20 §4): a store hermesstate
// creates holds what Hermes v30 writes at its first writable open and
// relies on: a db_file_generation token (32 hex), PRAGMA application_id
// derived from it as Hermes derives it (checked on the v30 fixture Hermes
// stamped, and with python3), and fts_storage_version = 3 for the current
// FTS layout. A writable open of an old Hermes file mints the stamp; a
// stamp already there (v30) is never changed, and a second open changes
// nothing.
func TestStoreWritesHermesFileStamps(t *testing.T) {
	ctx := context.Background()
	hexToken := regexp.MustCompile(`^[0-9a-f]{32}$`)

	// Hermes' own rule, on the file it stamped.
	var v30, v21 *fixturetest.Fixture
	for _, f := range fixturetest.LoadFixtures(t) {
		switch f.Version {
		case 30:
			v30 = f
		case 21:
			v21 = f
		}
	}
	require.NotNil(t, v30)
	require.NotNil(t, v21)
	tok, _, app := fileStamps(t, v30.CopyDB(t))
	require.Equal(t, app, migrations.ApplicationID(tok), "Hermes' v30 file: application_id from its token")
	require.EqualValues(t, 1, migrations.ApplicationID("00000000aaaa"))
	require.EqualValues(t, 0x7fffffff, migrations.ApplicationID("ffffffff"))

	fresh := filepath.Join(t.TempDir(), "state.db")
	st, err := hs.Open(ctx, hs.Config{Path: fresh})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	tok, ftsVer, app := fileStamps(t, fresh)
	require.Regexp(t, hexToken, tok)
	require.Equal(t, migrations.ApplicationID(tok), app)
	require.NotZero(t, app)
	require.Equal(t, "3", ftsVer)
	if py, err := exec.LookPath("python3"); err == nil {
		out, err := exec.Command(py, "-c", `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
token = c.execute("SELECT value FROM state_meta WHERE key = 'db_file_generation'").fetchone()[0]
print((int(token[:8], 16) & 0x7FFFFFFF) or 1, c.execute("PRAGMA application_id").fetchone()[0])
`, fresh).Output()
		require.NoError(t, err)
		f := strings.Fields(string(out))
		require.Equal(t, f[0], f[1], "Hermes' rule, in Python")
	}
	st, err = hs.Open(ctx, hs.Config{Path: fresh})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	tok2, _, app2 := fileStamps(t, fresh)
	require.Equal(t, tok, tok2)
	require.Equal(t, app, app2)

	// An old Hermes file (v21: no token, application_id 0) is stamped at
	// its first writable open; its legacy FTS layout gets no
	// fts_storage_version (Hermes writes it for the current layout only).
	old := v21.CopyDB(t)
	st, err = hs.Open(ctx, hs.Config{Path: old})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	tok, ftsVer, app = fileStamps(t, old)
	require.Regexp(t, hexToken, tok)
	require.Equal(t, migrations.ApplicationID(tok), app)
	require.Empty(t, ftsVer)

	// Hermes' v30 file keeps its token and application_id; its current
	// layout gets fts_storage_version = 3.
	p30 := v30.CopyDB(t)
	tok, _, app = fileStamps(t, p30)
	st, err = hs.Open(ctx, hs.Config{Path: p30})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	tok2, ftsVer, app2 = fileStamps(t, p30)
	require.Equal(t, tok, tok2)
	require.Equal(t, app, app2)
	require.Equal(t, "3", ftsVer)
}

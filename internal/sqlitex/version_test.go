package sqlitex

import (
	"github.com/stretchr/testify/require"
	sqlite3 "modernc.org/sqlite/lib"
	"testing"
)

func TestWALResetBugVersions(t *testing.T) {
	for v, bad := range map[string]bool{
		"3.6.23": false, "3.7.0": true, "3.40.1": true, "3.41.2": true, "3.44.5": true, "3.44.6": false,
		"3.44.9": false, "3.45.0": true, "3.50.6": true, "3.50.7": false, "3.51.2": true, "3.51.3": false,
		"3.53.3": false, "3.54.1": false, "4.0.0": false,
	} {
		pv, err := ParseVersion(v)
		require.NoError(t, err, v)
		require.Equal(t, bad, pv.HasWALResetBug(), v)
		err = CheckWAL(v)
		if bad {
			require.ErrorIs(t, err, ErrVulnerableSQLite, v)
			require.Contains(t, err.Error(), v)
		} else {
			require.NoError(t, err, v)
		}
	}
	for _, v := range []string{"", "3", "x.y.z", "3.-1.0", "3.4.5.6"} {
		require.Error(t, CheckWAL(v), v)
	}
}

// TestLinkedSQLite: the SQLite that glebarez/go-sqlite runs is the library
// this module requires (modernc.org/sqlite v1.62.0, SQLite 3.54.1), and it
// passes the WAL-reset check.
func TestLinkedSQLite(t *testing.T) {
	db, err := OpenEnv(":memory:")
	require.NoError(t, err)
	defer db.Close()
	var v string
	require.NoError(t, db.QueryRow("SELECT sqlite_version()").Scan(&v))
	require.Equal(t, sqlite3.SQLITE_VERSION, v)
	pv, err := ParseVersion(v)
	require.NoError(t, err)
	require.False(t, pv.less(Version{3, 54, 1}), "SQLite %s is older than the 3.54.1 this module requires", v)
	require.NoError(t, CheckWAL(v))
}

package hermesstate_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

// agedStore builds a store with old ended sessions (200 days) holding
// most of the data and two recent ones.
func agedStore(t *testing.T, cfg hs.Config) (string, []string) {
	t.Helper()
	ctx := context.Background()
	st, err := hs.Open(ctx, cfg)
	require.NoError(t, err)
	var old []string
	for i := 0; i < 12; i++ {
		s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		var batch []repo.MessageInput
		for j := 0; j < 40; j++ {
			batch = append(batch, repo.MessageInput{Role: "user", Content: strp(fmt.Sprintf("old %d %d %s", i, j, strings.Repeat("x", 400)))})
		}
		_, err = st.Messages().AppendBatch(ctx, s.ID, batch)
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, s.ID, "user_exit")
		require.NoError(t, err)
		old = append(old, s.ID)
	}
	recent := fillStore(t, st, 2, 3)
	require.NoError(t, st.Close())
	db := fixturetest.Raw(t, cfg.Path)
	for _, id := range old {
		_, err := db.Exec("UPDATE sessions SET started_at = started_at - 200*86400, ended_at = ended_at - 200*86400 WHERE id = ?", id)
		require.NoError(t, err)
		_, err = db.Exec("UPDATE messages SET timestamp = timestamp - 200*86400 WHERE session_id = ?", id)
		require.NoError(t, err)
	}
	require.NoError(t, db.Close())
	return cfg.Path, recent
}

func TestMaintainPruneVacuumBackupRotation(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path, recent := agedStore(t, hs.Config{Path: filepath.Join(dir, "state.db")})
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()
	backups := filepath.Join(dir, "backups")
	var steps []string
	opts := hs.MaintenanceOptions{RetentionDays: 90, Vacuum: true, BackupDir: backups, BackupKeep: 2,
		Progress: func(step string, done, total int64) { steps = append(steps, step) }}
	rep, err := st.Maintain(ctx, opts)
	require.NoError(t, err)
	require.EqualValues(t, 12, rep.Pruned)
	require.NotNil(t, rep.Vacuum)
	require.True(t, rep.Vacuum.Ran, "most pages were freed: VACUUM runs (%.2f free)", rep.Vacuum.FreeRatio)
	require.Greater(t, rep.Vacuum.FreeRatio, 0.25)
	require.FileExists(t, rep.Backup)
	require.Contains(t, steps, "backup")
	n, err := st.Sessions().Count(ctx, "")
	require.NoError(t, err)
	require.EqualValues(t, len(recent), n)

	// The backup holds the state before the prune and passes doctor.
	br, err := hs.Doctor(ctx, hs.Config{Path: rep.Backup, JournalMode: hs.JournalDelete}, hs.DoctorOptions{})
	require.NoError(t, err)
	requireHealthy(t, br)
	bdb := fixturetest.Raw(t, rep.Backup)
	var bn int
	require.NoError(t, bdb.QueryRow("SELECT count(*) FROM sessions").Scan(&bn))
	require.Equal(t, 14, bn)

	// A second run: nothing to prune, too little free space to VACUUM,
	// and the rotation keeps two snapshots.
	for i := 0; i < 2; i++ {
		rep, err = st.Maintain(ctx, opts)
		require.NoError(t, err)
		require.Zero(t, rep.Pruned)
		require.False(t, rep.Vacuum.Ran)
	}
	require.Len(t, rep.BackupsRemoved, 1)
	left, _ := filepath.Glob(filepath.Join(backups, "state-*.db"))
	require.Len(t, left, 2)
	r, err := st.Doctor(ctx, hs.DoctorOptions{})
	require.NoError(t, err)
	requireHealthy(t, r)

	_, err = st.Maintain(ctx, hs.MaintenanceOptions{RetentionDays: -1})
	require.ErrorIs(t, err, hs.ErrInvalid)
}

func TestAutoMaintenanceOptIn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := hs.Config{Path: filepath.Join(dir, "state.db")}
	path, _ := agedStore(t, cfg)

	// Not configured: nothing runs.
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	last, err := st.LastAutoMaintenance()
	require.NoError(t, err)
	require.Nil(t, last)
	require.NoError(t, st.Close())

	cfg.Maintenance = &hs.MaintenanceConfig{Options: hs.MaintenanceOptions{RetentionDays: 90, Vacuum: true}}
	st, err = hs.Open(ctx, cfg)
	require.NoError(t, err)
	last, err = st.LastAutoMaintenance()
	require.NoError(t, err)
	require.NotNil(t, last)
	require.EqualValues(t, 12, last.Pruned)
	require.True(t, last.Vacuum.Ran)
	require.NoError(t, st.Close())

	// Within Every: the next open does not run it again.
	st, err = hs.Open(ctx, cfg)
	require.NoError(t, err)
	last, err = st.LastAutoMaintenance()
	require.NoError(t, err)
	require.Nil(t, last)
	require.NoError(t, st.Close())
}

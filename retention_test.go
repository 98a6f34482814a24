package hermesstate_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
)

// TestMaintainRetentionDaysRange (issue 11, item 10): RetentionDays beyond
// MaxRetentionDays is refused with ErrInvalid before anything is done. It
// used to overflow time.Duration: 213504 days wrapped to about 25 minutes
// and pruned every session ended longer ago than that.
func TestMaintainRetentionDaysRange(t *testing.T) {
	ctx := context.Background()
	path, _ := agedStore(t, hs.Config{Path: filepath.Join(t.TempDir(), "state.db")})
	st, err := hs.Open(ctx, hs.Config{Path: path})
	require.NoError(t, err)
	defer st.Close()
	before, err := st.Sessions().Count(ctx, "")
	require.NoError(t, err)
	for _, days := range []int{213504, int(^uint(0) >> 1), hs.MaxRetentionDays + 1} {
		rep, err := st.Maintain(ctx, hs.MaintenanceOptions{RetentionDays: days})
		require.ErrorIs(t, err, hs.ErrInvalid, "%d days", days)
		require.Contains(t, err.Error(), "at most 100000")
		require.Zero(t, rep.Pruned)
	}
	after, err := st.Sessions().Count(ctx, "")
	require.NoError(t, err)
	require.Equal(t, before, after, "nothing pruned")
	rep, err := st.Maintain(ctx, hs.MaintenanceOptions{RetentionDays: hs.MaxRetentionDays})
	require.NoError(t, err)
	require.Zero(t, rep.Pruned)
}

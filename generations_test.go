package hermesstate_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestConversationGenerationsWritePaths: every write path that stamps an end
// (or removes rows) against Hermes' rule — only a reset boundary written by
// end_session or promote_to_session_reset on a keyed row advances
// conversation_generations, exactly once; compression, repair, sweep,
// recovery, deletes and prunes never touch it.
func TestConversationGenerationsWritePaths(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		gen := func() int64 {
			var n int64
			hermesstatetest.QueryRow(t, st, "SELECT COALESCE(MAX(generation), 0) FROM conversation_generations WHERE source = 'telegram' AND session_key = 'agent:main:telegram:dm:1'", nil, &n)
			return n
		}
		var i int
		keyed := func() string {
			i++
			id := "s" + itoa(i)
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "telegram", SessionKey: "agent:main:telegram:dm:1", StartedAt: 1_700_000_000})
			require.NoError(t, err)
			return id
		}
		step := func(name string, want int64, fn func()) {
			fn()
			require.Equal(t, want, gen(), name)
		}
		a := keyed()
		step("end with a reset reason", 1, func() { _, err := st.Sessions().End(ctx, a, "session_reset"); require.NoError(t, err) })
		step("end of an ended row writes nothing", 1, func() { _, err := st.Sessions().End(ctx, a, "idle"); require.NoError(t, err) })
		b := keyed()
		step("end with another reason", 1, func() { _, err := st.Sessions().End(ctx, b, "cli_close"); require.NoError(t, err) })
		step("promote a deliberately ended row: no write", 1, func() { _, err := st.SessionState().PromoteToReset(ctx, b, "daily"); require.NoError(t, err) })
		c := keyed()
		step("promote a live row", 2, func() { _, err := st.SessionState().PromoteToReset(ctx, c, ""); require.NoError(t, err) })
		d := keyed()
		_, err := st.Sessions().End(ctx, d, "agent_close")
		require.NoError(t, err)
		step("promote a recoverable end", 3, func() { _, err := st.SessionState().PromoteToReset(ctx, d, "suspended"); require.NoError(t, err) })
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "unkeyed", Source: "telegram"})
		require.NoError(t, err)
		step("a row without a key", 3, func() { _, err := st.Sessions().End(ctx, "unkeyed", "session_reset"); require.NoError(t, err) })

		e := keyed()
		step("compression rotation", 3, func() {
			require.NoError(t, st.Compressor().PublishChild(ctx, repo.PublishChildInput{ParentID: e, ChildID: e + "-c", Source: "telegram", SkipLeaseCheck: true,
				Messages: []repo.MessageInput{{Role: "user", Content: models.Text("carry")}}}))
		})
		step("reopen an orphaned compression parent", 3, func() { _, err := st.Compressor().ReopenOrphaned(ctx, e, time.Time{}); require.NoError(t, err) })
		f := keyed()
		step("orphan sweep", 3, func() {
			_, err := st.Housekeeping().SweepOrphans(ctx, repo.SweepOptions{MaxIdle: time.Hour, Sources: []string{"telegram"}, IgnoreHeartbeats: true})
			require.NoError(t, err)
		})
		step("finalize orphaned compression", 3, func() {
			_, err := st.Compressor().FinalizeOrphaned(ctx, time.Now().Add(30*24*time.Hour))
			require.NoError(t, err)
		})
		step("reopen an explicit close", 3, func() { _, err := st.Compressor().ReopenIfExplicitlyClosed(ctx, b); require.NoError(t, err) })
		step("adopt an orphan", 3, func() {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "orphan", Source: "telegram"})
			require.NoError(t, err)
			_, err = st.Peers().Adopt(ctx, "orphan", c, time.Time{})
			require.NoError(t, err)
		})
		step("delete, prune, clear", 3, func() {
			_, err := st.Cleanup().Delete(ctx, f)
			require.NoError(t, err)
			_, err = st.Transcript().Clear(ctx, e+"-c", repo.ClearOptions{})
			require.NoError(t, err)
			_, err = st.Cleanup().Prune(ctx, repo.PruneOptions{OlderThan: time.Nanosecond})
			require.NoError(t, err)
		})
		g, ok, err := st.SessionState().ConversationBoundary(ctx, "telegram", "agent:main:telegram:dm:1")
		require.NoError(t, err)
		require.True(t, ok)
		require.EqualValues(t, 3, g)
	})
}

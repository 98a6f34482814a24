package hermesstate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func TestKeyProfile(t *testing.T) {
	for key, want := range map[string]string{"agent:main:telegram:dm:1": "default", "agent:main~:x:y": "main", "agent:work:x": "work",
		"agent::x": "", "agent:work": "", "room:1:2": "", "": ""} {
		require.Equal(t, want, repo.KeyProfile(key), key)
	}
}

func TestProfileRepair(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		pr := st.ProfileRepair()
		mk := func(id, key, profile, parent string) {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "telegram", SessionKey: key, ProfileName: profile, ParentSessionID: parent, ChatID: "42"})
			require.NoError(t, err)
		}
		mk("p", "agent:main:telegram:dm:42", "default", "")
		mk("c", "agent:work:telegram:dm:42", "default", "p")
		mk("w", "agent:work:telegram:dm:43", "", "")
		found, err := pr.Crossed(ctx, "default")
		require.NoError(t, err)
		require.Equal(t, []repo.MislabelledSession{{ID: "c", SessionKey: "agent:work:telegram:dm:42", ProfileName: "default", KeyProfile: "work"}}, found.Mislabelled)
		require.Len(t, found.Foreign, 2)
		require.Equal(t, []repo.CrossedParent{{ID: "c", KeyProfile: "work", ParentSessionID: "p", ParentProfile: "default"}}, found.CrossedParents)
		profiles, err := pr.KeyProfiles(ctx, "telegram", "42")
		require.NoError(t, err)
		require.Equal(t, []string{"default", "work"}, profiles)

		n, err := pr.Relabel(ctx, []string{"c", "w", "p"})
		require.NoError(t, err)
		require.EqualValues(t, 2, n, "c relabelled, w stamped, p already right")
		n, err = pr.SeverCrossedParents(ctx, []string{"c"})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		mk("legacy", "agent:main:slack:9", "", "")
		n, err = pr.RekeyLegacyMain(ctx, []string{"legacy"}, "main")
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		l, err := st.Sessions().Get(ctx, "legacy")
		require.NoError(t, err)
		require.Equal(t, "agent:main~:slack:9", *l.SessionKey)

		rows := []models.GatewayRouting{{Scope: "", SessionKey: "agent:work:x", EntryJSON: models.JSON(`{"session_id": "w"}`), UpdatedAt: 5}}
		n, err = pr.InsertRoutingRowsIfAbsent(ctx, rows)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		n, err = pr.InsertRoutingRowsIfAbsent(ctx, rows)
		require.NoError(t, err)
		require.Zero(t, n, "an existing key wins")
		all, err := pr.RoutingRows(ctx)
		require.NoError(t, err)
		require.Len(t, all, 1)
		n, err = pr.DeleteRoutingRows(ctx, rows)
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		topic, err := pr.ProfileLessTopicRows(ctx)
		require.NoError(t, err)
		require.Empty(t, topic, "no topic tables")

		// A move: export here, import into another store, delete here.
		_, err = st.Messages().Append(ctx, "w", repo.MessageInput{Role: "user", Content: models.Text("héllo")})
		require.NoError(t, err)
		_, err = st.Titles().Set(ctx, "w", "Shared title")
		require.NoError(t, err)
		require.NoError(t, st.Sessions().UpdateTokenCounts(ctx, "w", repo.TokenUpdate{InputTokens: 3, APICallCount: 1, Model: "m", BillingProvider: "p"}))
		payload, err := pr.ExportForMove(ctx, "w")
		require.NoError(t, err)
		require.Len(t, payload.Messages, 1)
		require.Len(t, payload.Usage, 1)
		_, err = pr.ExportForMove(ctx, "missing")
		fixturetest.RequireKind(t, err, hs.ErrNotFound)

		target := hermesstatetest.Fresh(t)
		_, err = target.Sessions().Create(ctx, repo.SessionInput{ID: "resident", Source: "cli"})
		require.NoError(t, err)
		_, err = target.Titles().Set(ctx, "resident", "Shared title")
		require.NoError(t, err)
		status, err := target.ProfileRepair().ImportMoved(ctx, payload, "work")
		require.NoError(t, err)
		require.Equal(t, "imported", status)
		status, err = target.ProfileRepair().ImportMoved(ctx, payload, "work")
		require.NoError(t, err)
		require.Equal(t, "present", status)
		moved, err := target.Sessions().Get(ctx, "w")
		require.NoError(t, err)
		require.Equal(t, "Shared title (w)", *moved.Title)
		require.Equal(t, "work", *moved.ProfileName)
		msgs, err := target.Messages().List(ctx, "w")
		require.NoError(t, err)
		require.Equal(t, "héllo", *msgs[0].Content)
		usage, err := target.Usage().Rows(ctx, "w")
		require.NoError(t, err)
		require.Len(t, usage, 1)
		ok, err := pr.DeleteMoved(ctx, "w")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = pr.DeleteMoved(ctx, "w")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

package hermesstate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/repo"
)

func TestTelegramTopics(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		tg := st.TelegramTopics()
		var n int64
		tableCount := func() int64 {
			q := "SELECT COUNT(*) FROM sqlite_master WHERE name LIKE 'telegram_dm_topic%'"
			if st.Driver() == hs.DriverPostgres {
				q = "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'telegram_dm_topic%'"
			}
			hermesstatetest.QueryRow(t, st, q, nil, &n)
			return n
		}
		// Reads and a disable never create the tables.
		ok, err := tg.Enabled(ctx, "1", "1", "")
		require.NoError(t, err)
		require.False(t, ok)
		require.NoError(t, tg.Disable(ctx, "1", repo.TopicModeOffOptions{}))
		b, err := tg.BindingOfSession(ctx, "s")
		require.NoError(t, err)
		require.Nil(t, b)
		require.Zero(t, tableCount(), "no topic table before opt-in")

		for _, id := range []string{"s1", "s2"} {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "telegram", UserID: "u1"})
			require.NoError(t, err)
		}
		un, err := tg.UnlinkedSessions(ctx, "u1", "", 0)
		require.NoError(t, err)
		require.Len(t, un, 2, "without tables every session is unlinked")

		tru := true
		require.NoError(t, tg.Enable(ctx, repo.TopicModeInput{ChatID: "100", UserID: "u1", HasTopicsEnabled: &tru}))
		require.Equal(t, int64(2), tableCount())
		v, _, err := st.Meta().Get(ctx, "telegram_dm_topic_schema_version")
		require.NoError(t, err)
		require.Equal(t, "3", v)
		ok, err = tg.Enabled(ctx, "100", "u1", " default ")
		require.NoError(t, err)
		require.True(t, ok)

		require.NoError(t, tg.Bind(ctx, repo.TopicBindingInput{ChatID: "100", ThreadID: "7", UserID: "u1", SessionKey: "agent:main:telegram:dm:100:7", SessionID: "s1"}))
		require.NoError(t, tg.Bind(ctx, repo.TopicBindingInput{ChatID: "100", ThreadID: "7", UserID: "u1", SessionKey: "agent:main:telegram:dm:100:7", SessionID: "s1"}), "rebinding is idempotent")
		err = tg.Bind(ctx, repo.TopicBindingInput{ChatID: "100", ThreadID: "8", UserID: "u1", SessionKey: "k", SessionID: "s1"})
		fixturetest.RequireKind(t, err, hs.ErrConflict)
		b, err = tg.Binding(ctx, "100", "7", "")
		require.NoError(t, err)
		require.Equal(t, "s1", b.SessionID)
		require.Equal(t, "auto", b.ManagedMode)
		un, err = tg.UnlinkedSessions(ctx, "u1", "", 0)
		require.NoError(t, err)
		require.Len(t, un, 1)
		require.Equal(t, "s2", un[0].ID)

		// Unbinding the chat's last topic turns topic mode off.
		n, err = tg.Unbind(ctx, "100", "7", repo.UnbindOptions{})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		ok, err = tg.Enabled(ctx, "100", "u1", "")
		require.NoError(t, err)
		require.False(t, ok)
		bs, err := tg.Bindings(ctx, "100", "")
		require.NoError(t, err)
		require.Empty(t, bs)
	})
}

// TestTelegramTopicsLegacyTables: v1/v2 tables without profile_name are
// rebuilt into the "default" profile, rows kept.
func TestTelegramTopicsLegacyTables(t *testing.T) {
	ctx := fixturetest.Ctx(t)
	st := hermesstatetest.Fresh(t)
	_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s1", Source: "telegram"})
	require.NoError(t, err)
	hermesstatetest.Exec(t, st, `CREATE TABLE telegram_dm_topic_mode (chat_id TEXT PRIMARY KEY, user_id TEXT NOT NULL, enabled INTEGER NOT NULL DEFAULT 1,
		activated_at REAL NOT NULL, updated_at REAL NOT NULL, has_topics_enabled INTEGER, allows_users_to_create_topics INTEGER,
		capability_checked_at REAL, intro_message_id TEXT, pinned_message_id TEXT)`)
	hermesstatetest.Exec(t, st, `CREATE TABLE telegram_dm_topic_bindings (chat_id TEXT NOT NULL, thread_id TEXT NOT NULL, user_id TEXT NOT NULL,
		session_key TEXT NOT NULL, session_id TEXT NOT NULL, managed_mode TEXT NOT NULL DEFAULT 'auto', linked_at REAL NOT NULL, updated_at REAL NOT NULL,
		PRIMARY KEY (chat_id, thread_id))`)
	hermesstatetest.Exec(t, st, "INSERT INTO telegram_dm_topic_mode (chat_id, user_id, activated_at, updated_at) VALUES ('100', 'u1', 1, 1)")
	hermesstatetest.Exec(t, st, "INSERT INTO telegram_dm_topic_bindings (chat_id, thread_id, user_id, session_key, session_id, linked_at, updated_at) VALUES ('100', '7', 'u1', 'k', 's1', 1, 1)")
	require.NoError(t, st.TelegramTopics().Migrate(ctx))
	b, err := st.TelegramTopics().Binding(ctx, "100", "7", "default")
	require.NoError(t, err)
	require.NotNil(t, b)
	require.Equal(t, "default", b.ProfileName)
	ok, err := st.TelegramTopics().Enabled(ctx, "100", "u1", "")
	require.NoError(t, err)
	require.True(t, ok)
}

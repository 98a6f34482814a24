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

func sp(s string) *string { return &s }

func TestPeersHygieneAndInputOwner(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		p := st.Peers()
		for i := 1; i <= 3; i++ {
			n, err := p.IncrementHygieneStreak(ctx, "agent:main:telegram:dm:1")
			require.NoError(t, err)
			require.EqualValues(t, i, n)
		}
		require.NoError(t, p.ResetHygieneStreak(ctx, "agent:main:telegram:dm:1"))
		n, err := p.IncrementHygieneStreak(ctx, "agent:main:telegram:dm:1")
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = p.IncrementHygieneStreak(ctx, "")
		fixturetest.RequireKind(t, err, hs.ErrInvalid)

		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "telegram"})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "s", repo.MessageInput{Role: "user", Content: models.Text("hi"),
			DisplayMetadata: models.MustJSON(map[string]any{"gateway_input_owner": "gw-1"})})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "s", repo.MessageInput{Role: "user", Content: models.Text("seen"), Observed: true,
			DisplayMetadata: models.MustJSON(map[string]any{"gateway_input_owner": "gw-2"})})
		require.NoError(t, err)
		ok, err := p.HasInputOwner(ctx, "s", "gw-1")
		require.NoError(t, err)
		require.True(t, ok)
		ok, err = p.HasInputOwner(ctx, "s", "gw-2")
		require.NoError(t, err)
		require.False(t, ok, "an observed row does not count")
		ok, err = p.HasInputOwner(ctx, "missing", "gw-1")
		require.NoError(t, err)
		require.False(t, ok)
	})
}

func TestPeersRecordAndOrphans(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		p := st.Peers()
		// A missing row is created with the identity.
		require.NoError(t, p.Record(ctx, "new", repo.PeerRecord{Source: "telegram", SessionKey: "agent:main:telegram:dm:7", ChatID: sp("7"),
			ChatType: sp("dm"), UserID: sp("u7"), DisplayName: sp("Bo"), OriginJSON: models.MustJSON(map[string]any{"platform": "telegram"})}))
		s, err := st.Sessions().Get(ctx, "new")
		require.NoError(t, err)
		require.Equal(t, "telegram", s.Source)
		require.Equal(t, "telegram", *s.CreatedSource)
		require.Equal(t, `{"platform": "telegram"}`, string(s.OriginJSON))
		// An existing row: routing overwritten (NULLs too), display name kept.
		require.NoError(t, p.Record(ctx, "new", repo.PeerRecord{Source: "telegram", SessionKey: "agent:main:telegram:dm:8"}))
		s, err = st.Sessions().Get(ctx, "new")
		require.NoError(t, err)
		require.Equal(t, "agent:main:telegram:dm:8", *s.SessionKey)
		require.Nil(t, s.ChatID)
		require.Equal(t, "Bo", *s.DisplayName)
		// With ancestors: the compression lineage moves together.
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "root", Source: "cli"})
		require.NoError(t, err)
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "tip", Source: "cli", ParentSessionID: "root"})
		require.NoError(t, err)
		_, err = st.Sessions().End(ctx, "root", "compression")
		require.NoError(t, err)
		require.NoError(t, p.Record(ctx, "tip", repo.PeerRecord{Source: "discord", SessionKey: "agent:main:discord:c:1", IncludeCompressionAncestors: true}))
		root, err := st.Sessions().Get(ctx, "root")
		require.NoError(t, err)
		require.Equal(t, "agent:main:discord:c:1", *root.SessionKey)

		// Orphans: lineage evidence, contiguity evidence, ambiguity.
		mk := func(id, source, key, parent string, started float64, msg bool) {
			_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: source, SessionKey: key, ParentSessionID: parent,
				StartedAt: models.Epoch(started)})
			require.NoError(t, err)
			if msg {
				_, err = st.Messages().Append(ctx, id, repo.MessageInput{Role: "user", Content: models.Text("m"), Timestamp: models.Epoch(started + 10)})
				require.NoError(t, err)
			}
		}
		mk("donorA", "slack", "agent:main:slack:a", "", 1_700_000_000, true)
		mk("orphanA", "slack", "", "donorA", 1_700_000_100, true)
		mk("donorB", "whatsapp", "agent:main:wa:b", "", 1_700_010_000, true)
		mk("orphanB", "whatsapp", "", "", 1_700_010_100, true)
		mk("loneC", "signal", "", "", 1_700_020_000, true)
		recs, err := p.Orphans(ctx, 0)
		require.NoError(t, err)
		byID := map[string]repo.OrphanRecord{}
		for _, r := range recs {
			byID[r.OrphanID] = r
		}
		require.True(t, byID["orphanA"].Adoptable)
		require.Equal(t, "lineage", byID["orphanA"].Evidence)
		require.Equal(t, "donorA", *byID["orphanA"].DonorID)
		require.True(t, byID["orphanB"].Adoptable)
		require.Equal(t, "contiguity", byID["orphanB"].Evidence)
		require.False(t, byID["loneC"].Adoptable)
		require.Equal(t, "no keyed predecessor fell quiet within 900s of this session's start", byID["loneC"].Reason)
		require.Equal(t, "", byID["loneC"].Evidence)

		ok, err := p.Adopt(ctx, "orphanA", "donorA", time.Unix(1_700_000_500, 0))
		require.NoError(t, err)
		require.True(t, ok)
		a, err := st.Sessions().Get(ctx, "orphanA")
		require.NoError(t, err)
		require.Equal(t, "agent:main:slack:a", *a.SessionKey)
		d, err := st.Sessions().Get(ctx, "donorA")
		require.NoError(t, err)
		require.Equal(t, "superseded_by_repair", *d.EndReason)
		require.Equal(t, models.Epoch(1_700_000_500), *d.EndedAt)
		ok, err = p.Adopt(ctx, "orphanA", "donorA", time.Time{})
		require.NoError(t, err)
		require.False(t, ok, "already keyed")
	})
}

func TestPeersRekeyAndPurgeProfile(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		p := st.Peers()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "telegram", SessionKey: "agent:work:telegram:dm:1", ProfileName: "work",
			OriginJSON: models.MustJSON(map[string]any{"profile": "work", "name": "Zoë"})})
		require.NoError(t, err)
		require.NoError(t, st.Heartbeats().Register(ctx, repo.Heartbeat{BackendID: "work@h:1", PID: 1, StartedAt: 1, Profile: "work"}))
		require.NoError(t, st.Routing().Upsert(ctx, "", "agent:work:telegram:dm:1", models.MustJSON(map[string]any{
			"session_key": "agent:work:telegram:dm:1", "session_id": "s", "origin": map[string]any{"profile": "work"}})))
		counts, err := p.RekeyProfile(ctx, " work ", "play")
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"sessions_profile_name": 1, "gateway_heartbeats_profile": 1, "sessions_session_key": 1,
			"sessions_origin_json": 1, "gateway_routing": 1}, counts)
		s, err := st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "agent:play:telegram:dm:1", *s.SessionKey)
		require.Equal(t, "play", *s.ProfileName)
		var origin string
		hermesstatetest.QueryRow(t, st, "SELECT origin_json FROM sessions WHERE id = 's'", nil, &origin)
		require.Equal(t, `{"name": "Zoë", "profile": "play"}`, origin, "re-dumped with ensure_ascii=False, order kept")
		var entry string
		hermesstatetest.QueryRow(t, st, "SELECT entry_json FROM gateway_routing WHERE session_key = 'agent:play:telegram:dm:1'", nil, &entry)
		require.Equal(t, `{"origin": {"profile": "play"}, "session_id": "s", "session_key": "agent:play:telegram:dm:1"}`, entry)
		empty, err := p.RekeyProfile(ctx, "play", "play")
		require.NoError(t, err)
		require.Empty(t, empty)
		// A colliding routing key refuses the whole rename.
		require.NoError(t, st.Routing().Upsert(ctx, "", "agent:x:telegram:dm:1", models.MustJSON(map[string]any{"session_id": "s"})))
		_, err = p.RekeyProfile(ctx, "play", "x")
		fixturetest.RequireKind(t, err, hs.ErrConflict)

		counts, err = p.PurgeProfile(ctx, "play", time.Time{})
		require.NoError(t, err)
		require.Equal(t, map[string]int64{"gateway_routing": 1, "gateway_heartbeats": 1}, counts, "the rekeyed heartbeat goes")
		s, err = st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "play", *s.ProfileName, "sessions are kept")
	})
}

func TestRoutes(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := fixturetest.Ctx(t)
		r := st.Routes()
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: "s", Source: "cli", Model: "old", SystemPrompt: "P",
			ModelConfig: models.MustJSON(map[string]any{"_branched_from": "x"})})
		require.NoError(t, err)
		require.NoError(t, r.SetRuntimeLock(ctx, "s", repo.RuntimeLock{Model: "m2", Provider: "openrouter", Confirmed: true,
			ModelOptions: map[string]any{"effort": "high"}, Now: time.Unix(1_700_000_000, 500_000_000)}))
		var cfg string
		hermesstatetest.QueryRow(t, st, "SELECT model_config FROM sessions WHERE id = 's'", nil, &cfg)
		require.Equal(t, `{"_branched_from": "x", "browser_model_lock": {"provider": "openrouter", "model": "m2", "model_options": {"effort": "high"}, "route_source": "", "confirmed": true, "updated_at": 1700000000.5}}`, cfg)
		s, err := st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "m2", *s.Model)
		require.Nil(t, s.SystemPromptHash, "the stored prompt is dropped")
		require.NoError(t, r.SetYolo(ctx, "s", true))
		s, err = st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.True(t, repo.YoloEnabled(s))
		require.NoError(t, r.SetBillingRoute(ctx, "s", repo.BillingRoute{Provider: "anthropic", BaseURL: "https://api"}))
		mode := "subscription"
		require.NoError(t, r.SetBillingRoute(ctx, "s", repo.BillingRoute{Provider: "anthropic", BaseURL: "https://api", Mode: &mode}))
		s, err = st.Sessions().Get(ctx, "s")
		require.NoError(t, err)
		require.Equal(t, "subscription", *s.BillingMode)
		fixturetest.RequireKind(t, r.SetYolo(ctx, "missing", true), hs.ErrNotFound)
		fixturetest.RequireKind(t, r.SetBillingRoute(ctx, "missing", repo.BillingRoute{Provider: "a", BaseURL: "b"}), hs.ErrNotFound)
	})
}

func TestGatewayRuntime(t *testing.T) {
	sess := func(cfg string, billing string) *models.Session {
		s := &models.Session{}
		if cfg != "" {
			s.ModelConfig = models.JSONText(cfg)
		}
		if billing != "" {
			s.BillingProvider = &billing
		}
		return s
	}
	require.Equal(t, map[string]any{"provider": "x", "model": "m"}, repo.GatewayRuntime(sess(`{"gateway_runtime": {"provider": "x", "model": "m", "base_url": null}, "provider": "top"}`, "")))
	require.Equal(t, map[string]any{"provider": "top", "api_mode": "chat"}, repo.GatewayRuntime(sess(`{"gateway_runtime": {"provider": ""}, "provider": "top", "api_mode": "chat", "base_url": ""}`, "")))
	require.Equal(t, map[string]any{"provider": "anthropic"}, repo.GatewayRuntime(sess(`{}`, " anthropic ")))
	require.Equal(t, map[string]any{}, repo.GatewayRuntime(sess(`{}`, "Auto")))
	require.Equal(t, map[string]any{"model": "m"}, repo.GatewayRuntime(sess(`{"gateway_runtime": {"model": "m", "x": null}}`, "custom")))
	require.Equal(t, map[string]any{}, repo.GatewayRuntime(sess(`not json`, "")))
	require.False(t, repo.YoloEnabled(sess(`{"yolo_mode": 0}`, "")))
	require.False(t, repo.YoloEnabled(sess(`[1]`, "")))
	require.True(t, repo.YoloEnabled(sess(`{"yolo_mode": "yes"}`, "")))
}

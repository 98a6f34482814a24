package repo_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/pgtest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// messageScans returns the plan lines of p that read messages other than
// by session id (a scan of the table, or of an index by timestamp): a
// listing by last activity whose cost grows with the whole message table.
// A lookup keyed by session id (the preview of a listed row) is fine.
func messageScans(p repo.Plan) []string {
	aliases := map[string]bool{"messages": true}
	for _, m := range regexp.MustCompile(`(?i)\bmessages\s+(?:AS\s+)?([a-z_][a-z0-9_]*)`).FindAllStringSubmatch(p.SQL, -1) {
		switch strings.ToUpper(m[1]) {
		case "WHERE", "ON", "JOIN", "LEFT", "CROSS", "GROUP", "ORDER", "LIMIT", "UNION", "USING":
		default:
			aliases[m[1]] = true
		}
	}
	pgIndex := regexp.MustCompile(`using (\S+) on messages\b`)
	sqliteNode := regexp.MustCompile(`^(SCAN|SEARCH) (\S+)(.*)$`)
	var bad []string
	for _, l := range p.Lines {
		t := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "->"))
		switch {
		case strings.Contains(t, "idx_hermesstate_messages_activity"):
			bad = append(bad, t)
		case strings.Contains(t, "Seq Scan on messages"):
			bad = append(bad, t)
		case pgIndex.MatchString(t):
			if idx := pgIndex.FindStringSubmatch(t)[1]; !strings.HasPrefix(idx, "idx_messages_session") {
				bad = append(bad, t)
			}
		case sqliteNode.MatchString(t):
			m := sqliteNode.FindStringSubmatch(t)
			if aliases[m[2]] && (m[1] == "SCAN" || !strings.Contains(m[3], "session_id=")) {
				bad = append(bad, t)
			}
		}
	}
	return bad
}

// TestListingByActivityPlanReadsNoMessages (issue 21, item 4): the listing
// by last activity (sessions list --by-activity, MCP list_sessions, browse)
// never runs a plan that reads messages by anything but a session id: on a
// seeded and analyzed store, EXPLAIN of every statement it runs (first
// page, a deep page, a source filter, with children) is checked on both
// backends. The checker is shown to catch the old plan: with a trigger of
// the activity table gone, the listing falls back to scanning message
// timestamps, and the same check finds it.
func TestListingByActivityPlanReadsNoMessages(t *testing.T) {
	hermesstatetest.ForEachBackend(t, func(t *testing.T, st *hs.Store) {
		ctx := context.Background()
		base := 1767225600.0
		seedPlanStore(t, st, 200, 20)
		_, err := st.Sessions().End(ctx, "p0007", "compression")
		require.NoError(t, err)
		_, err = st.Sessions().Create(ctx, repo.SessionInput{ID: "p0007-tip", Source: "cli", ParentSessionID: "p0007", StartedAt: models.Epoch(base + 99999)})
		require.NoError(t, err)
		_, err = st.Messages().Append(ctx, "p0007-tip", repo.MessageInput{Role: "user", Content: models.Text("busy tip"), Timestamp: models.Epoch(base + 100000)})
		require.NoError(t, err)
		hermesstatetest.Exec(t, st, "ANALYZE")
		opts := []repo.RichOptions{{}, {Offset: 150}, {Source: "telegram"}, {IncludeChildren: true}, {Limit: 5, Offset: 190}}
		check := func(st *hs.Store, opts ...repo.RichOptions) (bad []string) {
			for _, o := range opts {
				o.OrderByLastActive = true
				plans, err := st.Listing().Explain(ctx, o)
				require.NoError(t, err, "%+v", o)
				require.NotEmpty(t, plans, "%+v", o)
				for _, p := range plans {
					require.NotEmpty(t, p.Lines, "%+v", o)
					for _, b := range messageScans(p) {
						bad = append(bad, fmt.Sprintf("%+v: %s", o, b))
					}
				}
			}
			return bad
		}
		require.Empty(t, check(st, opts...), "the listing by last activity reads messages beyond the listed sessions")

		// The first page is the busy compression tip, projected onto its root.
		rows, err := st.Listing().Rich(ctx, repo.RichOptions{OrderByLastActive: true, Limit: 1})
		require.NoError(t, err)
		require.Equal(t, "p0007-tip", rows[0].ID)
		require.Equal(t, "p0007", rows[0].LineageRootID)

		// Without the table's triggers the listing cannot trust the table:
		// it falls back to the message scan, which the check must see (on a
		// small store: that scan is the slow plan this test keeps out).
		small := hermesstatetest.Open(t, hermesstatetest.Backend(st.Driver()), hs.Config{})
		seedPlanStore(t, small, 30, 5)
		hermesstatetest.Exec(t, small, "DROP TRIGGER hermesstate_activity_message_delete"+map[bool]string{true: " ON messages"}[st.Driver() == hs.DriverPostgres])
		cfg := hs.Config{Path: small.Path(), ReadOnly: true}
		if st.Driver() == hs.DriverPostgres {
			cfg = hs.Config{DSN: pgtest.DSN(t), Schema: small.Schema(), ReadOnly: true}
		}
		old, err := hs.Open(ctx, cfg)
		require.NoError(t, err)
		defer old.Close()
		require.NotEmpty(t, check(old, repo.RichOptions{}), "the message scan of the fallback went unnoticed")
	})
}

// seedPlanStore writes sessions sessions of per messages each, their
// message times shuffled against their start times.
func seedPlanStore(t *testing.T, st *hs.Store, sessions, per int) {
	ctx := context.Background()
	base := 1767225600.0
	for s := 0; s < sessions; s++ {
		id := fmt.Sprintf("p%04d", s)
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: []string{"cli", "telegram", "discord"}[s%3],
			StartedAt: models.Epoch(base + float64(s)*60)})
		require.NoError(t, err)
		batch := make([]repo.MessageInput, per)
		for i := range batch {
			batch[i] = repo.MessageInput{Role: []string{"user", "assistant"}[i%2], Content: models.Text(fmt.Sprintf("message %d of %s", i, id)),
				Timestamp: models.Epoch(base + float64((s*7919)%sessions)*60 + float64(i))}
		}
		_, err = st.Messages().AppendBatch(ctx, id, batch)
		require.NoError(t, err)
	}
}

package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/cmd/hermes-state/internal/mcpserver"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
)

// TestToolsOnFixturesAsTheyAre (issue 20, section 2): the server opened
// the way `hermes-state mcp` opens a store (read-only) on an unmigrated
// copy of every Hermes fixture answers every tool as that Hermes version
// answered: search_sessions the messages of each of the 48 search cases in
// Hermes' order (a query Hermes v1 raised on is a tool error),
// list_sessions the sessions of Hermes' listing by last activity,
// get_conversation each session's replay, get_session its metadata, and
// the session resource its conversation.
func TestToolsOnFixturesAsTheyAre(t *testing.T) {
	for _, name := range fixtureNames(t) {
		t.Run(name, func(t *testing.T) {
			path, exp := fixtureCopy(t, name)
			st, err := hs.Open(context.Background(), hs.Config{Path: path, ReadOnly: true})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			cs := connect(t, st, mcpserver.Options{})
			checked := 0
			var version int
			decode(t, exp["hermes_schema_version"], &version)

			var cases []searchCase
			decode(t, exp["search"], &cases)
			for i, c := range cases {
				args, _, ok := searchArgs(c)
				if !ok || string(c.Results) == "null" {
					continue // Hermes had no such keyword argument
				}
				what := fmt.Sprintf("case %d %s %q", i, c.Kind, c.Query)
				q := strings.TrimSpace(c.Query)
				var raised struct {
					Error string `json:"error"`
				}
				switch {
				case json.Unmarshal(c.Results, &raised) == nil && raised.Error != "":
					require.NotEmpty(t, toolErr(t, cs, mcpserver.ToolSearchSessions, args), what)
				case q == "" || len([]rune(q)) > mcpserver.MaxQueryLength:
					continue // refused by the tool's input rules before any search
				default:
					var hermes []hit
					require.NoError(t, json.Unmarshal(c.Results, &hermes), what)
					if len(hermes) == 0 {
						if res := callRaw(t, cs, mcpserver.ToolSearchSessions, args); res.IsError {
							// Nothing to search (issue 28, item 6): said, where
							// Hermes answered [].
							require.Contains(t, text(res), "cannot be searched", what)
							checked++
							continue
						}
						if fixturetest.HermesRefused(t, version, c.Query) {
							// FTS5 refused that version's query, which it
							// answered with [] without searching; the
							// repaired query's hits are the better answer.
							checked++
							continue
						}
					}
					got := call[searchOut](t, cs, mcpserver.ToolSearchSessions, args)
					require.Len(t, got.Hits, len(hermes), what)
					for j := range hermes {
						require.Equal(t, hermes[j].SessionID, got.Hits[j].SessionID, what)
						require.Equal(t, hermes[j].ID, got.Hits[j].MessageID, what)
						if hermes[j].Snippet != nil {
							require.Equal(t, *hermes[j].Snippet, *got.Hits[j].Snippet, what)
						}
					}
				}
				checked++
			}

			// list_sessions is the listing by last activity (Hermes'
			// order_by_last_active, where the version had it).
			var recent []struct {
				Kwargs  map[string]any  `json:"kwargs"`
				Results json.RawMessage `json:"results"`
			}
			decode(t, exp["recent"], &recent)
			for _, r := range recent {
				if len(r.Kwargs) != 1 || r.Kwargs["order_by_last_active"] != true || string(r.Results) == "null" {
					continue
				}
				var want []struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(r.Results, &want) != nil {
					continue
				}
				got := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"limit": len(want)})
				require.Len(t, got.Sessions, len(want))
				for i := range want {
					require.Equal(t, want[i].ID, got.Sessions[i].ID, "list_sessions row %d", i)
				}
				checked++
			}
			all := call[listOut](t, cs, mcpserver.ToolListSessions, map[string]any{"limit": 200, "include_children": true})
			require.NotEmpty(t, all.Sessions)

			// get_conversation and get_session of every session.
			var sessions map[string]map[string]any
			decode(t, exp["sessions"], &sessions)
			var convs map[string][]json.RawMessage
			decode(t, exp["conversations"], &convs)
			for id, want := range sessions {
				got, _ := readAll(t, cs, id, 500, 0)
				require.Len(t, got, len(convs[id]), id)
				for i := range convs[id] {
					var w map[string]any
					require.NoError(t, json.Unmarshal(convs[id][i], &w))
					g := withoutIndex(got[i])
					for k, v := range w {
						require.Equalf(t, v, g[k], "%s message %d key %s", id, i, k)
					}
				}
				s := call[sessionOut](t, cs, mcpserver.ToolGetSession, map[string]any{"session_id": id})
				require.Equal(t, id, s.Session.ID)
				require.Equal(t, want["source"], s.Session.Source)
				require.EqualValues(t, want["message_count"], s.Session.MessageCount, id)
				if er, _ := want["end_reason"].(string); er != "" {
					require.Equal(t, er, s.Session.EndReason, id)
				}
				rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: mcpserver.SessionURI(id)})
				require.NoError(t, err, id)
				require.Contains(t, rr.Contents[0].Text, "- id: `"+id+"`")
				checked++
			}
			t.Logf("%s: %d tool answers equal Hermes'", name, checked)
		})
	}
}

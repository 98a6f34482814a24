package repo_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// hermesListing is the shape of Hermes v30's list_sessions_rich statement
// (hermes_state_sessions.py, default arguments): the listable-child
// predicate and the delegate filter over model_config with plain
// json_extract, as v30 wrote them (one model_config that is not JSON makes
// the whole statement fail with "malformed JSON"), archived and hidden rows
// left out, the preview of the first user message, newest first.
const hermesListing = `SELECT s.id, s.title,
  COALESCE((SELECT SUBSTR(REPLACE(REPLACE(m.content, X'0A', ' '), X'0D', ' '), 1, 63) FROM messages m
            WHERE m.session_id = s.id AND m.role = 'user' AND m.content IS NOT NULL
            ORDER BY m.timestamp, m.id LIMIT 1), '') AS _preview_raw
FROM sessions s
WHERE (s.parent_session_id IS NULL
       OR json_extract(s.model_config, '$._branched_from') IS NOT NULL
       OR EXISTS (SELECT 1 FROM sessions p WHERE p.id = s.parent_session_id
                  AND p.end_reason = 'branched' AND s.started_at >= p.ended_at)
       OR json_extract(s.model_config, '$._reset_from') IS NOT NULL)
  AND json_extract(s.model_config, '$._delegate_from') IS NULL
  AND s.archived = 0 AND s.hidden = 0
ORDER BY s.started_at DESC LIMIT 200 OFFSET 0`

// hermesListIDs runs hermesListing through python3's sqlite3 (the SQLite
// Hermes runs on) and returns the ids it lists, or the error it raised.
func hermesListIDs(t *testing.T, path string) ([]string, string) {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is missing: Hermes' listing is run through its sqlite3")
		}
		t.Skip("python3 is missing: install it to run Hermes' listing statement on the file")
	}
	out, err := exec.Command(py, "-c", `
import json, sqlite3, sys
c = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
try:
    print(json.dumps({"ids": [r[0] for r in c.execute(sys.argv[2])]}))
except sqlite3.Error as e:
    print(json.dumps({"error": str(e)}))
`, path, hermesListing).Output()
	require.NoError(t, err, string(out))
	var r struct {
		IDs   []string `json:"ids"`
		Error string   `json:"error"`
	}
	require.NoError(t, json.Unmarshal(out, &r), string(out))
	return r.IDs, r.Error
}

// TestImportStoresOnlyWhatHermesReads (issue 28, item 3): an import checks
// every value with the rules the API applies (one set of functions,
// repo/rowcheck.go): a line holding a value the API refuses is refused,
// named by its line and session id, and stores nothing; a tool_calls value
// that is not JSON is stored as NULL (Append's rule: Hermes reads it as no
// tool calls) and counted; a session that is its own parent, or whose
// parent would close a loop, is imported without that parent. Hermes'
// listing (through python3's sqlite3) then runs and lists every imported
// root. Before, model_config 'not json' was stored and Hermes' listing
// failed for the whole store with "malformed JSON", the loop sessions
// vanished, and role root, archived 7, pinned -1, hidden 3, output_tokens
// -5, estimated_cost_usd -1e308 and a content object were stored silently.
func TestImportStoresOnlyWhatHermesReads(t *testing.T) {
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	msg := `"messages": [{"role": "user", "content": "hello", "timestamp": 1767600001.5}]`
	lines := []string{
		`{"id": "good", "source": "cli", "started_at": 1767600000, ` + msg + `}`,
		`{"id": "bad-config", "source": "cli", "model_config": "not json", ` + msg + `}`,
		`{"id": "bad-role", "source": "cli", "messages": [{"role": "root", "content": "x", "timestamp": 1767600001.5}]}`,
		`{"id": "bad-archived", "source": "cli", "archived": 7, ` + msg + `}`,
		`{"id": "bad-pinned", "source": "cli", "pinned": -1, ` + msg + `}`,
		`{"id": "bad-hidden", "source": "cli", "hidden": 3, ` + msg + `}`,
		`{"id": "bad-tokens", "source": "cli", "output_tokens": -5, ` + msg + `}`,
		`{"id": "bad-cost", "source": "cli", "estimated_cost_usd": -1e308, ` + msg + `}`,
		`{"id": "bad-content", "source": "cli", "messages": [{"role": "user", "content": {"text": "an object"}, "timestamp": 1767600001.5}]}`,
		`{"id": "calls", "source": "cli", "started_at": 1767600010, "messages": [{"role": "assistant", "content": null, "tool_calls": "not json", "timestamp": 1767600011.5}]}`,
		`{"id": "self", "source": "cli", "started_at": 1767600020, "parent_session_id": "self", ` + msg + `}`,
		`{"id": "loop-a", "source": "cli", "started_at": 1767600030, "parent_session_id": "loop-b", ` + msg + `}`,
		`{"id": "loop-b", "source": "cli", "started_at": 1767600040, "parent_session_id": "loop-a", ` + msg + `}`,
	}
	res, err := st.Portability().Import(ctx, strings.NewReader(strings.Join(lines, "\n")+"\n"), nil)
	require.ErrorIs(t, err, hs.ErrInvalid)

	refused := map[int64]string{}
	for _, r := range res.Refused {
		refused[r.Line] = r.Reason
	}
	for line, want := range map[int64]string{2: "model_config is not valid JSON", 3: `role "root" is not a message role`,
		4: "archived must be 0 or 1, not 7", 5: "pinned must be 0 or 1, not -1", 6: "hidden must be 0 or 1, not 3",
		7: "output_tokens must not be negative", 8: "estimated_cost_usd must be a finite amount of at least 0",
		9: "content must be a string, null or a list of parts, not an object"} {
		id := strings.SplitN(lines[line-1], `"`, 5)[3] // {"id": "ID", ...
		require.Contains(t, refused[line], "line "+strconv.FormatInt(line, 10)+" (session "+id+")", "line %d: %v", line, res.Refused)
		require.Contains(t, refused[line], want, "line %d", line)
		_, gerr := st.Sessions().Get(ctx, id)
		require.ErrorIs(t, gerr, hs.ErrNotFound, "nothing of the refused line %d is stored", line)
	}
	require.Len(t, res.Refused, 8)
	require.EqualValues(t, 5, res.Sessions)
	require.EqualValues(t, 2, res.Detached, "the session that was its own parent and the one whose parent closed the loop")

	changes := map[string]string{}
	for _, c := range res.Changes {
		changes[c.Session] += c.Change
	}
	require.Contains(t, changes["calls"], "message 1: tool_calls is not JSON: stored as NULL")
	require.Contains(t, changes["self"], "its parent is itself: imported without a parent")
	require.Contains(t, changes["loop-a"]+changes["loop-b"], "would close a loop of parents")
	require.EqualValues(t, 3, res.ChangedSessions())

	calls, err := st.Sessions().Get(ctx, "calls")
	require.NoError(t, err)
	require.Zero(t, calls.ToolCallCount, "tool_calls that is not JSON counts no tool call")

	// The API refuses the same values (the same rules).
	s, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, s.ID, repo.MessageInput{Role: "root", Content: models.Text("x")})
	require.ErrorIs(t, err, hs.ErrInvalid)
	_, err = st.Sessions().Create(ctx, repo.SessionInput{Source: "cli", ModelConfig: models.JSON("not json")})
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.ErrorIs(t, st.Sessions().UpdateTokenCounts(ctx, s.ID, repo.TokenUpdate{OutputTokens: -5}), hs.ErrInvalid)
	cost := -1e308
	require.ErrorIs(t, st.Sessions().UpdateTokenCounts(ctx, s.ID, repo.TokenUpdate{InputTokens: 1, EstimatedCostUSD: &cost}), hs.ErrInvalid)

	// Hermes' listing runs on the file and lists every root.
	require.NoError(t, st.Close())
	ids, lerr := hermesListIDs(t, path)
	require.Empty(t, lerr, "Hermes' listing failed on the imported store")
	for _, id := range []string{"good", "calls", "self"} {
		require.Contains(t, ids, id)
	}
	require.True(t, slices.Contains(ids, "loop-a") || slices.Contains(ids, "loop-b"), "the loop was broken: one of its sessions is a root: %v", ids)
}

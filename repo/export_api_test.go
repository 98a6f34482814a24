package repo_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

func exportLines(t *testing.T, st *hs.Store, f repo.ExportFilter, ids ...string) []byte {
	var buf bytes.Buffer
	_, err := st.Portability().WriteJSONL(context.Background(), &buf, f, ids, nil)
	require.NoError(t, err)
	return buf.Bytes()
}

func parseLines(t *testing.T, b []byte) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out
}

// compareExported checks one exported session against Hermes' dict.
func compareExported(t *testing.T, f *fixturetest.APIFixture, want map[string]any, got map[string]any, where string) {
	wm, _ := want["messages"].([]any)
	gm, _ := got["messages"].([]any)
	require.Len(t, gm, len(wm), where)
	for i := range wm {
		fixturetest.SubsetEq(t, wm[i].(map[string]any), gm[i], fmt.Sprintf("%s message %d", where, i))
	}
	ws := map[string]any{}
	for k, v := range want {
		if k != "messages" {
			ws[k] = v
		}
	}
	fixturetest.SubsetEq(t, fixturetest.Upgraded(t, f, ws, got), got, where)
}

func TestExportFixtures(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			st := hermesstatetest.FixtureStore(t, f.Fixture)
			if f.Absent("export_session") {
				return
			}
			var ex struct {
				Session struct {
					ID     string         `json:"id"`
					Result map[string]any `json:"result"`
				} `json:"session"`
				All       []map[string]any `json:"all"`
				AllSource struct {
					Source string           `json:"source"`
					Result []map[string]any `json:"result"`
				} `json:"all_source"`
			}
			require.NoError(t, json.Unmarshal(f.Export, &ex))
			s, err := st.Portability().Session(ctx, ex.Session.ID)
			require.NoError(t, err)
			b, _ := json.Marshal(s)
			var got map[string]any
			require.NoError(t, json.Unmarshal(b, &got))
			compareExported(t, f, ex.Session.Result, got, "export_session")
			_, err = st.Portability().Session(ctx, "no-such-session")
			require.ErrorIs(t, err, hs.ErrNotFound)

			all := parseLines(t, exportLines(t, st, repo.ExportFilter{}))
			require.Len(t, all, len(ex.All))
			for i := range ex.All {
				compareExported(t, f, ex.All[i], all[i], fmt.Sprintf("export_all[%d]", i))
			}
			src := parseLines(t, exportLines(t, st, repo.ExportFilter{Source: ex.AllSource.Source}))
			require.Len(t, src, len(ex.AllSource.Result))
			for i := range ex.AllSource.Result {
				compareExported(t, f, ex.AllSource.Result[i], src[i], fmt.Sprintf("export_all(source)[%d]", i))
			}
		})
	}
}

// TestExportImportRoundTrip: export → import into an empty store → export
// gives identical JSONL; a second import adds nothing.
func TestExportImportRoundTrip(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			src := hermesstatetest.FixtureStore(t, f.Fixture)
			a := exportLines(t, src, repo.ExportFilter{})
			dst, dstPath := hermesstatetest.FreshPath(t)
			res, err := dst.Portability().Import(ctx, bytes.NewReader(a), nil)
			require.NoError(t, err)
			n, err := src.Listing().Count(ctx, repo.CountOptions{IncludeArchived: true})
			require.NoError(t, err)
			require.Equal(t, n, res.Sessions)
			require.Zero(t, res.Detached)
			b := exportLines(t, dst, repo.ExportFilter{})
			require.Equal(t, string(a), string(b))

			again, err := dst.Portability().Import(ctx, bytes.NewReader(a), nil)
			require.NoError(t, err)
			require.Zero(t, again.Sessions)
			require.Zero(t, again.Messages)
			require.Equal(t, n, again.Skipped)
			require.Equal(t, string(a), string(exportLines(t, dst, repo.ExportFilter{})))
			noOrphans(t, dstPath)

			// Markdown names every session.
			var md bytes.Buffer
			k, err := dst.Portability().WriteMarkdown(ctx, &md, repo.ExportFilter{}, nil, nil)
			require.NoError(t, err)
			require.Equal(t, n, k)
			require.Contains(t, md.String(), "- source: telegram")
		})
	}
}

func TestImportDetachesMissingParentsAndRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	src, _ := hermesstatetest.FreshPath(t)
	_, err := src.Sessions().Create(ctx, repo.SessionInput{ID: "p", Source: "cli", SystemPrompt: "be brief"})
	require.NoError(t, err)
	_, err = src.Sessions().Create(ctx, repo.SessionInput{ID: "c", Source: "cli", ParentSessionID: "p"})
	require.NoError(t, err)
	_, err = src.Messages().Append(ctx, "c", repo.MessageInput{Role: "user", Parts: []any{map[string]any{"type": "text", "text": "hé"}}})
	require.NoError(t, err)
	_, err = src.Messages().Append(ctx, "c", repo.MessageInput{Role: "assistant", ToolCalls: models.MustJSON([]models.ToolCall{{ID: "1", Type: "function", Function: models.ToolCallFunction{Name: "x", Arguments: `{"q": "检查"}`}}})})
	require.NoError(t, err)
	// Only the child: its parent is missing from the file.
	child := exportLines(t, src, repo.ExportFilter{}, "c")
	dst, _ := hermesstatetest.FreshPath(t)
	res, err := dst.Portability().Import(ctx, bytes.NewReader(child), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Detached)
	s, err := dst.Sessions().Get(ctx, "c")
	require.NoError(t, err)
	require.Nil(t, s.ParentSessionID)
	require.EqualValues(t, 2, s.MessageCount)
	require.EqualValues(t, 1, s.ToolCallCount)
	ms, err := dst.Messages().List(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, []any{map[string]any{"type": "text", "text": "hé"}}, ms[0].DecodedContent())

	// Child before parent in one file: re-attached.
	both := append(exportLines(t, src, repo.ExportFilter{}, "c"), exportLines(t, src, repo.ExportFilter{}, "p")...)
	dst2, _ := hermesstatetest.FreshPath(t)
	res, err = dst2.Portability().Import(ctx, bytes.NewReader(both), nil)
	require.NoError(t, err)
	require.Zero(t, res.Detached)
	s, err = dst2.Sessions().Get(ctx, "c")
	require.NoError(t, err)
	require.Equal(t, "p", fixturetest.Deref(s.ParentSessionID))
	p, err := dst2.Sessions().Get(ctx, "p")
	require.NoError(t, err)
	require.Equal(t, "be brief", fixturetest.Deref(p.SystemPrompt))

	for _, bad := range []string{`[1]`, `{"id": "x"`, `{"id": "", "source": "cli"}`, `{"id": "y", "source": "cli", "messages": [{"role": ""}]}`, `nope`} {
		_, err := dst2.Portability().Import(ctx, bytes.NewReader([]byte(bad)), nil)
		require.ErrorIs(t, err, hs.ErrInvalid, bad)
	}
}

// noOrphans asserts that no message or usage row points at a missing
// session.
func noOrphans(t testing.TB, path string) {
	t.Helper()
	db := fixturetest.Raw(t, path)
	for _, q := range []string{
		"SELECT COUNT(*) FROM messages WHERE session_id NOT IN (SELECT id FROM sessions)",
		"SELECT COUNT(*) FROM session_model_usage WHERE session_id NOT IN (SELECT id FROM sessions)",
		"SELECT COUNT(*) FROM sessions WHERE parent_session_id IS NOT NULL AND parent_session_id NOT IN (SELECT id FROM sessions)",
		"SELECT COUNT(*) FROM sessions WHERE system_prompt_hash IS NOT NULL AND system_prompt_hash NOT IN (SELECT hash FROM system_prompts)",
		"SELECT COUNT(*) FROM system_prompts WHERE hash NOT IN (SELECT system_prompt_hash FROM sessions WHERE system_prompt_hash IS NOT NULL)",
	} {
		var n int
		require.NoError(t, db.QueryRow(q).Scan(&n))
		require.Zero(t, n, q)
	}
}

func TestDeleteAndPruneFixtures(t *testing.T) {
	ctx := context.Background()
	for _, f := range fixturetest.LoadAPIFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			broken := fixturetest.FTSBrokenBefore(t, f.Fixture)
			st, path := hermesstatetest.Fixture(t, f.Fixture)
			sub, err := st.Sessions().Get(ctx, "20260105_091800_sub777")
			require.NoError(t, err)
			want := []string{"20260105_091500_a1b2c3"}
			if _, tagged := models.JSONGetString(sub.ModelConfig, "_delegate_from"); tagged {
				want = append(want, sub.ID) // a delegate run goes with its parent
			}
			removed, err := st.Cleanup().Delete(ctx, "20260105_091500_a1b2c3")
			require.NoError(t, err)
			require.ElementsMatch(t, want, removed)
			if len(want) == 1 {
				// Untagged child (the v30 writer ran without the delegate module): orphaned.
				sub, err = st.Sessions().Get(ctx, sub.ID)
				require.NoError(t, err)
				require.Nil(t, sub.ParentSessionID)
			}
			_, err = st.Cleanup().Delete(ctx, "20260105_091500_a1b2c3")
			require.ErrorIs(t, err, hs.ErrNotFound)
			noOrphans(t, path)
			if f.SchemaVersion != 10 { // v10's FTS delete triggers never matched what they indexed
				fixturetest.FTSIntegrity(t, path, broken)
			}

			// Far in the future every ended session is old; the compression
			// root stays with its open continuation.
			future := time.Unix(1767950100, 0).Add(365 * 24 * time.Hour)
			dry, err := st.Cleanup().Prune(ctx, repo.PruneOptions{OlderThan: 24 * time.Hour, Now: future, DryRun: true})
			require.NoError(t, err)
			wantDry := []string{"20260106_120000_dc0002", "cron_daily-report_20260107_060000"}
			if len(want) == 1 {
				wantDry = append(wantDry, "20260105_091800_sub777")
			}
			require.ElementsMatch(t, wantDry, dry.IDs)
			one, err := st.Cleanup().Prune(ctx, repo.PruneOptions{OlderThan: 24 * time.Hour, Now: future, Source: "cron"})
			require.NoError(t, err)
			require.Equal(t, []string{"cron_daily-report_20260107_060000"}, one.IDs)
			rest, err := st.Cleanup().Prune(ctx, repo.PruneOptions{OlderThan: 24 * time.Hour, Now: future})
			require.NoError(t, err)
			require.NotContains(t, rest.IDs, "cron_daily-report_20260107_060000")
			require.Contains(t, rest.IDs, "20260106_120000_dc0002")
			require.Len(t, rest.IDs, len(wantDry)-1)
			_, err = st.Sessions().Get(ctx, "20260108_140000_cmp001")
			require.NoError(t, err)
			noOrphans(t, path)
			if f.SchemaVersion != 10 {
				fixturetest.FTSIntegrity(t, path, broken)
			}
			// Nothing is young enough to prune today.
			none, err := st.Cleanup().Prune(ctx, repo.PruneOptions{Now: time.Unix(1767950100, 0)})
			require.NoError(t, err)
			require.Empty(t, none.IDs)
		})
	}
}

func TestCleanupFresh(t *testing.T) {
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	ss, ms, cl := st.Sessions(), st.Messages(), st.Cleanup()
	_, err := ss.Create(ctx, repo.SessionInput{ID: "p", Source: "cli", SystemPrompt: "only p"})
	require.NoError(t, err)
	_, err = ss.Create(ctx, repo.SessionInput{ID: "keep", Source: "cli", SystemPrompt: "shared"})
	require.NoError(t, err)
	_, err = ss.Create(ctx, repo.SessionInput{ID: "d1", Source: "subagent", ParentSessionID: "p", ModelConfig: models.MustJSON(map[string]any{"_delegate_from": "p"})})
	require.NoError(t, err)
	_, err = ss.Create(ctx, repo.SessionInput{ID: "d2", Source: "subagent", ParentSessionID: "d1", ModelConfig: models.MustJSON(map[string]any{"_delegate_from": "d1"})})
	require.NoError(t, err)
	_, err = ss.Create(ctx, repo.SessionInput{ID: "br", Source: "cli", ParentSessionID: "p", ModelConfig: models.MustJSON(map[string]any{"_branched_from": "p"})})
	require.NoError(t, err)
	for _, id := range []string{"p", "d1", "d2", "br", "keep"} {
		_, err := ms.Append(ctx, id, repo.MessageInput{Role: "user", Content: models.Text("hello " + id)})
		require.NoError(t, err)
		require.NoError(t, ss.UpdateTokenCounts(ctx, id, repo.TokenUpdate{InputTokens: 10, Model: "m", BillingProvider: "x", APICallCount: 1}))
	}
	removed, err := cl.Delete(ctx, "p")
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"p", "d1", "d2"}, removed)
	br, err := ss.Get(ctx, "br")
	require.NoError(t, err)
	require.Nil(t, br.ParentSessionID, "branch child orphaned")
	noOrphans(t, path)
	fixturetest.FTSIntegrity(t, path, nil)
	db := fixturetest.Raw(t, path)
	require.Equal(t, 0, fixturetest.Count(t, db, "SELECT COUNT(*) FROM system_prompts WHERE prompt = 'only p'"))
	require.Equal(t, 1, fixturetest.Count(t, db, "SELECT COUNT(*) FROM system_prompts WHERE prompt = 'shared'"))

	n, err := cl.ClearMessages(ctx, "keep")
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	k, err := ss.Get(ctx, "keep")
	require.NoError(t, err)
	require.Zero(t, k.MessageCount)
	require.Zero(t, k.InputTokens)
	require.Zero(t, k.APICallCount)
	require.NotNil(t, k.LastActivityAt)
	require.Equal(t, 0, fixturetest.Count(t, db, "SELECT COUNT(*) FROM session_model_usage WHERE session_id = 'keep'"))
	_, err = cl.ClearMessages(ctx, "nope")
	require.ErrorIs(t, err, hs.ErrNotFound)

	// Pinned sessions survive a prune.
	_, err = ss.End(ctx, "br", "user_exit")
	require.NoError(t, err)
	_, err = st.Lineage().SetPinned(ctx, "br", true)
	require.NoError(t, err)
	res, err := cl.Prune(ctx, repo.PruneOptions{OlderThan: time.Hour, Now: time.Now().Add(48 * time.Hour)})
	require.NoError(t, err)
	require.Empty(t, res.IDs)
	_, err = st.Lineage().SetPinned(ctx, "br", false)
	require.NoError(t, err)
	res, err = cl.Prune(ctx, repo.PruneOptions{OlderThan: time.Hour, Now: time.Now().Add(48 * time.Hour)})
	require.NoError(t, err)
	require.Equal(t, []string{"br"}, res.IDs)
	noOrphans(t, path)
	fixturetest.FTSIntegrity(t, path, nil)
	_, err = cl.Prune(ctx, repo.PruneOptions{OlderThan: -time.Hour})
	require.ErrorIs(t, err, hs.ErrInvalid)

	// Backup copies the store; an existing target is refused.
	bk := filepath.Join(t.TempDir(), "backup.db")
	require.NoError(t, cl.Backup(ctx, bk))
	require.ErrorIs(t, cl.Backup(ctx, bk), hs.ErrConflict)
	b2, err := hs.Open(ctx, hs.Config{Path: bk, ReadOnly: true})
	require.NoError(t, err)
	c, err := b2.Listing().Count(ctx, repo.CountOptions{IncludeArchived: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, c)
	require.NoError(t, b2.Close())
	st2, err := os.Stat(bk)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st2.Mode().Perm())

	// VACUUM only when a quarter of the file is free, unless forced.
	v, err := cl.Vacuum(ctx, false)
	require.NoError(t, err)
	require.False(t, v.Ran)
	big := make([]repo.MessageInput, 300)
	for i := range big {
		big[i] = repo.MessageInput{Role: "user", Content: models.Text(string(bytes.Repeat([]byte("x"), 4000)))}
	}
	_, err = ss.Create(ctx, repo.SessionInput{ID: "big", Source: "cli"})
	require.NoError(t, err)
	_, err = ms.AppendBatch(ctx, "big", big)
	require.NoError(t, err)
	_, err = cl.Delete(ctx, "big")
	require.NoError(t, err)
	v, err = cl.Vacuum(ctx, false)
	require.NoError(t, err)
	require.True(t, v.Ran, "free ratio %.2f", v.FreeRatio)
	last, ok, err := st.Meta().Float(ctx, "last_vacuum")
	require.NoError(t, err)
	require.True(t, ok)
	require.InDelta(t, float64(time.Now().Unix()), last, 60)
	after, err := cl.Vacuum(ctx, false)
	require.NoError(t, err)
	require.False(t, after.Ran)
	require.Less(t, after.PageCount, v.PageCount)
}

// TestImportSessionIsAtomic: a session is imported in one transaction. A
// bad message in the middle of a large session (past the first multi-row
// INSERT) leaves nothing of that session; the sessions before it stay; the
// corrected file, imported again, completes the store; a third import adds
// nothing.
func TestImportSessionIsAtomic(t *testing.T) {
	ctx := context.Background()
	src, _ := hermesstatetest.FreshPath(t)
	mk := func(id string, n int) {
		_, err := src.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
		require.NoError(t, err)
		batch := make([]repo.MessageInput, n)
		for i := range batch {
			c := fmt.Sprintf("%s message %d", id, i)
			batch[i] = repo.MessageInput{Role: []string{"user", "assistant"}[i%2], Content: &c}
		}
		_, err = src.Messages().AppendBatch(ctx, id, batch)
		require.NoError(t, err)
	}
	mk("a-first", 3)
	mk("b-large", 1200)
	mk("c-last", 2)
	// Export in a fixed order: a, b, c.
	good := append(append(exportLines(t, src, repo.ExportFilter{}, "a-first"),
		exportLines(t, src, repo.ExportFilter{}, "b-large")...),
		exportLines(t, src, repo.ExportFilter{}, "c-last")...)

	for _, tc := range []struct{ name, from, to string }{
		// Caught while writing the second INSERT of b's messages.
		{"empty role", `"content":"b-large message 700"`, `"role":"","content":"b-large message 700"`},
		// Caught while decoding (before any write).
		{"not JSON", `"b-large message 900"`, `"b-large message 900`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := bytes.Replace(good, []byte(tc.from), []byte(tc.to), 1)
			require.NotEqual(t, good, broken)
			dst, dstPath := hermesstatetest.FreshPath(t)
			res, err := dst.Portability().Import(ctx, bytes.NewReader(broken), nil)
			require.ErrorIs(t, err, hs.ErrInvalid)
			require.Regexp(t, `line 2( \(session b-large\))?: `, err.Error())
			// The refused session leaves nothing; the others are imported.
			require.EqualValues(t, 2, res.Sessions)
			require.EqualValues(t, 5, res.Messages)
			db := fixturetest.Raw(t, dstPath)
			require.Zero(t, fixturetest.Count(t, db, "SELECT COUNT(*) FROM sessions WHERE id = 'b-large'"))
			require.Zero(t, fixturetest.Count(t, db, "SELECT COUNT(*) FROM messages WHERE session_id = 'b-large'"))
			require.Equal(t, 5, fixturetest.Count(t, db, "SELECT COUNT(*) FROM messages"))
			noOrphans(t, dstPath)

			res, err = dst.Portability().Import(ctx, bytes.NewReader(good), nil)
			require.NoError(t, err)
			require.Equal(t, repo.ImportResult{Sessions: 1, Skipped: 2, Messages: 1200}, res)
			require.Equal(t, string(exportLines(t, src, repo.ExportFilter{})), string(exportLines(t, dst, repo.ExportFilter{})))
			require.Equal(t, 1205, fixturetest.Count(t, db, "SELECT COUNT(*) FROM messages"))

			res, err = dst.Portability().Import(ctx, bytes.NewReader(good), nil)
			require.NoError(t, err)
			require.Equal(t, repo.ImportResult{Skipped: 3}, res)
			require.Equal(t, 1205, fixturetest.Count(t, db, "SELECT COUNT(*) FROM messages"))
			noOrphans(t, dstPath)
		})
	}
}

package repo_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestLoneAppendWritesWhatGORMWrites: a lone Append on SQLite takes the
// spelled-out path (repo/appendone.go), AppendBatch goes through GORM's
// create callbacks. The same messages through both give the same rows,
// column by column (stored text of every JSON column included), and the
// same session counters; the refusals are the same errors.
func TestLoneAppendWritesWhatGORMWrites(t *testing.T) {
	ctx := context.Background()
	st, path := hermesstatetest.FreshPath(t)
	for _, id := range []string{"lone", "batch"} {
		_, err := st.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli"})
		require.NoError(t, err)
	}
	n := int64(7)
	text := "hé\x00llo 检查"
	msgs := []repo.MessageInput{
		{Role: "user", Content: models.Text("plain"), Timestamp: 1767604501.5},
		{Role: "user", Parts: []any{map[string]any{"type": "text", "text": "part"}}, Timestamp: 1767604502},
		{Role: "assistant", ToolCalls: models.MustJSON([]models.ToolCall{{ID: "1", Type: "function", Function: models.ToolCallFunction{Name: "x", Arguments: `{"q": "检查"}`}}, {ID: "2", Type: "function", Function: models.ToolCallFunction{Name: "y", Arguments: "{}"}}}),
			FinishReason: models.Text("tool_calls"), TokenCount: &n, Reasoning: models.Text("think"), ReasoningContent: models.Text("rc"),
			ReasoningDetails: models.JSONText(`[{"type":"summary","text":"a"}]`), CodexReasoning: models.JSONText("not json"),
			CodexMessageItems: models.JSONText(`{"b": 1, "a": [1,2]}`), Timestamp: 1767604503},
		{Role: "tool", ToolName: "terminal", ToolCallID: "1", Content: models.Text(text), ToolCalls: models.MustJSON([]any{"ignored for counting"}), EffectDisposition: "ok"},
		{Role: "assistant", Content: models.Text(""), Observed: true, CompressedSummary: true, PlatformMessageID: "p-1", APIContent: models.Text("api"),
			DisplayKind: "note", DisplayMetadata: models.MustJSON(map[string]any{"z": 1, "a": "é"}), Timestamp: 1e300},
		{Role: "assistant", ToolCalls: models.JSON(`not json at all`)},
	}
	for _, m := range msgs {
		_, err := st.Messages().Append(ctx, "lone", m)
		require.NoError(t, err)
	}
	_, err := st.Messages().AppendBatch(ctx, "batch", msgs)
	require.NoError(t, err)

	db := fixturetest.Raw(t, path)
	lone, batch := rawMessages(t, db, "lone"), rawMessages(t, db, "batch")
	require.Len(t, lone, len(msgs))
	require.Equal(t, batch, lone)
	var lc, lt, bc, bt int64
	require.NoError(t, db.QueryRow("SELECT message_count, tool_call_count FROM sessions WHERE id = 'lone'").Scan(&lc, &lt))
	require.NoError(t, db.QueryRow("SELECT message_count, tool_call_count FROM sessions WHERE id = 'batch'").Scan(&bc, &bt))
	require.Equal(t, []int64{bc, bt}, []int64{lc, lt})
	require.EqualValues(t, len(msgs), lc)
	require.EqualValues(t, 2, lt)

	// Refusals: a missing session, and one ended by compression.
	_, err = st.Messages().Append(ctx, "nope", msgs[0])
	require.ErrorIs(t, err, hs.ErrNotFound)
	_, err = st.Sessions().End(ctx, "lone", "compression")
	require.NoError(t, err)
	_, err = st.Messages().Append(ctx, "lone", msgs[0])
	require.ErrorIs(t, err, hs.ErrConflict)
	require.Len(t, rawMessages(t, db, "lone"), len(msgs), "a refused append writes nothing")
	require.NoError(t, db.QueryRow("SELECT message_count FROM sessions WHERE id = 'lone'").Scan(&lc))
	require.EqualValues(t, len(msgs), lc)
}

// rawMessages returns every column but id and session_id of a session's
// rows, in id order, as text (timestamps: whether they are sane).
func rawMessages(t *testing.T, db *sql.DB, sid string) [][]string {
	t.Helper()
	rows, err := db.Query("SELECT * FROM messages WHERE session_id = ? ORDER BY id", sid)
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		require.NoError(t, rows.Scan(ptrs...))
		var row []string
		for i, c := range cols {
			switch c {
			case "id", "session_id", "display_order": // display_order follows the id
				continue
			case "timestamp":
				row = append(row, fmt.Sprint(models.Epoch(vals[i].(float64)).Sane()))
				continue
			case "display_identity": // a hash of the timestamp too: set or not
				row = append(row, fmt.Sprintf("display_identity set: %v", vals[i] != nil))
				continue
			}
			row = append(row, fmt.Sprintf("%s=%T:%v", c, vals[i], vals[i]))
		}
		out = append(out, row)
	}
	require.NoError(t, rows.Err())
	return out
}

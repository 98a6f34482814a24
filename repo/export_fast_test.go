package repo

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// referenceJSON is the encoding the export used before the fast path:
// json.Encoder with SetEscapeHTML(false) on the message.
func referenceJSON(t testing.TB, m *models.Message) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(m))
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// TestExportFastPathMatchesGORM: rows with awkward values (NULLs, empty
// and non-JSON text in JSON columns, BLOBs, integer timestamps, multimodal
// content, control characters, HTML characters, U+2028, invalid UTF-8, an
// unknown extra column) scan and encode to exactly the bytes of GORM's
// ScanRows + encoding/json.
func TestExportFastPathMatchesGORM(t *testing.T) {
	db, err := gorm.Open(sqlitex.EnvDialector(filepath.Join(t.TempDir(), "x.db")), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.AutoMigrate(&models.Message{}))
	require.NoError(t, db.Exec("ALTER TABLE messages ADD COLUMN extra_col TEXT").Error)
	ins := func(cols string, vals ...any) {
		q := "INSERT INTO messages (session_id, role, timestamp, " + cols + ") VALUES ('s', 'user', 1760000000.25" + stringsRepeat(", ?", len(vals)) + ")"
		require.NoError(t, db.Exec(q, vals...).Error, cols)
	}
	ins("content", nil)
	ins("content, extra_col", "plain <b>&amp;</b> \"q\" \\ \n\t\r\b\f \x01 \x1f \u2028 \u2029 é 检查 😀", "x")
	ins("content", "\x00json:[{\"type\": \"text\", \"text\": \"<hi>\"}, {\"b\": 1.50, \"a\": [1e400]}]")
	ins("content", "\x00json:not json")
	ins("content", []byte("bad \xff\xfe utf8"))
	ins("tool_calls, display_metadata", `[{"id": "1", "type": "function", "function": {"name": "x", "arguments": "{\"q\": \"<检查>\"}"}}]`, `{"k": "v & w", "n": 1.0}`)
	ins("tool_calls, display_metadata", "", "not json")
	ins("tool_calls, display_metadata", []byte(""), []byte("[]"))
	ins("tool_calls", []byte(`{"a":   1}`))
	ins("reasoning_details, codex_reasoning_items, codex_message_items", "", `[{"x": "<y>"}]`, "plain text")
	ins("reasoning_details, codex_message_items", []byte(""), []byte(`{"z": 1}`))
	ins("token_count, observed, _compressed_summary, active, compacted, finish_reason, reasoning, reasoning_content, platform_message_id, api_content, display_kind, tool_name, tool_call_id, effect_disposition",
		42, 1, 1, 0, 1, "stop", "r", "rc", "p1", "api", "kind", "tool", "tc1", "eff")
	ins("observed", nil)
	ins("display_identity, display_order", []byte{0, 1, 2, 0xff}, 77)
	ins("display_identity", "text identity")
	require.NoError(t, db.Exec("UPDATE messages SET timestamp = 1760000001 WHERE id = 3").Error)
	require.NoError(t, db.Exec("UPDATE messages SET timestamp = 1e-7 WHERE id = 4").Error)
	require.NoError(t, db.Exec("UPDATE messages SET timestamp = 1e22 WHERE id = 5").Error)

	rows, err := db.Raw("SELECT * FROM messages ORDER BY id").Rows()
	require.NoError(t, err)
	var want [][]byte
	for rows.Next() {
		var m models.Message
		require.NoError(t, db.ScanRows(rows, &m))
		want = append(want, referenceJSON(t, &m))
	}
	require.NoError(t, rows.Close())

	rows, err = db.Raw("SELECT * FROM messages ORDER BY id").Rows()
	require.NoError(t, err)
	defer rows.Close()
	cols, err := rows.Columns()
	require.NoError(t, err)
	sc := newMsgScanner(cols)
	var m models.Message
	i := 0
	for rows.Next() {
		require.NoError(t, sc.scan(rows, &m))
		got, err := appendMessageJSON(nil, &m)
		require.NoError(t, err)
		require.Equal(t, string(want[i]), string(got), "row %d", i+1)
		i++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, len(want), i)

	// The replay / List / export reads (listActive) give every field GORM
	// gives, the display columns included.
	var all []models.Message
	require.NoError(t, db.Where("session_id = 's' AND active = 1").Order("id").Find(&all).Error)
	got, err := listActive(db, "test", "s")
	require.NoError(t, err)
	require.Equal(t, all, got)
	require.NotNil(t, got[len(got)-2].DisplayOrder)
	require.Equal(t, []byte{0, 1, 2, 0xff}, got[len(got)-2].DisplayIdentity)
}

func stringsRepeat(s string, n int) string {
	var b bytes.Buffer
	for range n {
		b.WriteString(s)
	}
	return b.String()
}

// FuzzAppendMessageJSON: the hand-rolled encoder writes the bytes
// encoding/json writes, for any text in the string and JSON fields.
func FuzzAppendMessageJSON(f *testing.F) {
	f.Add("hello", "<a&b>", `{"x": [1, 2.5, "\u2028"]}`, "\x00json:[1]", 1760000000.5)
	f.Add("\xff", "\u2029\x7f", "nope", "\x00json:{", 0.0)
	f.Add("", "", "", "", -1e-9)
	f.Fuzz(func(t *testing.T, a, b, j, content string, ts float64) {
		m := &models.Message{ID: 7, SessionID: a, Role: b, Content: &content, ToolName: &a,
			Timestamp: models.Epoch(ts), ToolCalls: mustJSONCol(j), DisplayMetadata: mustJSONCol(a),
			ReasoningDetails: textCol(j), CompressedSummary: int64(len(b) % 2)}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		werr := enc.Encode(m)
		got, err := appendMessageJSON(nil, m)
		if werr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), string(got))
	})
}

func mustJSONCol(s string) models.JSON {
	j, err := pyJSONCol(s)
	if err != nil {
		panic(err)
	}
	return j
}

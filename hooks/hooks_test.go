package hooks_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/hooks"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

func openDB(t *testing.T) *gorm.DB {
	t.Helper()
	db, err := gorm.Open(sqlitex.EnvDialector(filepath.Join(t.TempDir(), "h.db")+"?_pragma=foreign_keys(1)"), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.Exec(`CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL,
		message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0)`).Error)
	require.NoError(t, db.Exec(`CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id),
		role TEXT NOT NULL, content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT, effect_disposition TEXT,
		timestamp REAL NOT NULL, token_count INTEGER, finish_reason TEXT, reasoning TEXT, reasoning_content TEXT,
		reasoning_details TEXT, codex_reasoning_items TEXT, codex_message_items TEXT, platform_message_id TEXT,
		observed INTEGER DEFAULT 0, _compressed_summary INTEGER NOT NULL DEFAULT 0, active INTEGER NOT NULL DEFAULT 1,
		compacted INTEGER NOT NULL DEFAULT 0, api_content TEXT, display_kind TEXT, display_metadata TEXT,
		display_identity BLOB, display_order INTEGER)`).Error)
	require.NoError(t, hooks.Register(db))
	return db
}

func counters(t *testing.T, db *gorm.DB, id string) (int64, int64) {
	var s models.Session
	require.NoError(t, db.Select("id, message_count, tool_call_count").Where("id = ?", id).Take(&s).Error)
	return s.MessageCount, s.ToolCallCount
}

func TestCountersMoveWithInsertsInTheSameTransaction(t *testing.T) {
	db := openDB(t)
	require.NoError(t, db.Exec(`INSERT INTO sessions (id, source, started_at) VALUES ('a', 'cli', 1), ('b', 'cli', 1)`).Error)
	two := models.MustJSON([]map[string]any{{"id": "1"}, {"id": "2"}})
	batch := []*models.Message{
		{SessionID: "a", Role: "user", Content: models.Text("x")},
		{SessionID: "a", Role: "assistant", ToolCalls: two},
		{SessionID: "b", Role: "tool", ToolCalls: two, ToolName: models.Text("t")}, // tool rows add no tool calls
		{SessionID: "b", Role: "assistant", ToolCalls: models.JSON(`{"id": "x"}`)}, // a non-list value counts 1
	}
	require.NoError(t, db.Create(batch).Error)
	m, c := counters(t, db, "a")
	require.Equal(t, [2]int64{2, 2}, [2]int64{m, c})
	m, c = counters(t, db, "b")
	require.Equal(t, [2]int64{2, 1}, [2]int64{m, c})
	for _, row := range batch {
		require.True(t, row.Timestamp.Sane(), "timestamp normalised to now")
		require.EqualValues(t, 1, row.Active)
	}

	// A message for a missing session rolls the whole transaction back.
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&models.Message{SessionID: "a", Role: "user", Content: models.Text("kept?")}).Error; err != nil {
			return err
		}
		return tx.Create(&models.Message{SessionID: "missing", Role: "user"}).Error
	})
	require.Error(t, err)
	var n int64
	require.NoError(t, db.Model(&models.Message{}).Count(&n).Error)
	require.EqualValues(t, 4, n)
	m, _ = counters(t, db, "a")
	require.EqualValues(t, 2, m)
}

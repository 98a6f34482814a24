package doctor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
)

// seedDB returns the bytes of a small SQLite file with an FTS5 table.
func seedDB(f *testing.F) []byte {
	p := filepath.Join(f.TempDir(), "seed.db")
	db, err := sqlitex.OpenEnv(p)
	if err != nil {
		f.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT NOT NULL, started_at REAL NOT NULL, message_count INTEGER DEFAULT 0, tool_call_count INTEGER DEFAULT 0)",
		"CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL REFERENCES sessions(id), role TEXT NOT NULL, content TEXT, tool_calls TEXT, tool_name TEXT, timestamp REAL NOT NULL)",
		"CREATE VIRTUAL TABLE messages_fts USING fts5(content)",
		"INSERT INTO sessions VALUES ('s', 'cli', 1, 1, 0)",
		"INSERT INTO messages (session_id, role, content, timestamp) VALUES ('s', 'user', 'hello zebra', 1)",
		"INSERT INTO messages_fts(rowid, content) VALUES (1, 'hello zebra')",
	} {
		if _, err := db.Exec(q); err != nil {
			f.Fatal(err)
		}
	}
	db.Close()
	b, err := os.ReadFile(p)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzCheckFile: doctor on arbitrary file contents (and on a real file with
// one fuzzed page) never panics and never fails: damage is a finding. An
// empty file holds no store and is refused as such.
func FuzzCheckFile(f *testing.F) {
	good := seedDB(f)
	f.Add([]byte{}, uint16(0))
	f.Add([]byte("SQLite format 3\x00"), uint16(0))
	f.Add(good[:100], uint16(0))
	f.Add(good, uint16(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(1))
	f.Add(make([]byte, 512), uint16(2))
	f.Fuzz(func(t *testing.T, data []byte, page uint16) {
		content := data
		if page > 0 && len(good) >= 4096 {
			// Splice the fuzz bytes into one page of the good file.
			content = append([]byte{}, good...)
			off := int(page%uint16(len(good)/4096)) * 4096
			copy(content[off:], data)
		}
		p := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Check(context.Background(), Options{Path: p})
		if len(content) == 0 {
			// An empty file is no store (issue 11, item 13), not damage.
			if !errors.Is(err, errs.ErrNoStore) {
				t.Fatalf("an empty file: %v, want no store", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("doctor failed instead of reporting: %v", err)
		}
		if len(content) > 0 && string(content) != string(good) && r.OK() && len(r.Findings) == 0 {
			t.Fatalf("no findings at all")
		}
	})
}

// FuzzParseFTS: the FTS5 DDL parser never panics.
func FuzzParseFTS(f *testing.F) {
	for _, s := range []string{
		"CREATE VIRTUAL TABLE messages_fts USING fts5(content, content=messages, content_rowid=id)",
		"CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, tokenize='trigram')",
		"CREATE VIRTUAL TABLE x USING fts5(a, 'b,c', columnsize=0)",
		"CREATE VIRTUAL TABLE x USING fts5(",
		"", "((((", "CREATE TABLE t(x)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if tb, ok := parseFTS(s); ok {
			_ = tb.shadows()
			_ = detectLayout(map[string]ftsTable{tb.Name: tb})
		}
	})
}

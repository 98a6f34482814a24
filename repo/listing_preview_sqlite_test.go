package repo

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

type previewCheck struct {
	t  testing.TB
	db *gorm.DB
	d  *DB
	n  int
}

func newPreviewCheck(t testing.TB) *previewCheck {
	db, err := gorm.Open(sqlitex.EnvDialector(filepath.Join(t.TempDir(), "p.db")), &gorm.Config{Logger: logger.Discard})
	require.NoError(t, err)
	require.NoError(t, db.AutoMigrate(&models.Session{}, &models.Message{}))
	return &previewCheck{t: t, db: db, d: &DB{W: db, R: db, Dialect: SQLite}}
}

// check stores one session with the given user messages (content,
// display_kind) and asserts that the Go-function preview and the plain-SQL
// preview agree.
func (c *previewCheck) check(msgs ...[2]any) {
	c.n++
	id := "s" + strings.Repeat("x", c.n%7) + string(rune('a'+c.n%26)) + strings.Repeat("9", c.n/26)
	require.NoError(c.t, c.db.Exec("INSERT INTO sessions (id, source, started_at) VALUES (?, 'cli', 1760000000)", id).Error)
	for i, m := range msgs {
		require.NoError(c.t, c.db.Exec("INSERT INTO messages (session_id, role, content, display_kind, timestamp) VALUES (?, 'user', ?, ?, ?)",
			id, m[0], m[1], 1760000000+i).Error)
	}
	var got, want []byte
	require.NoError(c.t, c.db.Raw("SELECT CAST("+c.d.previewSQL("s")+" AS BLOB) FROM sessions s WHERE s.id = ?", id).Row().Scan(&got))
	require.NoError(c.t, c.db.Raw("SELECT CAST("+c.d.previewSQLPlain("s")+" AS BLOB) FROM sessions s WHERE s.id = ?", id).Row().Scan(&want))
	require.Equal(c.t, string(want), string(got), "%q", msgs)
}

// TestPreviewFuncMatchesSQL: the Go preview function gives the plain SQL
// preview's result on compaction summaries (standalone, merged, with and
// without a remainder), whitespace, newlines, long and multibyte text,
// invalid UTF-8, hidden rows and a first row that is not eligible.
func TestPreviewFuncMatchesSQL(t *testing.T) {
	c := newPreviewCheck(t)
	long := strings.Repeat("é检", 40)
	for _, content := range []string{
		"", "hello", "  \t\nhello\r\nworld  ", long, strings.Repeat("a", 62) + "é", strings.Repeat("b", 70),
		summaryLongFormPrefix + "summary text " + summaryEndMarker + "\n  the real question",
		summaryLongFormPrefix + "summary text " + summaryEndMarker + " \n\t ",
		"  " + summaryLegacyPrefix + " no end marker",
		summaryLegacyPrefix + summaryEndMarker + "x",
		"prior words\n" + mergedSummaryDelimiter + "\n" + summaryLongFormPrefix + "s",
		mergedPriorHeader + "\n  kept prior " + mergedSummaryDelimiter + summaryLegacyPrefix,
		mergedPriorHeader + "  \n" + mergedSummaryDelimiter + summaryLegacyPrefix,
		mergedSummaryDelimiter + summaryLegacyPrefix,
		"x" + mergedSummaryDelimiter + "not a summary",
		summaryLegacyPrefix + " both " + mergedSummaryDelimiter + summaryLegacyPrefix + " tail",
		summaryLegacyPrefix + "é" + mergedSummaryDelimiter + summaryLegacyPrefix,
		"bad \xff\xfe utf8 " + strings.Repeat("z", 60), "\xc3\x80\x80\x80" + strings.Repeat("y", 70), "\x80\x80" + long,
		"\x80\x80abc", "a\x80\x80" + mergedSummaryDelimiter + summaryLegacyPrefix, "\xff\x80" + summaryLegacyPrefix + summaryEndMarker + "q",
		"\xe6" + mergedSummaryDelimiter + summaryLegacyPrefix, "\x00json:[{\"type\": \"text\", \"text\": \"hi\"}]",
	} {
		c.check([2]any{content, nil})
		c.check([2]any{content, "hidden"}, [2]any{content + " second", "text"})
	}
	// The first user row is not eligible: the second one is the preview.
	c.check([2]any{summaryLegacyPrefix + " only", nil}, [2]any{"the question", nil})
	c.check([2]any{"shown", "hidden"}, [2]any{nil, nil}, [2]any{"next", nil})
	c.check([2]any{[]byte("blob content"), nil})
}

// FuzzPreviewFunc: for any text around the markers, the Go function and
// the plain SQL agree.
func FuzzPreviewFunc(f *testing.F) {
	f.Add("a", "b", "c", uint8(0))
	f.Add(" ", "\n", "é", uint8(7))
	f.Add("\xc3", "\x80", "\xff", uint8(255))
	c := newPreviewCheck(f)
	markers := []string{"", summaryLongFormPrefix, summaryLegacyPrefix, summaryEndMarker, mergedSummaryDelimiter, mergedPriorHeader}
	f.Fuzz(func(t *testing.T, a, b, x string, pick uint8) {
		c.t = t
		content := markers[int(pick)%len(markers)] + a + markers[int(pick/6)%len(markers)] + b + markers[int(pick/36)%len(markers)] + x
		c.check([2]any{content, nil})
	})
}

package repo_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/internal/fixturetest"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// fileSize is the size of a closed store's file (its WAL checkpointed).
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return fi.Size()
}

// TestImportInsertsInAscendingIDOrder (issue 23 §3): an export lists the
// newest session first; imported in that order every session's rows go
// before the ones already stored, pages split half-full and a re-imported
// full export grew the file by a third (63 -> 87 MB). Imported in
// ascending message id order, the new file is no larger than the original.
func TestImportInsertsInAscendingIDOrder(t *testing.T) {
	ctx := context.Background()
	src, srcPath := hermesstatetest.FreshPath(t)
	for s := 0; s < 240; s++ {
		id := fmt.Sprintf("2026%04d_sess", s)
		_, err := src.Sessions().Create(ctx, repo.SessionInput{ID: id, Source: "cli", StartedAt: models.Epoch(1767225600 + float64(s)*60)})
		require.NoError(t, err)
		batch := make([]repo.MessageInput, 20)
		for i := range batch {
			c := fmt.Sprintf("session %d message %d: %s", s, i, strings.Repeat("lorem ipsum dolor sit amet ", 12))
			batch[i] = repo.MessageInput{Role: []string{"user", "assistant"}[i%2], Content: &c, Timestamp: models.Epoch(1767225600 + float64(s)*60 + float64(i))}
		}
		_, err = src.Messages().AppendBatch(ctx, id, batch)
		require.NoError(t, err)
	}
	export := exportLines(t, src, repo.ExportFilter{})
	require.NoError(t, src.Close())

	dst, dstPath := hermesstatetest.FreshPath(t)
	res, err := dst.Portability().Import(ctx, bytes.NewReader(export), nil)
	require.NoError(t, err)
	require.EqualValues(t, 240, res.Sessions)
	require.Equal(t, string(export), string(exportLines(t, dst, repo.ExportFilter{})), "the same data, ids included")
	require.NoError(t, dst.Close())
	before, after := fileSize(t, srcPath), fileSize(t, dstPath)
	t.Logf("original %d bytes, re-imported %d bytes (%.2fx)", before, after, float64(after)/float64(before))
	require.LessOrEqual(t, float64(after), 1.05*float64(before), "the re-imported file is not larger than the original")
}

// TestImportErrorsNameTheLine (issue 23 §3): a refused session is named by
// its line in the file (blank lines counted), not by a count of JSON
// values.
func TestImportErrorsNameTheLine(t *testing.T) {
	ctx := context.Background()
	st := hermesstatetest.Fresh(t)
	in := "\n" + `{"id": "a", "source": "cli", "messages": []}` + "\n\n   \n" +
		`{"id": "b", "source": "cli", "messages": [{"role": "", "content": "x"}]}` + "\n"
	for _, r := range []func() *bytes.Reader{func() *bytes.Reader { return bytes.NewReader([]byte(in)) }} {
		_, err := st.Portability().Import(ctx, r(), nil)
		require.ErrorIs(t, err, hs.ErrInvalid)
		require.Contains(t, err.Error(), "line 5")
	}
	// The same through a reader that cannot seek (stdin).
	st2 := hermesstatetest.Fresh(t)
	_, err := st2.Portability().Import(ctx, strings.NewReader(in+"{nope\n"), nil)
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.Contains(t, err.Error(), "line 5")
	require.Contains(t, err.Error(), "line 6")
}

// TestImportRefusedLinesDoNotStopTheOthers (issue 23 §3): every good
// session of the file is imported; the refused lines are named with their
// reason, and importing the corrected file completes it.
func TestImportRefusedLinesDoNotStopTheOthers(t *testing.T) {
	ctx := context.Background()
	lines := []string{
		`{"id": "good1", "source": "cli", "messages": [{"id": 10, "role": "user", "content": "one"}]}`,
		`{"id": "badrole", "source": "cli", "messages": [{"id": 11, "role": "", "content": "x"}]}`,
		`{"id": "notjson", "source": "cli", "messages": [{"id": 12, "role": "user", "content": "x}]}`,
		`{"id": "good2", "source": "cli", "messages": [{"id": 13, "role": "user", "content": "two"}]}`,
		`{"id": "badflag", "source": "cli", "messages": [{"id": 14, "role": "user", "content": "x", "active": 2}]}`,
	}
	for _, seekable := range []bool{true, false} {
		t.Run(fmt.Sprint("seekable=", seekable), func(t *testing.T) {
			st, path := hermesstatetest.FreshPath(t)
			in := strings.Join(lines, "\n") + "\n"
			var r interface{ Read([]byte) (int, error) } = strings.NewReader(in)
			if !seekable {
				r = struct{ *strings.Reader }{strings.NewReader(in)}
			}
			res, err := st.Portability().Import(ctx, r, nil)
			require.ErrorIs(t, err, hs.ErrInvalid)
			for _, l := range []string{"line 2", "line 3", "line 5"} {
				require.Contains(t, err.Error(), l)
			}
			require.NotContains(t, err.Error(), "\n", "one line")
			require.EqualValues(t, 2, res.Sessions)
			require.Len(t, res.Refused, 3)
			require.EqualValues(t, []int64{2, 3, 5}, []int64{res.Refused[0].Line, res.Refused[1].Line, res.Refused[2].Line})
			db := fixturetest.Raw(t, path)
			require.Equal(t, 2, fixturetest.Count(t, db, "SELECT COUNT(*) FROM sessions WHERE id IN ('good1', 'good2')"))
			require.Zero(t, fixturetest.Count(t, db, "SELECT COUNT(*) FROM sessions WHERE id NOT IN ('good1', 'good2')"))
			require.Zero(t, fixturetest.Count(t, db, "SELECT COUNT(*) FROM messages WHERE session_id NOT IN ('good1', 'good2')"))

			fixed := strings.NewReplacer(`"role": ""`, `"role": "user"`, `"x}]}`, `"x"}]}`, `"active": 2`, `"active": 0`).Replace(in)
			res, err = st.Portability().Import(ctx, strings.NewReader(fixed), nil)
			require.NoError(t, err)
			require.EqualValues(t, 3, res.Sessions)
			require.EqualValues(t, 2, res.Skipped)
		})
	}
}

// TestImportRefusesFlagsTheAPIRefuses (issue 20 §5): the API stores 0 or 1
// in a message's flags and a JSON object as display_metadata; an import of
// anything else is refused with the line and the column, and nothing of
// that session is stored (it used to be stored as it was).
func TestImportRefusesFlagsTheAPIRefuses(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ field, msg string }{
		{"active", `"active": 2`},
		{"active", `"active": -1`},
		{"observed", `"observed": 7`},
		{"compacted", `"compacted": 3`},
		{"_compressed_summary", `"_compressed_summary": 2`},
		{"display_metadata", `"display_metadata": [1, 2]`},
		{"role", `"role": "us\u0001er"`},
	} {
		st := hermesstatetest.Fresh(t)
		in := `{"id": "ok", "source": "cli", "messages": [{"role": "user", "content": "fine"}]}` + "\n" +
			`{"id": "s", "source": "cli", "messages": [{"role": "user", "content": "hello", ` + c.msg + `}]}` + "\n"
		if c.field == "role" {
			in = strings.Replace(in, `"role": "user", "content": "hello", `, `"content": "hello", `, 1)
		}
		res, err := st.Portability().Import(ctx, strings.NewReader(in), nil)
		require.ErrorIs(t, err, hs.ErrInvalid, c.msg)
		require.Contains(t, err.Error(), "line 2", c.msg)
		require.Contains(t, err.Error(), c.field, c.msg)
		require.EqualValues(t, 1, res.Sessions, c.msg)
		_, err = st.Sessions().Get(ctx, "s")
		require.ErrorIs(t, err, hs.ErrNotFound, c.msg)
	}
}

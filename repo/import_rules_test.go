package repo_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/hermesstatetest"
	"github.com/hermesstate/hermesstate/repo"
)

// TestImportAppliesAPIRules (issue 11, item 12): an import stores what
// the API would store. A timestamp far outside any sane range becomes now
// (Append's and Create's rule, counted in Adjusted), a title the titles
// API refuses refuses the session with the line and the reason, and the
// counters come from the imported rows, not from the file.
func TestImportAppliesAPIRules(t *testing.T) {
	ctx := context.Background()
	st, _ := hermesstatetest.FreshPath(t)
	before := float64(time.Now().Unix())
	in := `{"id": "s1", "source": "cli", "started_at": 1e300, "ended_at": -5, "message_count": 999999, "tool_call_count": 77, "title": "  Kept   title  ", "messages": [` +
		`{"role": "user", "content": "hi", "timestamp": 1e300},` +
		`{"role": "assistant", "content": null, "timestamp": 1700000000.5, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "x", "arguments": "{}"}}, {"id": "b", "type": "function", "function": {"name": "y", "arguments": "{}"}}]},` +
		`{"role": "tool", "content": "ok", "timestamp": 1700000001, "tool_call_id": "a"}]}` + "\n"
	res, err := st.Portability().Import(ctx, strings.NewReader(in), nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Sessions)
	require.EqualValues(t, 4, res.Adjusted, "started_at, ended_at, the title and one message timestamp")

	s, err := st.Sessions().Get(ctx, "s1")
	require.NoError(t, err)
	require.EqualValues(t, 3, s.MessageCount, "message_count is counted, not taken from the file")
	require.EqualValues(t, 2, s.ToolCallCount, "tool_call_count is counted, not taken from the file")
	require.GreaterOrEqual(t, float64(s.StartedAt), before)
	require.True(t, s.StartedAt.Sane())
	require.NotNil(t, s.EndedAt)
	require.True(t, s.EndedAt.Sane())
	require.Equal(t, "Kept title", *s.Title, "the title is sanitized as Titles.Set does")
	ms, err := st.Messages().List(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, ms, 3)
	require.True(t, ms[0].Timestamp.Sane())
	require.GreaterOrEqual(t, float64(ms[0].Timestamp), before)
	require.Equal(t, 1700000000.5, float64(ms[1].Timestamp), "a sane timestamp is kept as it was")

	long := strings.Repeat("t", 1000)
	bad := `{"id": "ok1", "source": "cli", "messages": []}` + "\n" +
		fmt.Sprintf(`{"id": "s2", "source": "cli", "title": %q, "messages": [{"role": "user", "content": "x"}]}`, long) + "\n"
	res, err = st.Portability().Import(ctx, strings.NewReader(bad), nil)
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.Contains(t, err.Error(), "line 2")
	require.Contains(t, err.Error(), "title too long")
	require.EqualValues(t, 1, res.Sessions, "the session before the bad one is stored")
	_, err = st.Sessions().Get(ctx, "s2")
	require.ErrorIs(t, err, hs.ErrNotFound, "nothing of the refused session is stored")
}

// TestImportLineCap (issue 11, item 11): a line longer than the import
// limit is refused with its line number and the limit, before it is read
// whole, and what came before it stays stored.
func TestImportLineCap(t *testing.T) {
	ctx := context.Background()
	require.EqualValues(t, 256<<20, repo.MaxImportLineBytes)
	defer repo.SetImportLineCap(1 << 20)()
	st, _ := hermesstatetest.FreshPath(t)
	var b bytes.Buffer
	b.WriteString(`{"id": "first", "source": "cli", "messages": [{"role": "user", "content": "a"}]}` + "\n")
	b.WriteString(`{"id": "huge", "source": "cli", "messages": [{"role": "user", "content": "`)
	r := &endless{head: b.Bytes(), fill: 'x'}
	res, err := st.Portability().Import(ctx, r, nil)
	require.ErrorIs(t, err, hs.ErrInvalid)
	require.Contains(t, err.Error(), "line 2 is longer than 1 MiB, the import limit")
	require.EqualValues(t, 1, res.Sessions)
	require.LessOrEqual(t, r.served, int64(1<<20)+int64(b.Len())+1, "the reader was not read past the limit")
	_, err = st.Sessions().Get(ctx, "first")
	require.NoError(t, err)
	_, err = st.Sessions().Get(ctx, "huge")
	require.ErrorIs(t, err, hs.ErrNotFound)
}

// endless serves head, then fill bytes for ever, and counts what it served.
type endless struct {
	head   []byte
	fill   byte
	served int64
}

func (e *endless) Read(p []byte) (int, error) {
	n := 0
	if len(e.head) > 0 {
		n = copy(p, e.head)
		e.head = e.head[n:]
	}
	for i := n; i < len(p); i++ {
		p[i] = e.fill
	}
	e.served += int64(len(p))
	return len(p), nil
}

package hermesstate_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	hs "github.com/hermesstate/hermesstate"
	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// TestReaderNeverSeesPartialTurn: while the writer commits 4-message turns
// with AppendBatch, readers through the store's reader pool and through an
// independent connection (as another process would) keep reading; they
// must only ever see whole turns, in order, with message_count matching
// the rows, and they must not be blocked by the writer.
func TestReaderNeverSeesPartialTurn(t *testing.T) {
	ctx := context.Background()
	st := concOpen(t, hs.Config{})
	sess, err := st.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	const turns, size = 300, 4
	turn := func(i int) []repo.MessageInput {
		calls := models.MustJSON([]models.ToolCall{{ID: fmt.Sprintf("call_%d", i), Type: "function",
			Function: models.ToolCallFunction{Name: "terminal", Arguments: `{"command": "ls"}`}}})
		return []repo.MessageInput{
			{Role: "user", Content: models.Text(fmt.Sprintf("turn %d: list the files", i))},
			{Role: "assistant", ToolCalls: calls},
			{Role: "tool", ToolCallID: fmt.Sprintf("call_%d", i), ToolName: "terminal", Content: models.Text("a b c")},
			{Role: "assistant", Content: models.Text(fmt.Sprintf("turn %d: done", i))},
		}
	}
	raw := concRaw(t, st.Path())

	var done atomic.Bool
	var reads atomic.Int64
	var maxRead atomic.Int64
	seenCounts := sync.Map{}
	errs := make(chan error, 8)
	check := func(cond bool, format string, args ...any) bool {
		if !cond {
			select {
			case errs <- fmt.Errorf(format, args...):
			default:
			}
		}
		return cond
	}
	var wg sync.WaitGroup
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() {
				t0 := time.Now()
				list, err := st.Messages().List(ctx, sess.ID)
				if d := time.Since(t0).Nanoseconds(); d > maxRead.Load() {
					maxRead.Store(d)
				}
				if !check(err == nil, "list: %v", err) {
					return
				}
				reads.Add(1)
				seenCounts.Store(len(list), true)
				if !check(len(list)%size == 0, "partial turn visible: %d messages", len(list)) {
					return
				}
				for i, m := range list {
					want := []string{"user", "assistant", "tool", "assistant"}[i%size]
					if !check(m.Role == want, "message %d is %s, want %s", i, m.Role, want) {
						return
					}
				}
				if n := len(list); n > 0 {
					if !check(*list[n-1].Content == fmt.Sprintf("turn %d: done", n/size-1), "last message %q", *list[n-1].Content) {
						return
					}
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			var mc, rows, calls int64
			err := raw.QueryRowContext(ctx, `SELECT message_count, tool_call_count, (SELECT count(*) FROM messages WHERE session_id = s.id) FROM sessions s WHERE id = ?`, sess.ID).Scan(&mc, &calls, &rows)
			if !check(err == nil, "raw read: %v", err) {
				return
			}
			reads.Add(1)
			check(mc == rows && rows%size == 0 && calls == rows/size, "independent reader saw message_count %d, rows %d, tool calls %d", mc, rows, calls)
		}
	}()

	for i := 0; i < turns; i++ {
		_, err := st.Messages().AppendBatch(ctx, sess.ID, turn(i))
		require.NoError(t, err)
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	distinct := 0
	seenCounts.Range(func(_, _ any) bool { distinct++; return true })
	t.Logf("%d reads, %d distinct lengths seen, slowest store read %s", reads.Load(), distinct, time.Duration(maxRead.Load()))
	require.Greater(t, reads.Load(), int64(20), "the readers ran while the writer committed")
	require.Greater(t, distinct, 3, "the readers saw the session grow")
	got, err := st.Sessions().Get(ctx, sess.ID)
	require.NoError(t, err)
	require.EqualValues(t, turns*size, got.MessageCount)
	require.EqualValues(t, turns, got.ToolCallCount)
}

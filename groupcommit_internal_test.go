package hermesstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hermesstate/hermesstate/models"
	"github.com/hermesstate/hermesstate/repo"
)

// holdWriteLock takes the file's write lock on an independent connection
// (BEGIN IMMEDIATE, as another process would) and returns the function that
// releases it.
func holdWriteLock(t *testing.T, s *Store) func() {
	t.Helper()
	raw := rawConn(t, s.Path(), 5*time.Second)
	conn, err := raw.Conn(context.Background())
	require.NoError(t, err)
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	require.NoError(t, err)
	var once sync.Once
	release := func() {
		once.Do(func() {
			_, err := conn.ExecContext(context.Background(), "ROLLBACK")
			require.NoError(t, err)
			conn.Close()
		})
	}
	t.Cleanup(release)
	return release
}

type ack struct {
	sid, content string
	id           int64
}

// checkAcked asserts that every acknowledged message is stored exactly once
// with its content, that nothing else is stored, and that message_count
// equals the row count of every session.
func checkAcked(t *testing.T, s *Store, acks []ack, sids []string) {
	t.Helper()
	ctx := context.Background()
	want := map[string]map[int64]string{}
	for _, a := range acks {
		if want[a.sid] == nil {
			want[a.sid] = map[int64]string{}
		}
		_, dup := want[a.sid][a.id]
		require.False(t, dup, "id %d acknowledged twice", a.id)
		want[a.sid][a.id] = a.content
	}
	total := 0
	for _, sid := range sids {
		rows, err := s.Messages().List(ctx, sid)
		require.NoError(t, err)
		got := map[int64]string{}
		for _, m := range rows {
			_, dup := got[m.ID]
			require.False(t, dup)
			got[m.ID] = *m.Content
		}
		require.Equal(t, want[sid], mapOrEmpty(got), "session %s", sid)
		sess, err := s.Sessions().Get(ctx, sid)
		require.NoError(t, err)
		require.EqualValues(t, len(rows), sess.MessageCount, "message_count of %s", sid)
		total += len(rows)
	}
	n, err := s.Messages().Count(ctx, "")
	require.NoError(t, err)
	require.EqualValues(t, total, n, "rows outside the checked sessions")
}

func mapOrEmpty(m map[int64]string) map[int64]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// TestAppendGroupCommitConcurrent: 16 goroutines × 60 Append calls over five
// good sessions, a missing one and one ended by compression. Every good
// call is acknowledged and stored exactly once with its content, ids are in
// call order within each goroutine's calls to a session, counters are
// exact, only the calls to the bad sessions fail (with ErrNotFound and
// ErrConflict), and the calls were committed in fewer transactions than
// calls (group commit happened).
func TestAppendGroupCommitConcurrent(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	var good []string
	for i := 0; i < 5; i++ {
		sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
		require.NoError(t, err)
		good = append(good, sess.ID)
	}
	ended, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	_, err = s.Sessions().End(ctx, ended.ID, "compression")
	require.NoError(t, err)
	const missing = "no-such-session"
	targets := append(append([]string{}, good...), missing, ended.ID)

	const workers, calls = 16, 60
	writesBefore := s.db.Writes()
	var mu sync.Mutex
	var acks []ack
	errs := map[string][]error{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			last := map[string]int64{}
			for i := 0; i < calls; i++ {
				sid := targets[(w+i)%len(targets)]
				content := fmt.Sprintf("w%d-i%d", w, i)
				m := repo.MessageInput{Role: "user", Content: models.Text(content)}
				if i%5 == 0 {
					m = repo.MessageInput{Role: "assistant", Content: models.Text(content), ToolCalls: models.MustJSON([]models.ToolCall{
						{ID: "c" + content, Type: "function", Function: models.ToolCallFunction{Name: "terminal", Arguments: "{}"}}})}
				}
				id, err := s.Messages().Append(ctx, sid, m)
				mu.Lock()
				if err != nil {
					errs[sid] = append(errs[sid], err)
				} else {
					acks = append(acks, ack{sid, content, id})
					if id <= last[sid] {
						t.Errorf("worker %d: id %d after %d in session %s", w, id, last[sid], sid)
					}
					last[sid] = id
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()

	calls2 := map[string]int{}
	for w := 0; w < workers; w++ {
		for i := 0; i < calls; i++ {
			calls2[targets[(w+i)%len(targets)]]++
		}
	}
	for _, sid := range good {
		require.Empty(t, errs[sid], "no error for a good session")
	}
	require.Len(t, errs[missing], calls2[missing])
	for _, e := range errs[missing] {
		require.ErrorIs(t, e, ErrNotFound)
	}
	require.Len(t, errs[ended.ID], calls2[ended.ID])
	for _, e := range errs[ended.ID] {
		require.ErrorIs(t, e, ErrConflict)
	}
	require.Equal(t, workers*calls, len(acks)+len(errs[missing])+len(errs[ended.ID]))
	checkAcked(t, s, acks, append(good, ended.ID))

	// tool_call_count: one per assistant call with a tool call.
	wantTools := map[string]int64{}
	for _, a := range acks {
		var w, i int
		_, err := fmt.Sscanf(a.content, "w%d-i%d", &w, &i)
		require.NoError(t, err)
		if i%5 == 0 {
			wantTools[a.sid]++
		}
	}
	for _, sid := range good {
		sess, err := s.Sessions().Get(ctx, sid)
		require.NoError(t, err)
		require.EqualValues(t, wantTools[sid], sess.ToolCallCount, "tool_call_count of %s", sid)
	}
	txs := s.db.Writes() - writesBefore
	t.Logf("%d acknowledged appends in %d transactions", len(acks), txs)
	require.Less(t, txs, int64(len(acks)), "concurrent appends were grouped")
}

// TestAppendGroupCancelledCaller: while another connection holds the write
// lock, several calls queue up; one caller's context is cancelled and one
// caller's deadline passes. Those two return their context's error at once,
// the others are committed when the lock is released, and the two messages
// are not in the file.
func TestAppendGroupCancelledCaller(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	release := holdWriteLock(t, s)

	type result struct {
		content string
		id      int64
		err     error
	}
	results := make(chan result, 8)
	call := func(cctx context.Context, content string) {
		id, err := s.Messages().Append(cctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text(content)})
		results <- result{content, id, err}
	}
	cctx, cancel := context.WithCancel(ctx)
	dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer dcancel()
	for i := 0; i < 3; i++ {
		go call(ctx, fmt.Sprintf("kept %d", i))
	}
	go call(cctx, "cancelled")
	go call(dctx, "deadline")
	time.Sleep(150 * time.Millisecond)
	cancel()
	got := map[string]result{}
	for len(got) < 2 {
		select {
		case r := <-results:
			got[r.content] = r
		case <-time.After(3 * time.Second):
			t.Fatalf("withdrawn callers did not return while the lock was held (got %v)", got)
		}
	}
	require.ErrorIs(t, got["cancelled"].err, context.Canceled)
	require.ErrorIs(t, got["deadline"].err, context.DeadlineExceeded)
	release()
	var acks []ack
	for i := 0; i < 3; i++ {
		r := <-results
		require.NoError(t, r.err, r.content)
		acks = append(acks, ack{sess.ID, r.content, r.id})
	}
	checkAcked(t, s, acks, []string{sess.ID})
}

// TestAppendGroupErrorStaysWithItsCall: a trigger refuses one content. The
// calls queued together with it (behind a held write lock, so they form
// one group) are all committed; only the refused call fails, with the
// refusal's error and no SQL text.
func TestAppendGroupErrorStaysWithItsCall(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	other, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	require.NoError(t, s.db.W.Exec(`CREATE TRIGGER test_poison BEFORE INSERT ON messages
		WHEN NEW.content = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned'); END`).Error)
	writesBefore := s.db.Writes()
	release := holdWriteLock(t, s)
	type result struct {
		ack
		err error
	}
	results := make(chan result, 16)
	for i := 0; i < 9; i++ {
		sid, content := sess.ID, fmt.Sprintf("ok %d", i)
		if i%2 == 1 {
			sid = other.ID
		}
		if i == 4 {
			content = "poison"
		}
		go func() {
			id, err := s.Messages().Append(ctx, sid, repo.MessageInput{Role: "user", Content: models.Text(content)})
			results <- result{ack{sid, content, id}, err}
		}()
	}
	time.Sleep(150 * time.Millisecond)
	release()
	var acks []ack
	for i := 0; i < 9; i++ {
		r := <-results
		if r.content == "poison" {
			require.Error(t, r.err)
			require.ErrorIs(t, r.err, ErrConflict)
			require.NotContains(t, r.err.Error(), "RAISE")
			continue
		}
		require.NoError(t, r.err, r.content)
		acks = append(acks, r.ack)
	}
	checkAcked(t, s, acks, []string{sess.ID, other.ID})
	t.Logf("9 calls, %d transactions", s.db.Writes()-writesBefore)
}

// TestCloseDrainsPendingAppends: calls queued behind a held write lock when
// Close starts are committed (Close waits for them) or fail with
// ErrClosed; every acknowledged one is in the file after reopening, and a
// call after Close fails with ErrClosed.
func TestCloseDrainsPendingAppends(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Config{})
	sess, err := s.Sessions().Create(ctx, repo.SessionInput{Source: "cli"})
	require.NoError(t, err)
	release := holdWriteLock(t, s)
	type result struct {
		ack
		err error
	}
	results := make(chan result, 32)
	for i := 0; i < 20; i++ {
		content := fmt.Sprintf("m %d", i)
		go func() {
			id, err := s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text(content)})
			results <- result{ack{sess.ID, content, id}, err}
		}()
	}
	time.Sleep(150 * time.Millisecond)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	time.Sleep(200 * time.Millisecond)
	release()
	require.NoError(t, <-closed)
	var acks []ack
	for i := 0; i < 20; i++ {
		r := <-results
		if r.err != nil {
			require.ErrorIs(t, r.err, ErrClosed, r.content)
			continue
		}
		acks = append(acks, r.ack)
	}
	require.NotEmpty(t, acks, "the group in flight when Close began was committed")
	_, err = s.Messages().Append(ctx, sess.ID, repo.MessageInput{Role: "user", Content: models.Text("late")})
	require.True(t, errors.Is(err, ErrClosed), "%v", err)

	s2 := openTest(t, Config{Path: s.Path()})
	checkAcked(t, s2, acks, []string{sess.ID})
}

package repo

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/hermesstate/hermesstate/internal/errs"
	"github.com/hermesstate/hermesstate/internal/sqlitex"
	"github.com/hermesstate/hermesstate/models"
)

// Group commit of Messages.Append.
//
// With one message per transaction the store is bound by the per-commit
// cost (BEGIN IMMEDIATE, every statement parsed again by the pure-Go
// driver, one FTS5 segment flushed per COMMIT, the WAL append): about 700
// commits/s on the reference machine whatever the message. When several
// goroutines of one process append at the same time, the calls that queued
// up while the writer was busy are committed together in one transaction:
// one SELECT over their sessions, one multi-row INSERT (rows in call
// order, so ids are in call order within every session), one counter
// UPDATE per session. Every caller gets its id only after that COMMIT
// returned.
//
// There is no timer: a lone caller finds the queue empty and is committed
// at once, alone, in its own goroutine (lead). A group is what is queued
// when the writer becomes free, at most maxGroup calls.
//
// Failures stay with the call they belong to. A missing session
// (ErrNotFound) or one ended by compression (ErrConflict) is found by the
// group's SELECT inside the transaction and fails only the calls to that
// session; the others are committed. Any other error of the group
// transaction that is not a lock error, the end of every caller's context,
// a closed store or a damaged file (errors that are the same for every
// call) makes every call run again alone, so an error caused by one row
// reaches only its caller. Lock errors are retried for the whole group
// within the transcript budget by DB.Write. A caller whose context ends
// before its row went into an attempt is removed from the group and gets
// the context's error; once its row is in the transaction being committed
// the caller waits for that outcome (it is short: the write lock is held).

// maxGroup bounds the calls committed in one group transaction (one INSERT
// binds at most 25 values per row: far below SQLite's variable limit).
const maxGroup = 256

// Call states.
const (
	callQueued    int32 = iota // waiting; the caller may still withdraw it
	callInTx                   // its row is in the transaction being committed
	callWithdrawn              // the caller's context ended first
)

type appendCall struct {
	ctx   context.Context
	op    string
	sid   string
	row   *models.Message
	state atomic.Int32
	id    int64
	err   error
	done  chan struct{}
}

func (c *appendCall) finish(id int64, err error) {
	c.id, c.err = id, err
	close(c.done)
}

// committer is the queue of pending Append calls of one messageRepo.
type committer struct {
	r       *messageRepo
	mu      sync.Mutex
	queue   []*appendCall
	running bool
	closed  bool
	wg      sync.WaitGroup
}

// drain stops new calls (they fail with ErrClosed) and waits until the
// group in flight, if any, has been committed or failed and every queued
// call has been answered.
func (g *committer) drain() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.wg.Wait()
}

// submit queues c. It reports lead when the committer was idle: the
// caller then commits the group itself (lead), with no hand-off to another
// goroutine; otherwise the goroutine already committing takes c.
func (g *committer) submit(c *appendCall) (lead bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false, errs.Errorf(errs.ErrClosed, c.op, "the store is closed")
	}
	g.queue = append(g.queue, c)
	if !g.running {
		g.running = true
		g.wg.Add(1)
		return true, nil
	}
	return false, nil
}

// lead commits, in the goroutine of the caller that found the committer
// idle, the group its call heads (its call, and any queued since). The
// calls queued while that group was committed are left to a committing
// goroutine, so the caller returns as soon as its own COMMIT did. A lone
// caller thus pays no goroutine start or wake-up (measured: BENCHMARKS.md,
// "The lone append commits in its caller").
func (g *committer) lead() {
	if g.step() && g.pending() {
		go g.run() // takes over the running flag and the WaitGroup count
		return
	}
	g.wg.Done()
}

// pending reports whether calls are queued; when none are, it clears the
// running flag under the same lock, so the next call leads.
func (g *committer) pending() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.running = false
		return false
	}
	return true
}

// run commits groups until the queue is empty.
func (g *committer) run() {
	defer g.wg.Done()
	for g.step() {
		// Let the callers just answered queue their next call before the
		// next group is taken (no timer: a lone caller never waits).
		runtime.Gosched()
	}
}

// step commits the next group of queued calls. With nothing queued it
// clears the running flag and returns false.
func (g *committer) step() bool {
	g.mu.Lock()
	var batch []*appendCall
	n := 0
	for n < len(g.queue) && len(batch) < maxGroup {
		c := g.queue[n]
		n++
		if c.state.Load() == callWithdrawn {
			continue
		}
		batch = append(batch, c)
	}
	clear(g.queue[:n])
	g.queue = g.queue[n:]
	if len(g.queue) == 0 {
		g.queue = nil
	}
	if len(batch) == 0 {
		g.running = false
		g.mu.Unlock()
		return false
	}
	g.mu.Unlock()
	g.commit(batch)
	return true
}

// errAllWithdrawn ends a group transaction none of whose calls is wanted
// any more.
var errAllWithdrawn = errors.New("every call of the group was withdrawn")

// commit writes batch in one transaction and answers every call.
func (g *committer) commit(batch []*appendCall) {
	// The transaction's context ends when every caller's context has ended
	// (with one caller: when its context ends, as before group commit).
	gctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var live atomic.Int64
	live.Store(int64(len(batch)))
	stops := make([]func() bool, 0, len(batch))
	for _, c := range batch {
		stops = append(stops, context.AfterFunc(c.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()

	op := batch[0].op
	var refused map[*appendCall]error
	err := g.r.db.Write(gctx, sqlitex.Transcript, op, func(tx *gorm.DB) error {
		var err error
		refused, err = g.r.insertGroup(tx, op, batch)
		return err
	})
	switch {
	case err == nil:
		for _, c := range batch {
			if e, ok := refused[c]; ok {
				c.finish(0, e)
			} else if c.state.Load() == callInTx {
				c.finish(c.row.ID, nil)
			} else {
				c.finish(0, c.ctx.Err())
			}
		}
		return
	case errors.Is(err, errAllWithdrawn), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		for _, c := range batch {
			if cerr := c.ctx.Err(); cerr != nil {
				c.finish(0, cerr)
			} else {
				c.finish(0, err)
			}
		}
		return
	case len(batch) == 1, errors.Is(err, errs.ErrBusy), errors.Is(err, errs.ErrClosed), errors.Is(err, errs.ErrCorrupt):
		// The same answer for every call.
		for _, c := range batch {
			c.finish(0, err)
		}
		return
	}
	// Something in the group failed the transaction: commit every call
	// alone, so the error reaches only the call that causes it.
	for _, c := range batch {
		if !c.state.CompareAndSwap(callQueued, callInTx) && c.state.Load() != callInTx {
			c.finish(0, c.ctx.Err()) // withdrawn
			continue
		}
		if cerr := c.ctx.Err(); cerr != nil {
			c.finish(0, cerr)
			continue
		}
		ids, err := g.r.writeRows(c.ctx, c.op, c.sid, []*models.Message{c.row}, nil)
		if err != nil {
			c.finish(0, err)
		} else {
			c.finish(ids[0], nil)
		}
	}
}

// insertGroup is one attempt of a group transaction: it takes every call
// not withdrawn into the attempt, checks their sessions with one SELECT,
// refuses the calls to a missing or compression-ended session, and inserts
// the other rows with one multi-row INSERT in call order. It returns the
// refused calls with their errors; the inserted ones are those left in
// state callInTx and not refused.
func (r *messageRepo) insertGroup(tx *gorm.DB, op string, batch []*appendCall) (map[*appendCall]error, error) {
	var taken []*appendCall
	for _, c := range batch {
		// A call may be callInTx already from an attempt whose COMMIT
		// failed; it stays in.
		if c.ctx.Err() != nil {
			// Its caller is leaving (or left): it is answered with the
			// context's error.
			c.state.CompareAndSwap(callQueued, callWithdrawn)
		}
		if c.state.CompareAndSwap(callQueued, callInTx) || c.state.Load() == callInTx {
			taken = append(taken, c)
		}
	}
	ok := false
	defer func() {
		if !ok {
			// The attempt failed: the callers may withdraw again while
			// the retry waits.
			for _, c := range taken {
				c.state.CompareAndSwap(callInTx, callQueued)
			}
		}
	}()
	if len(taken) == 0 {
		return nil, errAllWithdrawn
	}
	if len(taken) == 1 && r.db.Dialect == SQLite {
		c := taken[0]
		if err := r.appendOne(tx, op, c.row); err != nil {
			if !refusal(err) {
				return nil, err
			}
			ok = true
			return map[*appendCall]error{c: err}, nil
		}
		ok = true
		return nil, nil
	}
	var sids []string
	seen := map[string]bool{}
	for _, c := range taken {
		if !seen[c.sid] {
			seen[c.sid] = true
			sids = append(sids, c.sid)
		}
	}
	// Advisory locks (PostgreSQL) in one order, so two groups never wait
	// on each other.
	sorted := append([]string(nil), sids...)
	sort.Strings(sorted)
	for _, sid := range sorted {
		if err := lockSession(tx, sid); err != nil {
			return nil, err
		}
	}
	bad, err := checkAppendableMany(tx, op, sids)
	if err != nil {
		return nil, err
	}
	var refused map[*appendCall]error
	rows := make([]*models.Message, 0, len(taken))
	for _, c := range taken {
		if e := bad[c.sid]; e != nil {
			if refused == nil {
				refused = map[*appendCall]error{}
			}
			refused[c] = e
			continue
		}
		c.row.ID = 0
		rows = append(rows, c.row)
	}
	if len(rows) > 0 {
		if err := r.insertRows(tx, rows); err != nil {
			return nil, err
		}
	}
	ok = true
	return refused, nil
}

// checkAppendableMany is checkAppendable for several sessions with one
// SELECT: it returns the error of every session that is missing or ended
// by compression.
func checkAppendableMany(tx *gorm.DB, op string, sids []string) (map[string]error, error) {
	if len(sids) == 1 {
		if err := checkAppendable(tx, op, sids[0]); err != nil {
			var me *errs.Error
			if errors.As(err, &me) {
				return map[string]error{sids[0]: err}, nil
			}
			return nil, err
		}
		return nil, nil
	}
	var rows []struct {
		ID        string
		EndedAt   *float64
		EndReason *string
	}
	if err := tx.Model(&models.Session{}).Select("id, ended_at, end_reason").Where("id IN ?", sids).Find(&rows).Error; err != nil {
		return nil, err
	}
	found := map[string]int{}
	for i, s := range rows {
		found[s.ID] = i
	}
	var out map[string]error
	add := func(sid string, err error) {
		if out == nil {
			out = map[string]error{}
		}
		out[sid] = err
	}
	for _, sid := range sids {
		i, ok := found[sid]
		if !ok {
			add(sid, noSession(op, sid))
			continue
		}
		if s := rows[i]; s.EndReason != nil && *s.EndReason == "compression" && s.EndedAt != nil {
			add(sid, errs.Errorf(errs.ErrConflict, op, "session %q was ended by compression; append to its continuation", sid))
		}
	}
	return out, nil
}

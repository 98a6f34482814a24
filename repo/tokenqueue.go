package repo

import (
	"context"
	"sync"
	"time"

	"github.com/hermesstate/hermesstate/internal/errs"
)

// TokenQueue is Hermes' asynchronous token accounting (queue_token_counts,
// flush_token_counts): usage reports are queued in memory and applied in
// order by one background writer, which takes every report queued so far as
// a batch and merges adjacent reports of the same session and route (their
// counters and costs summed) before applying each group with
// Sessions.UpdateTokenCounts, so the rows end as applying them one by one
// would leave them. Reads are not flushed for you: call Flush before a read
// that must see every queued report (Hermes flushes before get_session,
// list_sessions_rich, ...).
type TokenQueue interface {
	// Queue enqueues a usage report. ErrInvalid for a bad session id;
	// after Close the report is applied synchronously (its error returned).
	Queue(ctx context.Context, sessionID string, u TokenUpdate) error
	// Flush waits until every report queued before it was applied; it
	// returns the context's error when ctx ends first. A report that failed
	// to apply is logged, as Hermes does, not returned.
	Flush(ctx context.Context) error
	// Close flushes (waiting at most 10 s) and stops the writer; later
	// Queue calls apply synchronously. The store's Close calls it.
	Close(ctx context.Context) error
}

// tokenWriterIdle retires an idle writer (Hermes' _TOKEN_WRITER_IDLE_SECONDS).
const tokenWriterIdle = 30 * time.Second

type tokenItem struct {
	sid     string
	u       TokenUpdate
	barrier chan struct{}
}

type tokenQueue struct {
	sessions Sessions
	db       *DB

	mu      sync.Mutex
	queue   []tokenItem
	wake    chan struct{}
	running bool
	closed  bool
}

// NewTokenQueue returns the token queue of db (one per store: the store
// hands out the same one).
func NewTokenQueue(db *DB) TokenQueue {
	return &tokenQueue{sessions: NewSessions(db), db: db, wake: make(chan struct{}, 1)}
}

func (q *tokenQueue) Queue(ctx context.Context, sid string, u TokenUpdate) error {
	const op = "token_queue.queue"
	if err := checkID(op, sid); err != nil {
		return err
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return q.sessions.UpdateTokenCounts(ctx, sid, u)
	}
	q.queue = append(q.queue, tokenItem{sid: sid, u: u})
	q.startLocked()
	q.mu.Unlock()
	return nil
}

// startLocked starts the writer when none runs and wakes it.
func (q *tokenQueue) startLocked() {
	if !q.running {
		q.running = true
		go q.writer()
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *tokenQueue) Flush(ctx context.Context) error {
	q.mu.Lock()
	if len(q.queue) == 0 && !q.running {
		q.mu.Unlock()
		return nil
	}
	b := make(chan struct{})
	q.queue = append(q.queue, tokenItem{barrier: b})
	q.startLocked()
	q.mu.Unlock()
	select {
	case <-b:
		return nil
	case <-ctx.Done():
		return errs.Wrap(ctx.Err(), "token_queue.flush", ctx.Err(), "stopped waiting for queued token counts")
	}
}

func (q *tokenQueue) Close(ctx context.Context) error {
	q.mu.Lock()
	already := q.closed
	q.mu.Unlock()
	if already {
		return nil
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := q.Flush(c)
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	return err
}

// writer applies the queue batch by batch until it has been idle for
// tokenWriterIdle.
func (q *tokenQueue) writer() {
	idle := time.NewTimer(tokenWriterIdle)
	defer idle.Stop()
	for {
		q.mu.Lock()
		batch := q.queue
		q.queue = nil
		if len(batch) == 0 {
			q.mu.Unlock()
			select {
			case <-q.wake:
				idle.Reset(tokenWriterIdle) // Go >= 1.23: no stale tick survives a Reset
				continue
			case <-idle.C:
				q.mu.Lock()
				if len(q.queue) == 0 {
					q.running = false
					q.mu.Unlock()
					return
				}
				q.mu.Unlock()
				idle.Reset(tokenWriterIdle)
				continue
			}
		}
		q.mu.Unlock()
		q.apply(batch)
	}
}

// apply merges and applies one batch in order, releasing each barrier once
// everything before it was applied.
func (q *tokenQueue) apply(batch []tokenItem) {
	var run []tokenItem
	flush := func() {
		for _, it := range coalesceTokens(run) {
			if err := q.sessions.UpdateTokenCounts(context.Background(), it.sid, it.u); err != nil {
				q.db.logger().Warn("hermesstate: queued token accounting failed", "session", it.sid, "err", err)
			}
		}
		run = run[:0]
	}
	for _, it := range batch {
		if it.barrier != nil {
			flush()
			close(it.barrier)
			continue
		}
		run = append(run, it)
	}
	flush()
}

// tokenRoute is the coalescing key of a delta (Hermes' session id and
// _TOKEN_DELTA_ROUTE_FIELDS).
type tokenRoute struct {
	sid, model, costStatus, costSource, pricing, provider, baseURL, mode, source, task string
}

func routeOf(it tokenItem) tokenRoute {
	u := it.u
	return tokenRoute{it.sid, u.Model, u.CostStatus, u.CostSource, u.PricingVersion, u.BillingProvider, u.BillingBaseURL, u.BillingMode, u.Source, u.Task}
}

// coalesceTokens merges adjacent non-absolute deltas with the same route:
// counters summed, costs summed where given (all-nil stays nil), so the
// merged update equals applying them in order (Hermes'
// _coalesce_token_deltas).
func coalesceTokens(items []tokenItem) []tokenItem {
	var out []tokenItem
	for _, it := range items {
		if n := len(out); n > 0 && !it.u.Absolute && !out[n-1].u.Absolute && routeOf(out[n-1]) == routeOf(it) {
			m := &out[n-1].u
			m.InputTokens += it.u.InputTokens
			m.OutputTokens += it.u.OutputTokens
			m.CacheReadTokens += it.u.CacheReadTokens
			m.CacheWriteTokens += it.u.CacheWriteTokens
			m.ReasoningTokens += it.u.ReasoningTokens
			m.APICallCount += it.u.APICallCount
			m.EstimatedCostUSD = addCost(m.EstimatedCostUSD, it.u.EstimatedCostUSD)
			m.ActualCostUSD = addCost(m.ActualCostUSD, it.u.ActualCostUSD)
			continue
		}
		c := it
		if c.u.EstimatedCostUSD != nil {
			v := *c.u.EstimatedCostUSD
			c.u.EstimatedCostUSD = &v
		}
		if c.u.ActualCostUSD != nil {
			v := *c.u.ActualCostUSD
			c.u.ActualCostUSD = &v
		}
		out = append(out, c)
	}
	return out
}

func addCost(a, b *float64) *float64 {
	if b == nil {
		return a
	}
	v := *b
	if a != nil {
		v += *a
	}
	return &v
}

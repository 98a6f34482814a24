package sqlitex

import (
	"context"
	"math/rand/v2"
	"time"
)

// Kind names a class of write with its own retry budget (behaviour.md,
// "Write contention").
type Kind int

// Write kinds.
const (
	// Routine writes (metadata, titles, usage): 20 s budget.
	Routine Kind = iota
	// Transcript writes (message appends, session creation): 60 s budget.
	Transcript
	// Activity writes (observation-only heartbeats): 0.5 s budget.
	Activity
)

// Budget returns the total time a write of kind k may spend retrying lock
// errors before the caller gets ErrBusy.
func (k Kind) Budget() time.Duration {
	switch k {
	case Transcript:
		return 60 * time.Second
	case Activity:
		return 500 * time.Millisecond
	default:
		return 20 * time.Second
	}
}

func (k Kind) String() string {
	switch k {
	case Transcript:
		return "transcript"
	case Activity:
		return "activity"
	default:
		return "routine"
	}
}

// Backoff returns the pause before the next attempt, given how long the
// write has been retrying: 1–20 ms during the first 250 ms, 20–150 ms until
// 2 s, 250 ms–1 s after.
//
// The short first phase is for fairness between processes. SQLite's lock
// wait is polling (its busy handler sleeps 1, 2, 5, 10, ... 100 ms between
// tries; this build has no blocking locks), and a process that writes in a
// loop takes the lock again within microseconds of releasing it, so a
// waiter only gets in if it happens to try inside that gap. Hermes' 20–150 ms
// pauses, during which a waiter does not try at all, gave 1–2 s stalls
// under a 4-process load; trying again within 1–20 ms, while a write is
// still young, gives many more chances to hit a gap. Waiters that have
// waited longer back off as Hermes does, so a lock held for real (a long
// migration, a VACUUM) does not draw a storm of attempts.
func Backoff(elapsed time.Duration) time.Duration {
	switch {
	case elapsed < 250*time.Millisecond:
		return time.Millisecond + rand.N(19*time.Millisecond)
	case elapsed < 2*time.Second:
		return 20*time.Millisecond + rand.N(130*time.Millisecond)
	}
	return 250*time.Millisecond + rand.N(750*time.Millisecond)
}

// RetryResult describes how a retried operation went.
type RetryResult struct {
	Attempts int
	Waited   time.Duration
}

// Retry runs fn until it returns nil or an error that is not a lock error,
// sleeping Backoff between attempts, for at most budget. On exhaustion it
// returns the last lock error; ctx cancellation returns ctx.Err().
func Retry(ctx context.Context, budget time.Duration, fn func() error) (RetryResult, error) {
	return RetryIf(ctx, budget, IsLock, fn)
}

// RetryIf is Retry with another notion of a transient error: it retries fn
// while retryable(err) holds (PostgreSQL serialization failures and
// deadlocks, for instance), with the same backoff and budget.
func RetryIf(ctx context.Context, budget time.Duration, retryable func(error) bool, fn func() error) (RetryResult, error) {
	start := time.Now()
	var res RetryResult
	for {
		res.Attempts++
		err := fn()
		res.Waited = time.Since(start)
		if err == nil || !retryable(err) {
			return res, err
		}
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		pause := Backoff(res.Waited)
		if res.Waited+pause > budget {
			// Spend the rest of the budget on one last attempt rather
			// than giving up early.
			pause = budget - res.Waited
			if pause <= 0 {
				return res, err
			}
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		case <-t.C:
		}
	}
}
